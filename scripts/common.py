"""What the scripts share: the machine a figure was measured on, how every decoder is timed (the
same length-sorted batches, the median of repeated runs), and CTranslate2 timed in a process of
its own.

Nothing here imports torch when the module is imported: scripts/engine_worker.py imports it, and
that process must hold the engine's OpenMP runtime alone.
"""

from __future__ import annotations

import json
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    import torch

REPO = Path(__file__).resolve().parent.parent  # the checkout; `python -m scripts.x` runs from here
FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_bf16")

T = TypeVar("T")


def cpu(cpuinfo: str | None = None) -> str:
    """What a benchmark prints beside its figures, e.g. "AMD EPYC, family 26 model 2 (avx2,
    avx512f, avx512_bf16)": bf16 math is fast only with the last two. The family and model tell
    apart machines that share a name and flags but not a speed: two 2-core "AMD EPYC" VMs with
    avx512_bf16, family 25 model 17 and family 26 model 2, trained the same recipe at about 4,000
    and 8,300 target tokens/s."""
    if cpuinfo is None:
        cpuinfo = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    fields = {}
    for line in cpuinfo.splitlines():  # the first processor's block is enough: they are alike
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    name = fields.get("model name") or platform.processor() or "unknown CPU"
    if fields.get("cpu family") and fields.get("model"):
        name += f", family {fields['cpu family']} model {fields['model']}"
    present = [f for f in FLAGS if f in fields.get("flags", "").split()]
    return f"{name} ({', '.join(present) or 'no AVX2'})"


def resident_mb(pid: int | str = "self") -> float:
    """A process' resident memory now (VmRSS), in MB."""
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024


def finish(device: torch.device) -> None:
    """Wait for the work queued on `device`: a CUDA call returns before its kernels end (a training
    step's loss.item() waits for the forward only), so a timer stopped without this times launches."""
    if device.type == "cuda":
        import torch

        torch.cuda.synchronize()


def length_sorted_batches(sources: list[list[int]], batch_size: int) -> list[list[int]]:
    """Sentence indices in batches of similar source length, as `seq2seq translate` forms them."""
    order = sorted(range(len(sources)), key=lambda i: len(sources[i]))
    return [order[s : s + batch_size] for s in range(0, len(order), batch_size)]


def median_time(run: Callable[[], T], repeats: int) -> tuple[float, T]:
    """Median seconds of `run()` over `repeats` calls (warm up before), and the last call's result."""
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def time_ctranslate2(
    model_dir: Path, compute_type: str, pieces: list[list[str]], jobs: list[dict], args
) -> list[tuple[float, list[list[str]]]]:
    """CTranslate2 on `pieces` (source pieces, no </s>: the engine adds it), in a process of its own
    (scripts/engine_worker.py), so that no PyTorch shares its cores: per job ({"beam",
    "min_decoding_length", "max_decoding_length"}) the median seconds over `args.repeats` and each
    sentence's best output as pieces, in input order. `args`: threads, batch_size, repeats."""
    request = {
        "model": str(model_dir),
        "compute_type": compute_type,
        "threads": args.threads,
        "batch_size": args.batch_size,
        "repeats": args.repeats,
        "jobs": jobs,
        "pieces": pieces,
    }
    proc = subprocess.run(
        [sys.executable, "-m", "scripts.engine_worker"],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    if proc.returncode != 0:
        raise SystemExit(f"the CTranslate2 worker failed: {proc.stderr.strip()[-2000:]}")
    answers = [json.loads(line) for line in proc.stdout.splitlines()]
    return [(a["seconds"], a["outputs"]) for a in answers]


class ServeProcess:
    """`seq2seq serve RUN ARGS` in its own process on a free 127.0.0.1 port, its stderr collected in
    `proc.log`; stopped by SIGTERM at the end. Yields (host, port, proc)."""

    def __init__(self, run: str, args: list[str]):
        self.command = [sys.executable, "-m", "seq2seq", "serve", "--run", run, "--port", "0", *args]

    def __enter__(self):
        import threading

        self.proc = subprocess.Popen(self.command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        first = self.proc.stdout.readline()
        if " at " not in first:
            sys.exit(f"the server did not start: {self.proc.stderr.read()}")
        host, port = first.split(" at ")[1].split()[0].removeprefix("http://").rsplit(":", 1)
        self.proc.log = ""
        self.reader = threading.Thread(target=self._read_log, daemon=True)
        self.reader.start()
        return host, int(port), self.proc

    def _read_log(self) -> None:
        for line in self.proc.stderr:
            self.proc.log += line

    def __exit__(self, *_) -> None:
        import signal

        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(300)
        self.reader.join(10)
