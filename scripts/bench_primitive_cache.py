"""Speed and memory of packed decoding against the size of the primitive caches (oneDNN's and
ideep's, which keep the packed GEMMs' compiled kernels, one per shape: seq2seq/models/packed.py),
beside the plain model.

    python -m scripts.bench_primitive_cache --run RUN --data-dir ../shared/corpora/multi30k

Each setting runs in a process of its own (the caches read their capacity once): the run is
loaded, packed (or not, for "plain"), and the same sentences are translated at beam 5 in a seeded
sequence of batches of 1 to --max-batch sentences, as a server meets them, --passes times after one
warm-up pass. A pass's sentences/s and the process' resident memory after each pass are printed;
settings alternate over --rounds so that a noisy machine slows them alike.
"""

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time

from scripts.common import cpu, resident_mb
from seq2seq.models.packed import CACHE_VARIABLES

SETTINGS = ["plain", "1024", "64", "16", "8"]  # "plain": not packed; a number: both caches' capacity


def main() -> None:
    args = parse_args()
    if args.worker:
        return worker(args)
    print(f"CPU: {cpu()}, {os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f}", flush=True)
    results: dict[str, list[dict]] = {s: [] for s in args.settings}
    for _ in range(args.rounds):
        for setting in args.settings:
            env = dict(os.environ)
            if setting != "plain":
                env |= {name: setting for name in CACHE_VARIABLES}
            command = [sys.executable, "-m", "scripts.bench_primitive_cache", "--worker", setting]
            command += ["--run", args.run, "--data-dir", args.data_dir, "--sentences", str(args.sentences)]
            command += ["--passes", str(args.passes), "--max-batch", str(args.max_batch)]
            done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
            results[setting].append(json.loads(done.stdout.strip().splitlines()[-1]))
    print(
        f"\n{args.sentences} sentences, beam 5, batches of 1-{args.max_batch}, {args.passes} passes after a "
        f"warm-up, {args.rounds} rounds (medians)\n"
    )
    print("| setting | sentences/s | RSS after pass 1 | RSS after the last pass |\n|---|---:|---:|---:|")
    for setting, rows in results.items():
        speed = statistics.median(s for row in rows for s in row["speed"])
        first = statistics.median(row["rss"][0] for row in rows)
        last = statistics.median(row["rss"][-1] for row in rows)
        name = "plain (not packed)" if setting == "plain" else f"packed, caches of {setting}"
        print(f"| {name} | {speed:.1f} | {first:.0f} MB | {last:.0f} MB |")


def worker(args) -> None:
    import torch

    from seq2seq.data.corpus import load_pairs
    from seq2seq.decoding.options import DecodeOptions
    from seq2seq.decoding.search import translate
    from seq2seq.models.packed import pack
    from seq2seq.runs.load import load_run

    torch.set_num_threads(1)  # as the server runs the model on 2 cores
    lines = [src for src, _ in load_pairs("multi30k", "test_2016_flickr", "en", "fr", args.data_dir)]
    lines = lines[: args.sentences]
    model, tokenizer = load_run(args.run, "cpu")
    if args.worker != "plain":
        model = pack(model)
    draw, batches, at = random.Random(0), [], 0
    while at < len(lines):
        size = draw.randint(1, args.max_batch)
        batches.append(lines[at : at + size])
        at += size
    speed, rss = [], []
    for step in range(args.passes + 1):
        start = time.perf_counter()
        for batch in batches:
            translate(model, tokenizer, batch, DecodeOptions(beam=5, batch_size=args.max_batch))
        if step:  # the first pass warms up
            speed.append(len(lines) / (time.perf_counter() - start))
            rss.append(resident_mb())
    print(json.dumps({"speed": speed, "rss": rss}))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--run", required=True)
    p.add_argument("--data-dir", required=True, help="Multi30k raw files: test_2016_flickr's sources")
    p.add_argument("--sentences", type=int, default=400)
    p.add_argument("--max-batch", type=int, default=64)
    p.add_argument("--passes", type=int, default=3)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--settings", nargs="+", default=SETTINGS)
    p.add_argument("--worker", help=argparse.SUPPRESS)
    return p.parse_args()


if __name__ == "__main__":
    main()
