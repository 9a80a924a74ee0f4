"""The server under overload: many clients sending long beam requests in a loop, for a bounded time,
against `seq2seq serve` in its own process on 127.0.0.1. It reports how every request was answered
(200, 503 with Retry-After, 504: nothing else is in the contract), their latencies, how fast
`/health` answered throughout, the server's resident memory, and the tracebacks in its log.

    python -m scripts.bench_overload --run RUN --data-dir ../shared/corpora/multi30k
    python -m scripts.bench_overload --run RUN --data-dir ... --hang-up 0.05   # clients that leave
    python -m scripts.bench_overload --run RUN --data-dir ... --route attention --lines 1 --clients 32

`/health` is probed from two places: a thread beside the clients, as before, and a process of
its own, which waits for no client thread to hand it Python's lock, so only its figure is the
server's alone.

With --hang-up S, every client sends its request and closes the connection S seconds later
without reading the answer: the report then says how long the server took, after the last client
left, to have nothing pending (its work dropped, not decoded for nobody).
"""

import argparse
import http.client
import json
import multiprocessing
import os
import socket
import threading
import time
from collections import Counter

from scripts.common import ServeProcess, cpu, resident_mb
from seq2seq.data.corpus import load_pairs


def main() -> None:
    args = parse_args()
    lines = [src for src, _ in load_pairs("multi30k", "test_2016_flickr", "en", "fr", args.data_dir)]
    print(f"CPU: {cpu()}; {os.cpu_count()} cores; load average before: {os.getloadavg()[0]:.2f}")
    print(
        f"{args.clients} clients x {args.lines}-line {args.route} requests at beam {args.beam} for "
        f"{args.seconds:g} s; --max-queue {args.max_queue} --request-timeout {args.request_timeout:g}"
        + (
            f"; each client hangs up {args.hang_up:g} s after sending, back {args.pause:g} s later"
            if args.hang_up
            else ""
        )
    )
    serve_args = ["--beam", str(args.beam), "--max-queue", str(args.max_queue)]
    with ServeProcess(args.run, [*serve_args, "--request-timeout", str(args.request_timeout)]) as (
        host,
        port,
        proc,
    ):
        report = Load(host, port, proc.pid, lines, args).run()
        report["pending_after_s"] = wait_for_idle(host, port) if args.hang_up else None
    report["tracebacks"] = proc.log.count("Traceback")
    report["exit"] = proc.returncode
    show(report)


class Load:
    def __init__(self, host: str, port: int, pid: int, lines: list[str], args):
        self.host, self.port, self.pid, self.args = host, port, pid, args
        self.bodies = [
            json.dumps(
                {
                    "text": lines[i : i + args.lines] if args.route == "translate" else lines[i],
                    "beam": args.beam,
                }
            )
            for i in range(0, len(lines) - args.lines, args.lines)
        ]
        self.lock, self.statuses, self.latencies = threading.Lock(), Counter(), {}
        self.health, self.rss, self.retry_after_missing, self.last_hang_up = [], [], 0, 0.0

    def run(self) -> dict:
        self.end = time.monotonic() + self.args.seconds
        spawn = multiprocessing.get_context("spawn")
        apart, out = spawn.Pipe(duplex=False)
        alone = spawn.Process(target=probe_alone, args=(self.host, self.port, self.end, out), daemon=True)
        alone.start()
        threads = [
            threading.Thread(target=self.client, args=(i,), daemon=True) for i in range(self.args.clients)
        ]
        threads += [
            threading.Thread(target=self.prober, daemon=True),
            threading.Thread(target=self.memory, daemon=True),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(self.args.seconds + self.args.request_timeout + 60)
        health_alone = apart.recv() if apart.poll(60) else []
        alone.join(10)
        return {
            "statuses": dict(self.statuses),
            "latencies": self.latencies,
            "health": self.health,
            "health_alone": health_alone,
            "rss_mb": self.rss,
            "retry_after_missing": self.retry_after_missing,
        }

    def client(self, index: int) -> None:
        path = f"/{self.args.route}"
        n = index
        while time.monotonic() < self.end:
            body = self.bodies[n % len(self.bodies)]
            n += self.args.clients
            if self.args.hang_up:
                self.hang_up(path, body)
                time.sleep(self.args.pause)
                continue
            start = time.perf_counter()
            try:
                connection = http.client.HTTPConnection(
                    self.host, self.port, timeout=self.args.request_timeout + 30
                )
                connection.request("POST", path, body, {"Content-Type": "application/json"})
                response = connection.getresponse()
                response.read()
                status, retry = response.status, response.getheader("Retry-After")
                missing = status == 503 and not retry
                connection.close()
            except OSError as e:
                status, missing, retry = type(e).__name__, False, None
            with self.lock:
                self.statuses[status] += 1
                self.latencies.setdefault(status, []).append(time.perf_counter() - start)
                self.retry_after_missing += missing
            if status == 503:  # a client that honours Retry-After (up to 5 s)
                time.sleep(min(float(retry or 1), 5.0))

    def hang_up(self, path: str, body: str) -> None:
        data = body.encode()
        with socket.create_connection((self.host, self.port)) as sock:
            sock.sendall(
                f"POST {path} HTTP/1.1\r\nHost: {self.host}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(data)}\r\n\r\n".encode()
                + data
            )
            time.sleep(self.args.hang_up)
        with self.lock:
            self.statuses["hung up"] += 1
            self.last_hang_up = time.monotonic()

    def prober(self) -> None:
        self.health.extend(probe(self.host, self.port, self.end))

    def memory(self) -> None:
        while time.monotonic() < self.end:
            self.rss.append(resident_mb(self.pid))
            time.sleep(0.5)


def probe(host: str, port: int, end: float) -> list[float]:
    """Seconds each GET /health took, one every 0.2 s until time.monotonic() passes `end`."""
    seconds = []
    while time.monotonic() < end:
        start = time.perf_counter()
        try:
            connection = http.client.HTTPConnection(host, port, timeout=10)
            connection.request("GET", "/health")
            connection.getresponse().read()
            connection.close()
            seconds.append(time.perf_counter() - start)
        except OSError:
            seconds.append(float("inf"))
        time.sleep(0.2)
    return seconds


def probe_alone(host: str, port: int, end: float, out) -> None:
    """`probe` in a process of its own (the clock is the system's, shared across processes)."""
    out.send(probe(host, port, end))


def wait_for_idle(host: str, port: int) -> float:
    """Seconds from now until the server has nothing pending."""
    start = time.monotonic()
    while time.monotonic() - start < 600:
        connection = http.client.HTTPConnection(host, port, timeout=10)
        connection.request("GET", "/health")
        if json.loads(connection.getresponse().read())["pending"] == 0:
            return time.monotonic() - start
        time.sleep(0.05)
    return float("inf")


def show(report: dict) -> None:
    print(f"answers: {report['statuses']}; 503 without Retry-After: {report['retry_after_missing']}")
    for status, seconds in sorted(report["latencies"].items(), key=str):
        print(
            f"  {status}: p50 {pct(seconds, 50):.2f} s, p99 {pct(seconds, 99):.2f} s, "
            f"max {max(seconds):.2f} s"
        )
    for where, health in (("beside the clients", report["health"]), ("alone", report["health_alone"])):
        print(
            f"/health ({where}) over {len(health)} probes: p50 {pct(health, 50) * 1000:.0f} ms, p99 "
            f"{pct(health, 99) * 1000:.0f} ms, max {max(health, default=float('nan')) * 1000:.0f} ms"
        )
    rss = report["rss_mb"]
    warm = rss[len(rss) // 6 :] or rss
    print(f"server RSS: peak {max(rss):.0f} MB; after warm-up {min(warm):.0f}-{max(warm):.0f} MB")
    if report["pending_after_s"] is not None:
        print(f"nothing pending {report['pending_after_s']:.2f} s after the load ended")
    print(f"tracebacks in the server's log: {report['tracebacks']}; exit status on SIGTERM: {report['exit']}")


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))] if ordered else float("nan")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--run", required=True)
    p.add_argument("--data-dir", required=True, help="Multi30k raw files: test_2016_flickr's sources")
    p.add_argument("--route", choices=("translate", "attention"), default="translate")
    p.add_argument("--clients", type=int, default=64)
    p.add_argument("--lines", type=int, default=256, help="lines a /translate request")
    p.add_argument("--beam", type=int, default=5)
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--max-queue", type=int, default=2048)
    p.add_argument("--request-timeout", type=float, default=60.0)
    p.add_argument("--hang-up", type=float, default=0.0, help="seconds after sending that a client leaves")
    p.add_argument("--pause", type=float, default=0.0, help="with --hang-up: seconds before it comes back")
    return p.parse_args()


if __name__ == "__main__":
    main()
