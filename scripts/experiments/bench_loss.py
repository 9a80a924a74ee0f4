"""The training loss alone, side by side: our fused label-smoothed cross-entropy (its gradient
computed in the forward pass, `seq2seq/training/loss.py`) against PyTorch's `F.cross_entropy`, the
forward and backward of one batch's (tokens, V) logits, on the CPU or on CUDA.

    python -m scripts.experiments.bench_loss                   # CPU, fp32, a 3000-token batch's logits
    python -m scripts.experiments.bench_loss --device cuda --bf16

Why it exists: `train` uses the fused loss on CPUs only, and PyTorch's on GPUs; this is the
measurement behind that rule (on CUDA the fused loss runs as on a CPU, 128 rows a block: each
block's operations are kernel launches there). The two losses take turns, 20 calls each, and the
best of 5 such rounds is printed. Prints the CPU and its flags first (and the GPU with `--device cuda`).
"""

import argparse
import time

import torch
import torch.nn.functional as F

from scripts.common import cpu, finish
from seq2seq.data.special import PAD_ID
from seq2seq.training.loss import SmoothedCrossEntropy


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--rows", type=int, default=3000, help="target tokens of the batch")
    p.add_argument("--vocab", type=int, default=8000)
    p.add_argument("--bf16", action="store_true", help="bf16 logits, as under autocast")
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    device, dtype = torch.device(args.device), torch.bfloat16 if args.bf16 else torch.float32
    print(f"CPU: {cpu()}; torch {torch.__version__}; {args.threads} threads")
    if device.type == "cuda":
        print(f"GPU: {torch.cuda.get_device_name()}")
    g = torch.Generator().manual_seed(0)
    logits = (torch.randn(args.rows, args.vocab, generator=g) * 4).to(device, dtype).requires_grad_()
    target = torch.randint(4, args.vocab, (args.rows,), generator=g).to(device)
    target[::20] = PAD_ID

    def fused() -> None:
        (SmoothedCrossEntropy.apply(logits, target, 0.1) / args.rows).backward()

    def pytorch() -> None:
        z = logits.float()
        loss = F.cross_entropy(z, target, ignore_index=PAD_ID, label_smoothing=0.1, reduction="sum")
        (loss / args.rows).backward()

    losses = {"fused (ours)": fused, "F.cross_entropy": pytorch}
    best = dict.fromkeys(losses, float("inf"))
    for _ in range(5):
        for name, run in losses.items():
            run()  # warm: allocations, kernels
            finish(device)
            tick = time.perf_counter()
            for _ in range(20):
                logits.grad = None
                run()
            finish(device)
            best[name] = min(best[name], (time.perf_counter() - tick) / 20)
    print(f"({args.rows}, {args.vocab}) {dtype} logits on {device.type}, forward + backward:")
    for name, seconds in best.items():
        print(f"  {name}: {seconds * 1e3:.2f} ms ({best['F.cross_entropy'] / seconds:.2f}x PyTorch's)")


if __name__ == "__main__":
    main()
