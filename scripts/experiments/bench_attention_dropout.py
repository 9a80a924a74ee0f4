"""Attention with dropout on a GPU when the dropout changes every step, as late dropout's ramp
changes it (TrainConfig.late_dropout): SDPA's forward and backward, and the whole training step
of the `small` Transformer, with a fixed and with a changing p, under PyTorch's own choice of
kernel and under the one training makes (`models.dropout.attention_kernels`: never cuDNN's).

    python -m scripts.experiments.bench_attention_dropout            # needs a CUDA device
    python -m scripts.experiments.bench_attention_dropout --steps 20 --slow-steps 5

cuDNN's attention builds an execution graph for each dropout probability, so under PyTorch's
choice a changing p pays that build on every call. Prints the GPU and the CPU first; every row
is timed in this one process, one after another.
"""

import argparse
import sys
import time
from contextlib import nullcontext

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend

import seq2seq.models.transformer as transformer
from scripts.common import cpu
from seq2seq.models.dropout import attention_kernels
from seq2seq.models.transformer import Transformer, TransformerConfig

CUDA = torch.device("cuda")


def chosen_kernel(ours: bool) -> str:
    """The kernel SDPA picks for the benchmark's shapes and a dropout (it varies with the torch
    and cuDNN versions: where it is not cuDNN's, the rows below show no difference)."""
    q = torch.randn(128, 4, 24, 64, device=CUDA, dtype=torch.bfloat16)
    mask = torch.ones(128, 1, 1, 24, dtype=torch.bool, device=CUDA)
    with attention_kernels(CUDA, 0.1) if ours else nullcontext():
        choice = torch._fused_sdp_choice(q, q, q, attn_mask=mask, dropout_p=0.1)
    return {b.value: name for name, b in SDPBackend.__members__.items()}.get(choice, str(choice))


def sdpa_ms(steps: int, changing: bool, ours: bool, first_p: float) -> float:
    """Mean ms of one SDPA forward and backward: (128, 4, 24, 64) bf16, a padding mask.
    Each call's p is new when `changing` (from `first_p`, so no earlier row has built its graph)."""
    torch.manual_seed(0)
    q, k, v = (
        torch.randn(128, 4, 24, 64, device=CUDA, dtype=torch.bfloat16, requires_grad=True) for _ in "qkv"
    )
    lengths = torch.randint(5, 25, (128,), device=CUDA)
    mask = (torch.arange(24, device=CUDA) < lengths[:, None])[:, None, None, :]  # (B, 1, 1, S)
    for i in range(steps + 2):
        p = first_p + (1e-6 * i if changing else 0.0)
        if i == 2:  # two warm-up calls
            torch.cuda.synchronize()
            start = time.perf_counter()
        with attention_kernels(CUDA, p) if ours else nullcontext():
            F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p).sum().backward()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / steps * 1e3


def step_ms(steps: int, changing: bool, ours: bool, first_p: float) -> float:
    """Mean ms of the `small` model's training step (bf16 autocast, batch 128 x 24 pieces), with
    training's kernels or (`ours` False) with PyTorch's choice."""
    transformer.attention_kernels = attention_kernels if ours else (lambda device, p: nullcontext())
    torch.manual_seed(0)
    model = Transformer(TransformerConfig(vocab_size=8000)).to(CUDA).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    src, tgt = torch.randint(4, 8000, (128, 24), device=CUDA), torch.randint(4, 8000, (128, 25), device=CUDA)
    src[::2, 18:] = 0  # padding, so attention has a mask
    for i in range(steps + 2):
        if i == 2:
            torch.cuda.synchronize()
            start = time.perf_counter()
        model.set_dropout(first_p + (1e-6 * i if changing else 0.0))
        with torch.autocast(CUDA.type, torch.bfloat16):
            logits = model(src, tgt[:, :-1])  # (B, T, V)
        F.cross_entropy(logits.float().flatten(0, 1), tgt[:, 1:].flatten()).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / steps * 1e3


ROWS = [(False, False), (True, False), (False, True), (True, True)]  # (p changing, training's kernels)


def label(changing: bool, ours: bool) -> str:
    kernels = "training's kernels (no cuDNN)" if ours else "PyTorch's choice"
    return f"{kernels:30s} {'changing p' if changing else 'fixed p':11s}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10, help="timed calls per row, after two warm-ups")
    parser.add_argument("--slow-steps", type=int, default=3, help="timed steps of the slow row")
    args = parser.parse_args()
    if args.steps < 1 or args.slow_steps < 1:
        sys.exit("--steps and --slow-steps must be at least 1")
    if not torch.cuda.is_available():
        sys.exit("needs a CUDA device: on a CPU attention's dropout never reaches SDPA's kernels")
    print(f"GPU: {torch.cuda.get_device_name()}, torch {torch.__version__}; CPU: {cpu()}")
    print(f"SDPA's kernel with dropout: {chosen_kernel(False)}; training's: {chosen_kernel(True)}")
    print("SDPA forward + backward, ms per call:")
    for row, (changing, ours) in enumerate(ROWS):
        print(f"  {label(changing, ours)} {sdpa_ms(args.steps, changing, ours, 0.1 + 0.01 * row):9.2f}")
    print("small Transformer training step, ms per step:")
    for row, (changing, ours) in enumerate(ROWS):
        steps = args.slow_steps if changing and not ours else args.steps  # the slow row: seconds a step
        print(f"  {label(changing, ours)} {step_ms(steps, changing, ours, 0.2 + 0.01 * row):9.2f}")


if __name__ == "__main__":
    main()
