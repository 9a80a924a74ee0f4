"""Where training and decoding run, and in which precision."""

import time

import torch

from seq2seq.errors import Seq2SeqError


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise Seq2SeqError("--device cuda was asked for, but PyTorch sees no CUDA device")
    if name not in ("cpu", "cuda"):
        raise Seq2SeqError(f"unknown device {name!r}; use auto, cpu or cuda")
    return torch.device(name)


MIN_BF16_SPEEDUP = 1.2  # bf16 must be this much faster than fp32 to be worth its rounding
GEMM = (256, 256, 4096)  # rows x D -> V: a batch through an output projection, a step's largest GEMM
_speedups: dict[str, float] = {}  # measured once per process


def use_bf16(device: torch.device, wanted: bool) -> bool:
    """bf16 autocast only where it is a speed-up: on CUDA, or on a CPU where a bf16 GEMM was
    measured faster than fp32."""
    return wanted and bf16_speedup(device) >= MIN_BF16_SPEEDUP


def bf16_speedup(device: torch.device) -> float:
    """How much faster a bf16 GEMM runs than fp32 here (0: no native bf16; CUDA counts as fast).
    A CPU is timed, once per process, in about 0.1 s: the flag that says it has native bf16 is
    true on AVX512-BF16 CPUs without AMX too, where bf16 can run slower than fp32 (figures:
    docs/performance.md)."""
    if device.type == "cuda":
        return float("inf")
    if "cpu" not in _speedups:
        _speedups["cpu"] = _measure_cpu() if _native_bf16() else 0.0
    return _speedups["cpu"]


def agree_on_bf16(speedup: float) -> None:
    """Take another process's measurement (torchrun: rank 0's), so every rank decides alike."""
    _speedups["cpu"] = speedup


def precision_note(device: torch.device, wanted: bool) -> str:
    """What the start line says about precision, and why."""
    if not wanted:
        return "fp32"
    speedup = bf16_speedup(device)
    if device.type == "cuda":
        return "bf16 autocast"
    if speedup == 0.0:
        return "fp32: this CPU has no native bf16"
    verdict = "bf16 autocast" if speedup >= MIN_BF16_SPEEDUP else "fp32"
    return f"{verdict}: a bf16 GEMM runs at {speedup:.1f}x fp32 on this CPU"


def _native_bf16() -> bool:
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


@torch.inference_mode()
def _measure_cpu() -> float:
    """fp32 time over bf16 time of the GEMM (`speedup`)."""
    rows, d, v = GEMM
    generator = torch.Generator().manual_seed(0)
    x, w = torch.randn(rows, d, generator=generator), torch.randn(v, d, generator=generator)

    xb, wb = x.bfloat16(), w.bfloat16()
    return speedup(lambda: torch.nn.functional.linear(x, w), lambda: torch.nn.functional.linear(xb, wb), 3)


def speedup(baseline, candidate, rounds: int = 7) -> float:
    """How many times faster `candidate` runs than `baseline`: each warmed up once, then timed in
    turn (A B A B ...) and the shortest call of each kept. The figure least disturbed by whatever
    else the machine is doing, which is what a choice made at start-up needs: a disturbance that
    lasts several calls slows both sides, not one side's every call."""
    baseline(), candidate()
    best = [float("inf"), float("inf")]
    for _ in range(rounds):
        for k, run in enumerate((baseline, candidate)):
            start = time.perf_counter()
            run()
            best[k] = min(best[k], time.perf_counter() - start)
    return best[0] / best[1]


def autocast(device: torch.device, wanted: bool) -> torch.autocast:
    """The one precision rule of training and decoding alike: fp32, unless bf16 is wanted and
    `use_bf16` says the device computes it fast."""
    return torch.autocast(device.type, torch.bfloat16, enabled=use_bf16(device, wanted))
