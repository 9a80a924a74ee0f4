"""Speed of the `seq2seq translate --input FILE` command itself, startup excluded by difference.

    python -m scripts.bench_translate --run runs/multi30k-en-fr --data-dir ../shared/corpora/multi30k

Each repeat times the command on the whole file and on its first line alone (same options); the
one-line run pays the same startup (Python, torch, loading the run), so
    sentences/s = (lines - 1) / (median time for the file - median time for one line).
Everything the user waits for is inside: reading, tokenizing, batching, decoding, detokenizing,
writing. Runs alternate so that a noisy machine slows both alike.
"""

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from seq2seq.data.corpus import load_pairs


def main() -> None:
    args = parse_args()
    pairs = load_pairs("multi30k", args.split, "en", "fr", args.data_dir)
    lines = [src for src, _ in pairs][: args.sentences]
    with tempfile.TemporaryDirectory() as tmp:
        whole, one = Path(tmp, "whole.en"), Path(tmp, "one.en")
        whole.write_text("\n".join(lines) + "\n", encoding="utf-8")
        one.write_text(lines[0] + "\n", encoding="utf-8")
        print(f"{len(lines)} lines of {args.split}, batch {args.batch_size}, output length ", end="")
        print(f"{args.min_len}..{args.max_len}")
        for beam in args.beams:
            times = {whole: [], one: []}
            for _ in range(args.repeats):
                for path in (one, whole):
                    times[path].append(run_once(args, beam, path, Path(tmp, "out")))
            startup, total = statistics.median(times[one]), statistics.median(times[whole])
            rate = (len(lines) - 1) / (total - startup)
            name = "greedy" if beam == 1 else f"beam {beam}"
            print(f"{name:<7} file {total:6.2f} s  one line {startup:5.2f} s  ->  {rate:6.1f} sentences/s")


def run_once(args, beam: int, source: Path, target: Path) -> float:
    command = [
        *(sys.executable, "-m", "seq2seq", "translate", "--run", args.run, "--beam", str(beam)),
        *("--batch-size", str(args.batch_size), "--input", str(source), "--output", str(target)),
        *(("--min-len", str(args.min_len)) if args.min_len else ()),
        *(("--max-len", str(args.max_len)) if args.max_len else ()),
    ]
    start = time.perf_counter()
    subprocess.run(command, check=True)
    seconds = time.perf_counter() - start
    n_in = len(source.read_text(encoding="utf-8").splitlines())
    n_out = len(target.read_text(encoding="utf-8").splitlines())
    assert n_in == n_out, f"{n_in} lines in, {n_out} out"
    return seconds


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--run", required=True, help="run directory with a trained model and tokenizer")
    p.add_argument("--data-dir", required=True, help="Multi30k folder")
    p.add_argument("--split", default="test_2016_flickr")
    p.add_argument("--sentences", type=int, default=1000)
    p.add_argument("--beams", type=int, nargs="+", default=[1, 5])
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--min-len", type=int, default=20)
    p.add_argument("--max-len", type=int, default=20)
    p.add_argument("--repeats", type=int, default=3)
    return p.parse_args()


if __name__ == "__main__":
    main()
