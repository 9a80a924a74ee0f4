"""Run the app under uvicorn on a socket bound here (so a busy port is a one-line error, and port 0
picks a free one), stopping gracefully: Ctrl-C or SIGTERM stops taking connections, answers the
requests in flight, stops the model's worker, and returns (the CLI then exits 0)."""

import contextlib
import signal
import socket
import threading
from collections.abc import Iterator

import uvicorn

from seq2seq.errors import Seq2SeqError

GRACE_SECONDS = 60  # in-flight requests get this long to be answered; a second Ctrl-C stops at once


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


def serve(app, sock: socket.socket) -> None:
    """Serve until Ctrl-C or SIGTERM, then drain and return."""
    config = uvicorn.Config(app, log_level="info", access_log=False, timeout_graceful_shutdown=GRACE_SECONDS)
    GracefulServer(config).run(sockets=[sock])


class GracefulServer(uvicorn.Server):
    """uvicorn's server, except that after a graceful stop it returns instead of raising the signal
    again (which would end the process with status 130 or 143 after a clean shutdown)."""

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
