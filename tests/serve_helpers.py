"""Runs, apps and live servers for the HTTP and browser tests."""

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import torch

from seq2seq.models.rnn import RNN, RNNConfig
from seq2seq.runs.load import load_run
from tests.conftest import tiny_model, write_run

SENTENCES = ["a dog runs", "two men sit on the red car 12", "the sun sets", "a girl plays with a cat"]


def tiny_rnn(vocab_size: int, seed: int = 0) -> RNN:
    torch.manual_seed(seed)
    return RNN(RNNConfig(vocab_size=vocab_size, d_model=32, n_layers=2, dropout=0.0, max_positions=64)).eval()


def write_runs(folder: Path, tokenizer) -> dict[str, Path]:
    """A Transformer run and an RNN run sharing one tokenizer."""
    return {
        "transformer": write_run(
            folder / "transformer", lambda v: tiny_model(vocab_size=v, seed=6), tokenizer
        ),
        "rnn": write_run(folder / "rnn", lambda v: tiny_rnn(v, seed=7), tokenizer),
    }


def make_app(run: Path, **options):
    """The app of a run, as `seq2seq serve` builds it."""
    from seq2seq.serve.app import create_app
    from seq2seq.serve.info import run_info

    model, tokenizer = load_run(run)
    return create_app(model, tokenizer, run_info(run, model, tokenizer), **options)


@contextmanager
def live_server(app) -> Iterator[str]:
    """The app under uvicorn on a free 127.0.0.1 port, in a thread; yields its base URL."""

    from seq2seq.serve.server import GracefulServer, listen, server_config

    sock = listen("127.0.0.1", 0)
    server = GracefulServer(server_config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(30)


def post(url: str, body: dict, timeout: float = 60) -> tuple[int, dict]:
    """POST JSON, return (status, decoded JSON answer), 4xx and 5xx included."""
    request = urllib.request.Request(
        url, json.dumps(body).encode(), {"Content-Type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def get(url: str, timeout: float = 10) -> dict:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return json.loads(response.read())
