"""The server's connections, over raw sockets against the real uvicorn server: a request's headers
and body have deadlines (a 408 JSON line for headers that never end, a close for a body that never
does), an idle keep-alive connection is closed, connections beyond the bound get a 503 JSON line at
once, and the server answers a normal request throughout."""

import json
import logging
import socket
import struct
import time
import types

import pytest

pytest.importorskip("fastapi", reason='the server needs the extra: pip install -e ".[serve]"')

from seq2seq.serve.connections import GuardedH11
from seq2seq.serve.logs import ERRORS, Repeats
from tests.conftest import caption_tokenizer
from tests.serve_helpers import get, live_server, make_app, write_runs


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    folder = tmp_path_factory.mktemp("runs")
    runs = write_runs(folder, caption_tokenizer(folder / "tokenizer.model"))
    saved = GuardedH11.header_seconds, GuardedH11.body_seconds, GuardedH11.max_connections
    GuardedH11.header_seconds, GuardedH11.body_seconds, GuardedH11.max_connections = 0.5, 0.5, 8
    try:
        with live_server(make_app(runs["transformer"], beam=2)) as served:
            yield served
    finally:
        GuardedH11.header_seconds, GuardedH11.body_seconds, GuardedH11.max_connections = saved


def connect(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=10)
    return sock


def read_all(sock: socket.socket) -> bytes:
    """Everything until the server closes the connection."""
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def error_of(answer: bytes) -> tuple[int, str]:
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)["error"]


def test_headers_that_never_end_get_a_408_line_and_the_connection_closes(url):
    with connect(url) as sock:
        sock.sendall(b"POST /translate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le")
        start = time.monotonic()
        status, error = error_of(read_all(sock))
    assert status == 408 and "headers" in error and time.monotonic() - start < 5
    assert get(url + "/health")["status"] == "ok"


def test_a_body_that_never_ends_is_closed(url):
    with connect(url) as sock:
        sock.sendall(b"POST /translate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n")
        sock.sendall(b'Content-Length: 100\r\n\r\n{"text": "a')
        start = time.monotonic()
        read_all(sock)  # whatever the handler answers, the connection ends
    assert time.monotonic() - start < 5
    assert get(url + "/health")["status"] == "ok"


def test_connections_beyond_the_bound_get_a_503_line_and_the_rest_are_served(url):
    held = [connect(url) for _ in range(8)]
    try:
        time.sleep(0.2)
        with connect(url) as extra:
            status, error = error_of(read_all(extra))
        assert status == 503 and "connections" in error
    finally:
        for sock in held:
            sock.close()
    time.sleep(0.3)
    assert get(url + "/health")["status"] == "ok"


def test_an_idle_keep_alive_connection_is_closed(url):
    with connect(url) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        first = sock.recv(65536)
        assert b" 200 " in first.split(b"\r\n")[0]
        start = time.monotonic()
        read_all(sock)  # the keep-alive timeout closes it
    assert time.monotonic() - start < 15


def test_a_repeated_error_is_logged_once_a_window_with_the_count_held_back():
    now = [0.0]
    repeats = Repeats(window=60.0, clock=lambda: now[0])
    logger = logging.getLogger("test.repeats")
    logger.addFilter(repeats)
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logger.addHandler(handler)
    try:
        for _ in range(100):
            logger.warning("Invalid HTTP request received.")
        logger.warning("another kind")
        now[0] = 61.0
        logger.warning("Invalid HTTP request received.")
    finally:
        logger.removeHandler(handler)
        logger.removeFilter(repeats)
    messages = [r.getMessage() for r in records]
    assert messages == [
        "Invalid HTTP request received.",
        "another kind",
        "Invalid HTTP request received. (and 99 more like it in the last 60 s, not logged)",
    ]


def test_the_server_holds_repeats_of_uvicorns_errors(url):
    assert any(isinstance(f, Repeats) for f in logging.getLogger(ERRORS).filters)


def test_the_server_runs_on_uvloop_where_it_is_installed():
    """uvloop (in the serve extra, off Windows) handles a connection in a fraction of asyncio's
    Python: under a flood of connections it is what keeps /health answering (docs/serving.md)."""
    uvloop = pytest.importorskip("uvloop")
    from seq2seq.serve.server import server_config

    loop = server_config(lambda scope, receive, send: None).get_loop_factory()()
    try:
        assert isinstance(loop, uvloop.Loop)
    finally:
        loop.close()


def held_protocols() -> int:
    """The server's connection protocols still alive after a full collection."""
    import gc

    gc.collect()
    return sum(type(o) is GuardedH11 for o in gc.get_objects())


def test_a_connection_the_client_resets_is_let_go_at_once(url):
    """uvicorn's keep-alive timer outlives a reset connection (it is cancelled on a clean close
    only); the server's protocol cancels it, so a flood of clients that leave an answer unread
    holds no connections for the keep-alive's seconds."""
    before = held_protocols()
    for _ in range(5):
        sock = connect(url)
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        time.sleep(0.1)  # answered: the keep-alive timer runs
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()  # an RST, as from a client that closes with the answer unread
    deadline = time.monotonic() + 3  # well inside the 5 s keep-alive
    while held_protocols() > before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert held_protocols() <= before
    assert get(f"{url}/health")["status"] == "ok"


def test_serving_sets_what_is_loaded_aside_from_the_collector(monkeypatch):
    import gc

    from seq2seq.serve import server

    monkeypatch.setattr(server.GracefulServer, "run", lambda self, sockets: None)
    loaded = [[i] for i in range(10_000)]  # objects the collector tracks
    try:
        app = types.SimpleNamespace(state=types.SimpleNamespace(batcher=None))  # run is not reached
        server.serve(app, socket.socket())
        assert gc.get_freeze_count() >= len(loaded)
        tracked = {id(o) for o in gc.get_objects()}
        assert not any(id(o) in tracked for o in loaded)  # a full collection no longer walks them
    finally:
        gc.unfreeze()
