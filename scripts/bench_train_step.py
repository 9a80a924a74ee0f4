"""Training throughput, side by side in one process: target tokens/s of the whole training step
(forward, backward, clipping, AdamW) for the ways the step could run, on the same batches.

    python -m scripts.bench_train_step --run runs/multi30k-en-fr
    python -m scripts.bench_train_step --run runs/multi30k-en-fr --fp32 --variants eager fused
    python -m scripts.bench_train_step --run runs/multi30k-en-fr --variants fused torchloss allpositions

Variants (each its own copy of one freshly initialised model, with the run's config):
  eager     AdamW with its default update (on a CPU a loop of operator calls over the
            parameters) and the fused loss: against fused, what the fused update saves
  fused     what `seq2seq train` uses (`training.train.adamw`): one kernel per parameter group,
            and the fused loss (`training.loss`)
  torchloss the fused AdamW with PyTorch's `F.cross_entropy` (label smoothing, ignore_index) as
            the loss: against fused, what the fused loss saves
  allpositions  the fused step projecting every target position to the vocabulary, padding
            included: against fused, what projecting the real positions alone saves
  compiled  the forward and loss under torch.compile (inductor, dynamic shapes: one graph serves
            every batch shape), with the fused AdamW; its compile time is printed apart

The batches are the first ones of the run's epoch 0 (its tokenized training set, its token
budget, ordered by the sides as `seq2seq train` cuts them); every variant trains on the same ones,
the variants take turns (round-robin, one batch each, the order rotating), so a noisy neighbour
spoils all of them alike. Prints the CPU and its flags first (and the GPU with `--device cuda`).
"""

import argparse
import json
import time
from pathlib import Path
from unittest import mock

import torch
import torch.nn.functional as F

from scripts.common import cpu, finish
from seq2seq.allocator import keep_freed_memory
from seq2seq.data import tokenized
from seq2seq.data.batch import collate, token_batches
from seq2seq.data.special import PAD_ID
from seq2seq.device import autocast, use_bf16
from seq2seq.models.registry import ModelConfig, build_model, config_from_dict
from seq2seq.training import step as step_module
from seq2seq.training.distributed import World
from seq2seq.training.loss import smoothed_cross_entropy
from seq2seq.training.step import TrainStep
from seq2seq.training.train import adamw


def torch_loss(model, batch, smoothing):
    """PyTorch's `F.cross_entropy` over every position, padding ignored by index."""
    logits = model(batch.src, batch.tgt_in).float().flatten(0, 1)
    target = batch.tgt_out.flatten()
    return F.cross_entropy(logits, target, ignore_index=PAD_ID, label_smoothing=smoothing, reduction="sum")


def all_positions_loss(model, batch, smoothing):
    """The fused loss over every position, padded ones too."""
    logits = model(batch.src, batch.tgt_in).flatten(0, 1)
    return smoothed_cross_entropy(logits, batch.tgt_out.flatten(), smoothing)


class VariantStep:
    """A training step whose loss is another function: the library's step with its loss replaced
    while the step runs (the library has no hook for it)."""

    def __init__(self, step: TrainStep, loss):
        self.step, self.loss = step, loss

    def __call__(self, *args, **kwargs):
        with mock.patch.object(step_module, "summed_loss", self.loss):
            return self.step(*args, **kwargs)


def trainer(config: ModelConfig, variant: str, precision, device: torch.device) -> TrainStep:
    torch.manual_seed(0)
    model = build_model(config).to(device)
    if variant == "eager":
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9, fused=False)
    else:
        optimizer = adamw(model, lr=1e-4)
    forward = torch.compile(model, dynamic=True) if variant == "compiled" else model
    step = TrainStep(forward, optimizer, World(), precision, clip_norm=1.0, smoothing=0.1)
    loss = {"torchloss": torch_loss, "allpositions": all_positions_loss}.get(variant)
    return VariantStep(step, loss) if loss else step


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--run", required=True, help="a run directory with config.json and tokenized/")
    p.add_argument("--variants", nargs="+", default=["eager", "fused", "compiled"], help="or others")
    p.add_argument("--batches", type=int, default=30, help="timed batches per variant")
    p.add_argument("--warmup", type=int, default=5, help="untimed batches per variant first")
    p.add_argument("--fp32", action="store_true", help="no bf16 autocast, even where it is fast")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="where the steps run")
    p.add_argument("--mmap", action="store_true", help="glibc's own memory policy, not the CLI's")
    args = p.parse_args()
    if not args.mmap:
        keep_freed_memory()  # as `seq2seq train` does (seq2seq/allocator.py)
    torch.set_num_threads(args.threads)
    run = Path(args.run)
    saved = json.loads((run / "config.json").read_text())
    config = config_from_dict(saved["model"])
    max_tokens = saved["train"]["max_tokens"]
    train_set = tokenized.load(next((run / "tokenized").iterdir()))
    device = torch.device(args.device)
    batches = epoch_batches(train_set, max_tokens, config.max_positions, args)
    precision = autocast(device, not args.fp32)
    bf16 = use_bf16(device, not args.fp32)
    print(f"CPU: {cpu()}; torch {torch.__version__}; {args.threads} threads")
    if device.type == "cuda":
        print(f"GPU: {torch.cuda.get_device_name()}")
    policy = "glibc's" if args.mmap else "keep freed memory"
    print(f"precision: {'bf16 autocast' if bf16 else 'fp32'}; max_tokens {max_tokens}; memory: {policy}")

    steps = {v: trainer(config, v, precision, device) for v in args.variants}
    for variant, step in steps.items():  # the warm-up batches: compilation happens here
        tick = time.perf_counter()
        for batch in batches[: args.warmup]:
            step(batch, lr=1e-4)
        finish(device)
        warm = time.perf_counter() - tick
        print(f"{variant}: first {args.warmup} batches (warm-up, compilation) {warm:.1f} s")
    seconds = dict.fromkeys(steps, 0.0)
    timed = len(batches) - args.warmup  # a short epoch may have fewer than --batches
    tokens = sum(b.n_tokens for b in batches[args.warmup :])
    names = list(steps)
    for i in range(timed):
        # the order rotates batch by batch: on CUDA with bf16 autocast whichever variant went
        # first was measured 3x slower than itself elsewhere in the order (H100, torch 2.11)
        for variant in names[i % len(names) :] + names[: i % len(names)]:
            step = steps[variant]
            tick = time.perf_counter()
            step(batches[args.warmup + i], lr=1e-4)
            finish(device)
            seconds[variant] += time.perf_counter() - tick
    base = tokens / seconds[names[0]]
    print(f"| variant | target tokens/s | vs {names[0]} |")
    print("|---|---|---|")
    for variant, s in seconds.items():
        print(f"| {variant} | {tokens / s:,.0f} | {tokens / s / base:.2f} |")


def epoch_batches(train_set, max_tokens: int, max_positions: int, args) -> list:
    """The first batches of epoch 0 (the stored pieces, no subword draw), cut and ordered as
    `seq2seq train` cuts an epoch, on the device."""
    sides = train_set.side_lengths()
    indices = token_batches(train_set.lengths, max_tokens, seed=1, epoch=0, then_by=sides)
    return [
        collate(*train_set.rows(i), max_positions).to(torch.device(args.device))
        for i in indices[: args.warmup + args.batches]
    ]


if __name__ == "__main__":
    main()
