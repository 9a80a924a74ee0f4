"""Start-up time and peak memory of `train` on a large synthetic corpus (default 2M pairs), the
tokenizer included, and what the tokenizer's sample size costs and gives.

    python -m scripts.bench_data_scale --pairs 2000000 --work /tmp/scale --samples 250000,500000,1000000

It writes the corpus once under --work (`train.tsv`, `val.tsv`: made-up words with a word-by-word
"translation", seeded; nothing is committed). For each --samples size, `seq2seq tokenize
--tokenizer-sentences N` trains a tokenizer in a child process (its seconds and peak resident
memory), and the tokenizer is scored on the 2,000 held-out validation pairs: pieces a sentence
(a vocabulary learnt from too small a sample splits words more), the unknown pieces' share, and
the share of its vocabulary that the largest sample's tokenizer shares. Then `train` starts twice
in a fresh run directory, as a user's first and second start: each a child process stopped right
after its first optimizer step, reporting the seconds from its launch (imports included) to that
step, its peak resident memory (ru_maxrss) and the largest of its own worker processes (the
tokenizing `map` runs one per core). The first start trains the tokenizer (the default sample),
tokenizes and draws the epoch; the second reads what the first stored. With --before, another
checkout (a `git worktree` of an older commit) starts the same way in the same run of the script.
With --stream, the corpus is also written as a dataset folder the Hub's loader reads
(`data/train.jsonl`, `data/validation.jsonl`) and `train --stream` starts on it twice too; the
last column is the run directory's size on disk after the start (a stored run holds its tokenized
set, a streamed one nothing but the tokenizer and the checkpoint).
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
from scripts.tree_memory import TreeMemory
from seq2seq.data.special import UNK_ID
from seq2seq.data.tokenizer import Tokenizer

CHILD = """
import json, os, resource, sys, time
# the checkout on PYTHONPATH, not the one an editable install's import hook names
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
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

sample = {"tokenizer_sentences": int(sys.argv[4])} if sys.argv[4] != "default" else {}
stream = {"stream": True, "max_steps": 1} if sys.argv[5] == "stream" else {}  # a stream's length is unknown
config = TrainConfig(corpus=sys.argv[2], src="src", tgt="tgt", device="cpu", bf16=False, **sample, **stream)
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
    for split, n in (("train", pairs), ("val", 2000)):
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


def train_tokenizer(corpus: str, run: Path, sentences: int) -> dict:
    """`seq2seq tokenize` with a sample of `sentences`, in a child process: seconds and peaks."""
    shutil.rmtree(run, ignore_errors=True)
    start = time.time()
    args = ["tokenize", "--corpus", corpus, "--src", "src", "--tgt", "tgt", "--run", str(run)]
    code = (
        "import json, resource, sys; from seq2seq.cli.app import main\n"
        f"sys.argv = ['seq2seq', *{args!r}, '--tokenizer-sentences', '{sentences}']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(json.dumps({'peak_gib': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20}))"
    )
    cost = measured([sys.executable, "-c", code], dict(os.environ), "tokenize")
    if not (run / "tokenizer.model").is_file():
        raise SystemExit("tokenize wrote no tokenizer")
    return {**cost, "seconds": time.time() - start}


def scores(model: Path, held_out: list[str], reference: set[str]) -> dict:
    """Pieces a held-out sentence, the unknown pieces' share, the vocabulary shared with `reference`."""
    tokenizer = Tokenizer(model)
    ids = tokenizer.encode(held_out)
    pieces = sum(map(len, ids))
    vocabulary = vocab(tokenizer)
    return {
        "pieces": pieces / len(held_out),
        "unknown": sum(row.count(UNK_ID) for row in ids) / pieces,
        "shared": len(vocabulary & reference) / len(vocabulary),
    }


def vocab(tokenizer: Tokenizer) -> set[str]:
    return set(tokenizer.id_pieces(list(range(tokenizer.vocab_size))))


def sample_table(corpus: str, work: Path, sizes: list[int]) -> None:
    held_out = [
        text
        for line in Path(corpus.format(split="val")).read_text().splitlines()
        for text in line.split("\t")
    ]
    costs = {n: train_tokenizer(corpus, work / f"tok-{n}", n) for n in sizes}
    reference = vocab(Tokenizer(work / f"tok-{max(sizes)}" / "tokenizer.model"))
    header = "sample (sentences) | seconds | peak RSS GiB | pieces a held-out sentence | unknown"
    print(f"\n| {header} | vocabulary shared with the largest |")
    print("|---:|---:|---:|---:|---:|---:|")
    for n, cost in costs.items():
        s = scores(work / f"tok-{n}" / "tokenizer.model", held_out, reference)
        print(
            f"| {n:,} | {cost['seconds']:.0f} | {cost['peak_gib']:.2f} | {s['pieces']:.2f} | "
            f"{100 * s['unknown']:.2f}% | {100 * s['shared']:.1f}% |",
            flush=True,
        )


def make_hub_folder(corpus: str, folder: Path) -> str:
    """The TSV corpus as a dataset folder of `translation` rows, as `--stream` reads a Hub dataset."""
    (folder / "data").mkdir(parents=True, exist_ok=True)
    for split, name in (("train", "train"), ("val", "validation")):
        source, path = Path(corpus.format(split=split)), folder / "data" / f"{name}.jsonl"
        if path.is_file() and path.stat().st_mtime > source.stat().st_mtime:
            continue  # made by an earlier run from the same corpus
        with open(source, encoding="utf-8") as lines, open(path, "w", encoding="utf-8") as out:
            for line in lines:
                src, tgt = line.rstrip("\n").split("\t")
                out.write(json.dumps({"translation": {"src": src, "tgt": tgt}}, ensure_ascii=False) + "\n")
    return str(folder)


def start(checkout: Path, corpus: str, run: Path, sample: int | None, stream: bool = False) -> dict:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    command = [sys.executable, "-c", CHILD, repr(time.time()), corpus, str(run)]
    command += ["default" if sample is None else str(sample), "stream" if stream else "stored"]
    return {**measured(command, env, f"{checkout}: train"), "run_mib": disk_mib(run)}


def padding_table(run: Path, parts: list[int], max_tokens: int = 3072) -> None:
    """The padding of an epoch's batches cut from the stored set whole and a part at a time (as
    `--stream` cuts them), from the stored run's lengths: padded cells over real ones."""
    from seq2seq.data import tokenized
    from seq2seq.data.batch import token_batches

    (folder,) = (run / tokenized.FOLDER).glob("train-*")
    stored = tokenized.load(folder)
    lengths, sides = stored.lengths, stored.side_lengths()
    print("\n| batches cut from | batches | padding (cells over real pieces) |\n|---|---:|---:|")
    for part in [len(lengths), *parts]:
        cells = real = count = 0
        for start in range(0, len(lengths), part):
            cut = slice(start, start + part)
            batches = token_batches(lengths[cut], max_tokens, 1, start, tuple(side[cut] for side in sides))
            for batch in batches:
                cells, real = (
                    cells + len(batch) * int(lengths[cut][batch].max()),
                    real + int(lengths[cut][batch].sum()),
                )
            count += len(batches)
        name = "the whole epoch" if part == len(lengths) else f"parts of {part:,} pairs"
        print(f"| {name} | {count:,} | {100 * (cells - real) / real:.1f}% |", flush=True)


def disk_mib(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink()) / 2**20


def measured(command: list[str], env: dict, what: str) -> dict:
    """Run `command`, its process tree's memory sampled; its last line of JSON, with the tree's
    peaks (`tree_gib`: resident, `anon_gib`: anonymous, `pss_gib`: proportional) added."""
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    memory = TreeMemory(child.pid)
    out, err = child.communicate()
    memory.stop()
    if child.returncode != 0:
        raise SystemExit(f"{what} failed:\n{err[-2000:]}")
    return {
        **json.loads(out.strip().splitlines()[-1]),
        "tree_gib": memory.peak_rss_gib,
        "anon_gib": memory.peak_anon_gib,
        "pss_gib": memory.peak_pss_gib,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--pairs", type=int, default=2_000_000)
    p.add_argument("--work", type=Path, default=Path("/tmp/seq2seq-scale"))
    p.add_argument("--samples", default="", help="tokenizer sample sizes to table, comma-separated")
    p.add_argument("--no-starts", action="store_true", help="only the sample table")
    p.add_argument("--tokenizer-sentences", type=int, help="the starts' sample, instead of the default")
    p.add_argument("--before", type=Path, help="another checkout to measure side by side")
    p.add_argument(
        "--stream", action="store_true", help="also start `train --stream` on the corpus as a dataset folder"
    )
    args = p.parse_args()
    print(f"CPU: {cpu()}, {os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f}")
    tick = time.time()
    corpus = make_corpus(args.work / "corpus", args.pairs)
    size = Path(corpus.format(split="train")).stat().st_size / 2**20
    print(f"corpus: {args.pairs:,} pairs, {size:.0f} MiB ({time.time() - tick:.0f} s to make)")
    if args.samples:
        sample_table(corpus, args.work, [int(n) for n in args.samples.split(",")])
    if args.no_starts:
        return
    header = "code | start | seconds to the first step | peak RSS GiB | largest worker GiB"
    print(f"\n| {header} | all processes: RSS / anonymous / PSS GiB | run directory MiB |")
    print("|---|---|---|---|---|---|---|")
    starts = [("before", args.before, corpus, False), ("this checkout", REPO, corpus, False)]
    if args.stream:
        starts.append(("this checkout, --stream", REPO, make_hub_folder(corpus, args.work / "hub"), True))
    for name, checkout, source, stream in starts:
        if checkout is None:
            continue
        run = args.work / f"run-{name.replace(' ', '-').replace(',', '')}"
        shutil.rmtree(run, ignore_errors=True)
        run.mkdir(parents=True)
        for which in ("first", "second"):
            r = start(checkout.resolve(), source, run, args.tokenizer_sentences, stream)
            tree = f"{r['tree_gib']:.2f} / {r['anon_gib']:.2f} / {r['pss_gib']:.2f}"
            peaks = f"{r['peak_gib']:.2f} | {r['worker_gib']:.2f} | {tree}"
            print(f"| {name} | {which} | {r['seconds']:.1f} | {peaks} | {r['run_mib']:.0f} |", flush=True)
    if args.stream:
        padding_table(args.work / "run-this-checkout", [10_000, 100_000])


if __name__ == "__main__":
    main()
