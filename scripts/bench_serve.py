"""Load on `seq2seq serve`: N concurrent clients, each sending one test sentence per request.

    python -m scripts.bench_serve --run runs/multi30k-en-fr --data-dir ../shared/corpora/multi30k

First the reference: the same sentences through the library's `translate` in one process, in
length-sorted batches (what `seq2seq translate --input FILE` does, startup excluded), timed
after a warm-up. Then a server process (`seq2seq serve`, default batching options) and, for each
N in --clients, N client threads on keep-alive connections sharing the sentence list: each takes
the next sentence, POSTs it alone, waits for the answer, and checks that it equals the reference
translation of that line. Per N: sentences/s over the wall time, p50/p95 latency of a request,
and the share of the file throughput. The goal: 32 clients reach at least 80% of it.
"""

import argparse
import gzip
import http.client
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import torch

from scripts.common import cpu
from seq2seq.decoding.search import DecodeOptions, translate
from seq2seq.runs.load import load_run


def main() -> None:
    args = parse_args()
    if args.figure:  # before anything is measured: the stamp names the code that runs
        from scripts import figures

        args.commit = figures.clean_commit(figures.DEPENDS["serve-load"])
    if args.threads:
        torch.set_num_threads(args.threads)
    lines = read_sentences(args.data_dir, args.split, args.sentences)
    reference, file_rate = file_throughput(args, lines)
    print(f"CPU: {cpu()}")
    threads = f"{torch.get_num_threads()} torch threads for the file reference"
    print(f"{len(lines)} sentences of {args.split}, beam {args.beam}, {threads}, run {args.run}")
    server_threads = args.threads or "its default (every core but one)"
    server_options = (
        f"--max-batch {args.max_batch} --max-wait-ms {args.max_wait_ms} --threads {server_threads}"
    )
    print(f"server: {server_options}\n")
    rows = [["file (reference)", f"{file_rate:.1f}", "", "", "100%"]]
    print("| " + " | ".join(COLUMNS) + " |")
    print("|---:|---:|---:|---:|---:|")
    print("| " + " | ".join(rows[0]) + " |")
    with server(args) as (host, port):
        load(host, port, lines[: min(len(lines), 16)], reference, 4)  # warm-up
        for n in args.clients:
            rate, latencies = load(host, port, lines, reference, n)
            p50, p95 = (1000 * x for x in (statistics.median(latencies), percentile(latencies, 95)))
            rows.append([str(n), f"{rate:.1f}", f"{p50:.0f} ms", f"{p95:.0f} ms", f"{rate / file_rate:.0%}"])
            print("| " + " | ".join(rows[-1]) + " |")
    print(
        f"\nevery answer equal to the library's translation of its line ({len(lines)} x {len(args.clients)})"
    )
    if args.figure:
        note = (
            f"{len(lines)} sentences of {args.split}, one a request, beam {args.beam}; {threads}; "
            f"server {server_options}; every answer equal to the library's translation of its line."
        )
        write_figure(rows, note, args)


COLUMNS = ["clients", "sentences/s", "p50 latency", "p95 latency", "of the file throughput"]


def write_figure(rows: list[list[str]], note: str, args) -> None:
    """The figure `serve-load` (scripts/figures.py)."""
    from scripts import figures

    figures.record("serve-load", COLUMNS, rows, note, args.commit)


def read_sentences(data_dir: str, split: str, most: int) -> list[str]:
    with gzip.open(Path(data_dir) / f"{split}.en.gz", "rt", encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f][:most]


def file_throughput(args, lines: list[str]) -> tuple[list[str], float]:
    """The reference translations and sentences/s of the batched library call (median of repeats)."""
    model, tokenizer = load_run(args.run)
    options = DecodeOptions(beam=args.beam, batch_size=64)
    translate(model, tokenizer, lines[:64], options)  # warm-up
    times, best = [], None
    for _ in range(args.repeats):
        start = time.perf_counter()
        best = translate(model, tokenizer, lines, options).best
        times.append(time.perf_counter() - start)
    return best, len(lines) / statistics.median(times)


class server:
    """`seq2seq serve` in its own process on a free port; stopped by SIGTERM, which must exit 0."""

    def __init__(self, args):
        self.command = [
            *(sys.executable, "-m", "seq2seq", "serve", "--run", args.run, "--port", "0"),
            *("--beam", str(args.beam), "--max-batch", str(args.max_batch)),
            *("--max-wait-ms", str(args.max_wait_ms)),
            *(("--threads", str(args.threads)) if args.threads else ()),
        ]

    def __enter__(self) -> tuple[str, int]:
        self.proc = subprocess.Popen(self.command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        first = self.proc.stdout.readline()  # "serving RUN (...) at http://127.0.0.1:PORT ..."
        if " at " not in first:
            sys.exit(f"the server did not start: {self.proc.stderr.read()}")
        url = first.split(" at ")[1].split()[0]
        host, port = url.removeprefix("http://").rsplit(":", 1)
        for _ in range(600):
            try:
                http.client.HTTPConnection(host, int(port), timeout=1).request("GET", "/health")
                break
            except OSError:
                time.sleep(0.1)
        return host, int(port)

    def __exit__(self, *_) -> None:
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(60)
        assert code == 0, f"the server exited {code}"


def load(host: str, port: int, lines: list[str], reference: list[str], clients: int) -> tuple[float, list]:
    """`clients` threads sending every line once between them; (sentences/s, latencies in s)."""
    todo = iter(range(len(lines)))
    lock, latencies, wrong = threading.Lock(), [], []

    def client() -> None:
        connection = http.client.HTTPConnection(host, port, timeout=600)
        while True:
            with lock:
                i = next(todo, None)
            if i is None:
                return
            body = json.dumps({"text": lines[i]})
            start = time.perf_counter()
            connection.request("POST", "/translate", body, {"Content-Type": "application/json"})
            answer = json.loads(connection.getresponse().read())
            seconds = time.perf_counter() - start
            with lock:
                latencies.append(seconds)
                if answer.get("translations") != [reference[i]]:
                    wrong.append((i, answer))

    threads = [threading.Thread(target=client) for _ in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - start
    assert not wrong, f"{len(wrong)} answers differ from the reference, e.g. {wrong[0]}"
    assert len(latencies) == len(lines)
    return len(lines) / seconds, latencies


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--run", default="runs/multi30k-en-fr", help="run directory")
    data_dir = os.environ.get("SEQ2SEQ_DATA_DIR")
    p.add_argument("--data-dir", default=data_dir, required=data_dir is None, help="Multi30k folder")
    p.add_argument("--split", default="test_2016_flickr")
    p.add_argument("--sentences", type=int, default=1000, help="the first N sentences of the split")
    p.add_argument("--clients", type=int, nargs="+", default=[1, 8, 32])
    p.add_argument("--beam", type=int, default=5)
    p.add_argument("--max-batch", type=int, default=64)
    p.add_argument("--max-wait-ms", type=float, default=5.0)
    p.add_argument("--repeats", type=int, default=3, help="runs of the file reference (median)")
    p.add_argument(
        "--threads", type=int, help="torch threads, here and in the server [default: each its own default]"
    )
    p.add_argument(
        "--figure", action="store_true", help="write docs/figures/serve-load.json (scripts/figures.py)"
    )
    return p.parse_args()


if __name__ == "__main__":
    main()
