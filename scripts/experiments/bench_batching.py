"""How the order of pairs inside a batching length changes training throughput, side by side in one
process: target tokens/s of the whole training step over one epoch's batches cut two ways, pairs of
one batching length (the longer side + EOS) in random order ("random ties"), and ordered by their
source's, then their target's length before the random tie-break ("by the sides", as fairseq
orders its batches and `seq2seq train` cuts them). Ordering by the sides pads each side less in as
many batches; this measures what that is worth in a step.

    python -m scripts.experiments.bench_batching --run runs/multi30k-en-fr --fp32

The epoch is the run's epoch 0 as training would batch it (`training.epoch.epoch_pairs`): its
sampled sources (when the run samples subwords) and its token budget. One model and one training
step (fused loss, fused AdamW) take the two orders' batches in turn, batch i of one then batch i of
the other (each order's batches are shuffled, so the first N of each are a random sample of its
epoch), so a noisy neighbour spoils both alike. Prints the CPU and its flags first, and each
order's padding.
"""

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from scripts.common import cpu
from seq2seq.allocator import keep_freed_memory
from seq2seq.data import tokenized
from seq2seq.data.batch import collate, token_batches
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.device import autocast
from seq2seq.models.registry import build_model, config_from_dict
from seq2seq.training.config import TrainConfig
from seq2seq.training.distributed import World
from seq2seq.training.epoch import epoch_pairs
from seq2seq.training.step import TrainStep
from seq2seq.training.train import adamw


def padding(batches: list[np.ndarray], src: np.ndarray, tgt: np.ndarray) -> str:
    cells = [sum(len(b) * side[b].max() for b in batches) for side in (src, tgt)]
    shares = [1 - side.sum() / n for side, n in zip((src, tgt), cells, strict=True)]
    return f"{len(batches)} batches, padding: source {shares[0]:.1%}, target {shares[1]:.1%}"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--run", required=True, help="a run directory with config.json and tokenized/")
    p.add_argument("--batches", type=int, default=0, help="timed batches per order (0: the whole epoch)")
    p.add_argument("--fp32", action="store_true", help="no bf16 autocast, even where it is fast")
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    keep_freed_memory()  # as `seq2seq train` does (seq2seq/allocator.py)
    torch.set_num_threads(args.threads)
    run = Path(args.run)
    saved = json.loads((run / "config.json").read_text())
    config, train = config_from_dict(saved["model"]), saved["train"]
    train_set = tokenized.load(next((run / "tokenized").iterdir()))
    alpha = train.get("subword_alpha", 0.0)
    tokenizer = Tokenizer(run / "tokenizer.model") if alpha > 0 else None
    recipe = TrainConfig(subword_alpha=alpha, seed=train["seed"])
    source = epoch_pairs(train_set, tokenizer, recipe, epoch=0)
    rows = source.rows
    src, tgt = source.side_lengths()
    seed, budget = train["seed"], train["max_tokens"]
    orders = {
        "random ties": token_batches(source.lengths, budget, seed, 0),
        "by the sides": token_batches(source.lengths, budget, seed, 0, (src, tgt)),
    }
    print(f"CPU: {cpu()}; torch {torch.__version__}; {args.threads} threads")
    print(f"precision: {'fp32' if args.fp32 else 'bf16 autocast where fast'}; max_tokens {budget}")
    for name, batches in orders.items():
        print(f"{name}: {padding(batches, src + 1, tgt + 1)}")

    torch.manual_seed(0)
    model = build_model(config)
    step = TrainStep(
        model, adamw(model, lr=1e-4), World(), autocast(torch.device("cpu"), not args.fp32), 1.0, 0.1
    )
    n = min(map(len, orders.values()))
    n = min(n, args.batches) if args.batches else n
    for indices in orders["random ties"][:3]:  # warm-up: the allocator, the kernels
        step(collate(*rows(indices), config.max_positions), lr=1e-4)
    seconds, tokens = dict.fromkeys(orders, 0.0), dict.fromkeys(orders, 0)
    for i in range(n):
        names = list(orders) if i % 2 == 0 else list(reversed(orders))  # who goes first alternates
        for name in names:
            batch = collate(*rows(orders[name][i]), config.max_positions)
            tick = time.perf_counter()
            step(batch, lr=1e-4)
            seconds[name] += time.perf_counter() - tick
            tokens[name] += batch.n_tokens
    base = tokens["random ties"] / seconds["random ties"]
    print(f"{n} batches of each order, the training step alone (collate not timed)")
    print("| order | target tokens | seconds | target tokens/s | vs random ties |")
    print("|---|---|---|---|---|")
    for name in orders:
        rate = tokens[name] / seconds[name]
        print(f"| {name} | {tokens[name]:,} | {seconds[name]:.1f} | {rate:,.0f} | {rate / base:.3f} |")


if __name__ == "__main__":
    main()
