"""Start-up time and peak memory of `train` on a large synthetic corpus (default 2M pairs).

    python -m scripts.bench_data_scale --pairs 2000000 --work /tmp/scale
    python -m scripts.bench_data_scale --pairs 2000000 --work /tmp/scale --before ../old-checkout

It writes the corpus once under --work (`train.tsv`, `val.tsv`: made-up words with a word-by-word
"translation", seeded; nothing is committed), trains one tokenizer on it (timed and measured
too), and then starts training twice in the same fresh run directory holding that tokenizer, for
this checkout and, with --before, for another one (e.g. a `git worktree` of an older commit), all
in one run of this script. Each start is a child process stopped right after its first optimizer
step; it reports the seconds from its launch (Python and torch imports included) to that step and
its peak resident memory (ru_maxrss), and the largest of its own worker processes (the tokenizing
`map` runs one per core). The second start is what a resumed or repeated run pays.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from scripts.common import REPO, cpu

CHILD = """
import json, os, resource, sys, time
launched = float(sys.argv[1])
from seq2seq.training.config import TrainConfig
from seq2seq.training.train import train
from seq2seq.training.reporter import Reporter
from seq2seq.models.registry import preset_config

class FirstStep(Reporter):
    def step(self, step, loss, lr, tokens_per_s):
        own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
        workers = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20
        print(json.dumps({"seconds": time.time() - launched, "peak_gib": own, "worker_gib": workers}))
        sys.stdout.flush()
        os._exit(0)

config = TrainConfig(corpus=sys.argv[2], src="src", tgt="tgt", device="cpu", bf16=False)
train(sys.argv[3], config, preset_config("transformer", "tiny"), reporter=FirstStep())
"""


def make_corpus(folder: Path, pairs: int, seed: int = 0) -> str:
    """Zipf-distributed made-up words (as in real text, a few are very common); the target side
    maps each word to its own made-up word and swaps neighbours, so there is something to learn."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    syllables = np.array(["ka", "lo", "mi", "ne", "tu", "ra", "si", "po", "de", "ve", "an", "or", "el", "ix"])
    words = np.array(["".join(rng.choice(syllables, rng.integers(1, 5))) for _ in range(30_000)])
    targets = np.array([w[::-1] + "e" for w in words])
    for split, n in (("train", pairs), ("val", 200)):
        path = folder / f"{split}.tsv"
        if path.is_file() and path.read_bytes().count(b"\n") == n:
            continue  # made by an earlier run (the same seed gives the same corpus)
        with open(path, "w", encoding="utf-8") as f:
            for start in range(0, n, 100_000):
                for _ in range(min(100_000, n - start)):
                    ids = np.minimum(rng.zipf(1.3, rng.integers(4, 25)), len(words)) - 1
                    tgt, even = targets[ids], len(ids) // 2 * 2
                    tgt[0:even:2], tgt[1:even:2] = tgt[1:even:2], tgt[0:even:2].copy()
                    f.write(f"{' '.join(words[ids])}\t{' '.join(tgt)}\n")
    return str(folder / "{split}.tsv")


def train_tokenizer(corpus: str, out: Path) -> dict:
    """The tokenizer all starts share, trained the way `seq2seq tokenize` does (its cost is the
    same before and after: SentencePiece samples 2M sentences)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    start = time.time()
    code = (
        "import resource, sys; from seq2seq.cli.app import main; sys.argv = ['seq2seq', 'tokenize', "
        f"'--corpus', {corpus!r}, '--src', 'src', '--tgt', 'tgt', '--run', {str(out.parent)!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return {"seconds": time.time() - start, "peak_gib": float(done.stdout.split()[-1])}


def start(checkout: Path, corpus: str, run: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    command = [sys.executable, "-c", CHILD, repr(time.time()), corpus, str(run)]
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"{checkout}: train failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--pairs", type=int, default=2_000_000)
    p.add_argument("--work", type=Path, default=Path("/tmp/seq2seq-scale"))
    p.add_argument("--before", type=Path, help="another checkout to measure side by side")
    args = p.parse_args()
    print(f"CPU: {cpu()}, {os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f}")
    tick = time.time()
    corpus = make_corpus(args.work / "corpus", args.pairs)
    size = Path(corpus.format(split="train")).stat().st_size / 2**20
    print(f"corpus: {args.pairs:,} pairs, {size:.0f} MiB ({time.time() - tick:.0f} s to make)")
    tokenizer = args.work / "tokenizer" / "tokenizer.model"
    if not tokenizer.is_file():
        cost = train_tokenizer(corpus, tokenizer)
        seconds, peak = cost["seconds"], cost["peak_gib"]
        print(f"tokenizer: {seconds:.0f} s, peak RSS {peak:.2f} GiB (shared by all starts)")
    print("\n| code | start | seconds to the first step | peak RSS GiB | largest worker GiB |")
    print("|---|---|---|---|---|")
    for name, checkout in (("before", args.before), ("this checkout", REPO)):
        if checkout is None:
            continue
        run = args.work / f"run-{name.replace(' ', '-')}"
        shutil.rmtree(run, ignore_errors=True)
        run.mkdir(parents=True)
        shutil.copy(tokenizer, run / "tokenizer.model")
        for which in ("first", "second"):
            r = start(checkout.resolve(), corpus, run)
            print(
                f"| {name} | {which} | {r['seconds']:.1f} | {r['peak_gib']:.2f} | {r['worker_gib']:.2f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
