"""Run the app under uvicorn on a socket bound here (so a busy port is a one-line error, and port 0
picks a free one), stopping gracefully: Ctrl-C or SIGTERM stops taking connections and work,
answers what the model reaches within a grace period, 503 to every request it has not started by
then, stops the model's worker, and returns (the CLI then exits 0). A second Ctrl-C ends the
process at once."""

import contextlib
import gc
import os
import signal
import socket
import sys
import threading
from collections.abc import Iterator

import uvicorn

from seq2seq.errors import Seq2SeqError
from seq2seq.serve.connections import IDLE_SECONDS, GuardedH11
from seq2seq.serve.logs import hold_repeats

GRACE_SECONDS = 30  # what is queued gets this long to be answered; a second Ctrl-C stops at once
SHED_SECONDS = 20  # then whatever the model has not started is answered 503: within the grace


def listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket on host:port, or a one-line error (unknown host, port taken, ...)."""
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except OSError as e:
        raise Seq2SeqError(f"cannot listen on {host}:{port}: {e.strerror or e}") from None
    return sock


def server_config(app, **overrides) -> uvicorn.Config:
    """How uvicorn runs the app: h11 with the connections' deadlines and bound (connections.py)."""
    settings = dict(
        log_level="info",
        access_log=False,
        timeout_graceful_shutdown=GRACE_SECONDS,
        http=GuardedH11,
        timeout_keep_alive=IDLE_SECONDS,
    )
    config = uvicorn.Config(app, **(settings | overrides))  # configures uvicorn's loggers
    hold_repeats()
    return config


def serve(app, sock: socket.socket) -> None:
    """Serve until Ctrl-C or SIGTERM, then drain and return."""
    config = server_config(app)
    batcher = app.state.batcher
    set_aside_the_loaded()
    GracefulServer(config, on_stop=lambda: batcher.close(SHED_SECONDS)).run(sockets=[sock])


def set_aside_the_loaded() -> None:
    """Move every object alive now (the model, torch, the framework: about 200,000) out of the
    reach of Python's cyclic collector (`gc.freeze`). None of it is garbage, yet each full
    collection would walk all of it while the event loop waits: pauses of 100 ms and more that
    every request, `/health` included, sits through."""
    gc.collect()
    gc.freeze()


class GracefulServer(uvicorn.Server):
    """uvicorn's server, except that after a graceful stop it returns instead of raising the signal
    again (which would end the process with status 130 or 143 after a clean shutdown). `on_stop`
    runs at the first signal (the batcher takes no more work, and sheds what is left after a
    while); a second Ctrl-C ends the process at once, status 130: waiting for the model's thread
    there is what the user refused, and leaving it to the interpreter's exit would abort in the
    middle of a torch call."""

    def __init__(self, config, on_stop=None):
        super().__init__(config)
        self.on_stop = on_stop

    def handle_exit(self, sig, frame) -> None:
        if self.should_exit and sig == signal.SIGINT:
            sys.stderr.write("stopped at once\n")
            sys.stderr.flush()
            os._exit(130)
        if not self.should_exit and self.on_stop is not None:
            self.on_stop()
        super().handle_exit(sig, frame)

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():  # only there can signals be caught
            yield
            return
        signals = (signal.SIGINT, signal.SIGTERM)
        previous = {s: signal.signal(s, self.handle_exit) for s in signals}
        try:
            yield
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
