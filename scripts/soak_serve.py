"""A soak: a bounded, seeded, mixed load against `seq2seq serve` on 127.0.0.1 for a set time, and
what held: resident memory after warm-up, latency per minute, answers checked against the library's
translation of each line (the CLI's), and every status inside the contract.

    python -m scripts.soak_serve --run RUN --data-dir ../shared/corpora/multi30k --minutes 10

Each client draws, from its own seeded generator, one of: a /translate of 1-8 lines (beam 5), an
n-best of 1-4 lines, an /attention of one line, a bad request (4xx expected), a request whose client
hangs up 20 ms after sending, or a burst of four 256-line requests at once (above the queue's
bound, so some are 503). A 200 must carry the reference translation of every line; a bad request
must be a 4xx JSON error; a 503 must carry Retry-After; nothing else may come back.
"""

import argparse
import http.client
import json
import os
import random
import socket
import threading
import time
from collections import Counter

from scripts.common import ServeProcess, cpu, resident_mb
from seq2seq.data.corpus import load_pairs
from seq2seq.decoding.options import DecodeOptions

BEAM = 5
BAD = [
    b"{not json",
    json.dumps({"text": ""}).encode(),
    json.dumps({"text": "a dog", "beam": 0}).encode(),
    json.dumps({"text": ["a dog"], "colour": "blue"}).encode(),
    json.dumps({"text": "a dog\nthe cat"}).encode(),
]


def main() -> None:
    args = parse_args()
    lines = [src for src, _ in load_pairs("multi30k", "test_2016_flickr", "en", "fr", args.data_dir)][
        : args.sentences
    ]
    reference = references(args.run, lines)
    print(f"CPU: {cpu()}; {os.cpu_count()} cores; load average before: {os.getloadavg()[0]:.2f}")
    print(
        f"{args.clients} clients, {args.minutes:g} minutes, {len(lines)} distinct sentences, "
        f"beam {BEAM}, seed {args.seed}"
    )
    with ServeProcess(args.run, ["--beam", str(BEAM)]) as (host, port, proc):
        soak = Soak(host, port, proc.pid, lines, reference, args)
        soak.run()
    soak.show(proc.log.count("Traceback"), proc.returncode)


def references(run: str, lines: list[str]) -> dict[str, str]:
    """Each line's translation by the library, as `seq2seq translate --beam 5` gives it."""
    from seq2seq.decoding.search import translate
    from seq2seq.runs.load import load_run

    model, tokenizer = load_run(run, packed=True)
    return dict(zip(lines, translate(model, tokenizer, lines, DecodeOptions(beam=BEAM)).best, strict=True))


class Soak:
    def __init__(self, host, port, pid, lines, reference, args):
        self.host, self.port, self.pid, self.lines, self.reference, self.args = (
            host,
            port,
            pid,
            lines,
            reference,
            args,
        )
        self.lock, self.start = threading.Lock(), time.monotonic()
        self.end = self.start + args.minutes * 60
        self.kinds, self.violations, self.wrong = Counter(), [], 0
        self.latency: dict[int, list[float]] = {}  # minute -> seconds of the 200s
        self.rss: list[tuple[float, float]] = []

    def run(self) -> None:
        threads = [
            threading.Thread(target=self.client, args=(i,), daemon=True) for i in range(self.args.clients)
        ]
        threads.append(threading.Thread(target=self.memory, daemon=True))
        for t in threads:
            t.start()
        for t in threads:
            t.join(self.args.minutes * 60 + 300)

    def client(self, index: int) -> None:
        rng = random.Random(self.args.seed * 1000 + index)
        while time.monotonic() < self.end:
            kind = rng.choices(
                ["translate", "nbest", "attention", "bad", "hang up", "burst"], [50, 10, 10, 10, 10, 10]
            )[0]
            if kind == "burst":
                burst = [
                    threading.Thread(target=self.translate, args=(rng.sample(self.lines, 256), 1, True))
                    for _ in range(4)
                ]
                for t in burst:
                    t.start()
                for t in burst:
                    t.join()
            elif kind == "hang up":
                self.hang_up(rng.sample(self.lines, 3))
            elif kind == "bad":
                self.bad(rng.choice(BAD))
            elif kind == "attention":
                self.attention(rng.choice(self.lines))
            else:
                self.translate(
                    rng.sample(self.lines, rng.randint(1, 8 if kind == "translate" else 4)),
                    3 if kind == "nbest" else 1,
                )
            with self.lock:
                self.kinds[kind] += 1

    def post(self, path: str, body: bytes) -> tuple[int, dict, str | None, float]:
        start = time.perf_counter()
        connection = http.client.HTTPConnection(self.host, self.port, timeout=120)
        connection.request("POST", path, body, {"Content-Type": "application/json"})
        response = connection.getresponse()
        data = response.read()
        connection.close()
        try:
            answer = json.loads(data)
        except ValueError:
            answer = {"not json": data[:80].decode(errors="replace")}
        return response.status, answer, response.getheader("Retry-After"), time.perf_counter() - start

    def translate(self, lines: list[str], nbest: int, burst: bool = False) -> None:
        status, answer, retry, seconds = self.post(
            "/translate", json.dumps({"text": lines, "nbest": nbest}).encode()
        )
        if status == 200:
            self.timed(seconds)
            if answer["translations"] != [self.reference[line] for line in lines]:
                with self.lock:
                    self.wrong += 1
        else:
            self.check_refusal(status, answer, retry, f"translate of {len(lines)} lines")

    def attention(self, line: str) -> None:
        status, answer, retry, seconds = self.post("/attention", json.dumps({"text": line}).encode())
        if status == 200:
            self.timed(seconds)
            if answer["translation"] != self.reference[line] or "cross" not in answer["kinds"]:
                with self.lock:
                    self.wrong += 1
        else:
            self.check_refusal(status, answer, retry, "attention")

    def bad(self, body: bytes) -> None:
        status, answer, _, _ = self.post("/translate", body)
        if not (400 <= status < 500 and set(answer) == {"error"}):
            self.violation(f"a bad request answered {status}: {answer}")

    def check_refusal(self, status: int, answer: dict, retry: str | None, what: str) -> None:
        if status == 503 and retry and set(answer) == {"error"}:
            return
        if status == 504 and set(answer) == {"error"}:
            return
        self.violation(f"{what} answered {status} (Retry-After {retry}): {answer}")

    def hang_up(self, lines: list[str]) -> None:
        data = json.dumps({"text": lines}).encode()
        with socket.create_connection((self.host, self.port)) as sock:
            sock.sendall(
                f"POST /translate HTTP/1.1\r\nHost: {self.host}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(data)}\r\n\r\n".encode()
                + data
            )
            time.sleep(0.02)

    def timed(self, seconds: float) -> None:
        # a request answered after the end (sent in the last minute) counts in the last minute
        minute = min(int((time.monotonic() - self.start) // 60), int(self.args.minutes * 60 - 1) // 60)
        with self.lock:
            self.latency.setdefault(minute, []).append(seconds)

    def violation(self, what: str) -> None:
        with self.lock:
            self.violations.append(what)

    def memory(self) -> None:
        while time.monotonic() < self.end:
            self.rss.append((time.monotonic() - self.start, resident_mb(self.pid)))
            time.sleep(1.0)

    def show(self, tracebacks: int, exit_status: int) -> None:
        print(f"requests by kind: {dict(self.kinds)}")
        print("| minute | 200s | p50 | p99 | RSS at its end | RSS, lowest-highest in it |")
        print("|---:|---:|---:|---:|---:|---:|")
        peaks = []
        for minute in sorted(self.latency):
            seconds = sorted(self.latency[minute])
            rss = [mb for t, mb in self.rss if minute * 60 <= t < (minute + 1) * 60] or [float("nan")]
            if minute:  # the first minute is the warm-up
                peaks.append(max(rss))
            print(
                f"| {minute + 1} | {len(seconds)} | {pct(seconds, 50):.2f} s | {pct(seconds, 99):.2f} s | "
                f"{rss[-1]:.0f} MB | {min(rss):.0f}-{max(rss):.0f} MB |"
            )
        warm = [mb for t, mb in self.rss if t >= 60]
        if warm and peaks:
            print(
                f"RSS after the first minute: {min(warm):.0f}-{max(warm):.0f} MB "
                f"({max(warm) / min(warm) - 1:.1%} apart); each minute's highest: "
                f"{min(peaks):.0f}-{max(peaks):.0f} MB ({max(peaks) / min(peaks) - 1:.1%} apart)"
            )
        print(f"wrong answers: {self.wrong}; contract violations: {len(self.violations)}")
        for what in self.violations[:5]:
            print(f"  {what}")
        print(f"tracebacks in the server's log: {tracebacks}; exit status on SIGTERM: {exit_status}")


def pct(values: list[float], p: float) -> float:
    return values[min(len(values) - 1, round(p / 100 * (len(values) - 1)))] if values else float("nan")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--run", required=True)
    p.add_argument("--data-dir", required=True, help="Multi30k raw files: test_2016_flickr's sources")
    p.add_argument("--minutes", type=float, default=10.0)
    p.add_argument("--clients", type=int, default=16)
    p.add_argument("--sentences", type=int, default=600, help="distinct sentences the requests draw from")
    p.add_argument("--seed", type=int, default=1)
    return p.parse_args()


if __name__ == "__main__":
    main()
