"""Overload is an answer, not a pile-up: a request's work is counted before it is queued (413 past
the limit), the queue is bounded (503 with Retry-After beyond it), a request has a deadline (504),
and the work of a request whose deadline passed or whose client left is dropped, never decoded."""

import contextlib
import json
import signal
import socket
import threading
import time
import urllib.parse

from fastapi.testclient import TestClient

from tests.serve_helpers import get, live_server, make_app, post

RUN_SEED = 9  # the `run` fixture's weights (conftest.py)


class Gate:
    """Holds the model's worker in its first batch until opened; records every batch's lines."""

    def __init__(self):
        self.opened, self.entered, self.batches = threading.Event(), threading.Event(), []

    def __call__(self, work: str, lines: int) -> None:
        self.batches.append(lines)
        self.entered.set()
        self.opened.wait(20)


def in_thread(fn, *args) -> dict:
    out = {}
    thread = threading.Thread(target=lambda: out.update(answer=fn(*args)), daemon=True)
    thread.start()
    out["thread"] = thread
    return out


def wait_until(condition, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_a_request_is_weighed_by_its_work_not_its_characters(run):
    with live_server(make_app(run, beam=2, max_work=2000)) as url:
        limits = get(f"{url}/info")["limits"]
        assert (limits["max_work"], limits["max_queue"], limits["request_timeout_s"]) == (2000, 2048, 60.0)
        status, body = post(f"{url}/translate", {"text": ["a dog"] * 4, "beam": 2})
        assert status == 200, body
        status, body = post(f"{url}/translate", {"text": ["a dog"] * 8, "beam": 16, "min_len": 40})
        assert status == 413 and "units of work (lines x beam x output pieces)" in body["error"], body
        status, body = post(f"{url}/attention", {"text": "a dog", "beam": 64, "max_len": 60})
        assert status == 413, body


def test_beyond_the_queue_s_bound_the_answer_is_503_with_retry_after(run):
    gate = Gate()
    with live_server(make_app(run, beam=2, max_queue=6, on_batch=gate)) as url:
        first = in_thread(post, f"{url}/translate", {"text": "a dog"})  # 1 line x beam 2, decoding
        gate.entered.wait(10)
        second = in_thread(post, f"{url}/translate", {"text": ["the cat", "a man"]})  # 4 more: 6 in all
        wait_until(lambda: get(f"{url}/health")["pending"] == 2)
        request = urllib.request.Request(
            f"{url}/translate", json.dumps({"text": "two men"}).encode(), {"Content-Type": "application/json"}
        )
        try:
            urllib.request.urlopen(request, timeout=10)
            raise AssertionError("a request beyond the queue's bound was taken")
        except urllib.error.HTTPError as e:
            assert e.code == 503 and int(e.headers["Retry-After"]) >= 1
            assert "the server is busy" in json.loads(e.read())["error"]
        gate.opened.set()
        for waiting in (first, second):
            waiting["thread"].join(20)
            assert waiting["answer"][0] == 200
        assert post(f"{url}/translate", {"text": "two men"})[0] == 200  # room again


def test_a_request_the_queue_has_no_room_for_is_refused_before_its_lines_are_checked(run, monkeypatch):
    """Weighed by its parsed fields: under a flood most requests are refused, and a refusal that
    costs the line checks and the tokenizer is the event loop's time, every client's."""
    from seq2seq.serve import routes as app_module

    checked = []
    real = app_module.checked_lines
    monkeypatch.setattr(app_module, "checked_lines", lambda text, *a: checked.append(text) or real(text, *a))
    gate = Gate()
    with live_server(make_app(run, beam=2, max_queue=6, on_batch=gate)) as url:
        first = in_thread(post, f"{url}/translate", {"text": ["a dog", "a cat"]})  # 2 x 2 decoding
        gate.entered.wait(10)
        checked.clear()
        status, body = post(f"{url}/translate", {"text": ["the cat", "a man"], "beam": 2})  # 4 more: no room
        assert status == 503 and "the server is busy" in body["error"], body
        status, body = post(f"{url}/attention", {"text": "two men", "beam": 3})
        assert status == 503, body
        assert checked == []  # neither reached the line checks
        # a beam above the limit: refused before it is weighed
        status, body = post(f"{url}/translate", {"text": "two men", "beam": 999})
        assert status == 422 and "above this server's limit" in body["error"], body
        room = in_thread(post, f"{url}/translate", {"text": "a girl", "greedy": True})  # 1 x 1: room
        time.sleep(0.5)  # admitted and queued behind the held batch
        gate.opened.set()
        room["thread"].join(20)
        first["thread"].join(20)
        assert room["answer"][0] == 200 and first["answer"][0] == 200


def test_a_body_is_parsed_once(run, monkeypatch):
    """The framework parses the body once, and the route admits the request by what it parsed."""
    calls = []
    loads = json.loads
    with TestClient(make_app(run)) as client:  # the run's files read, the app up: then count
        monkeypatch.setattr(json, "loads", lambda *a, **k: calls.append(1) or loads(*a, **k))
        answer = client.post("/translate", json={"text": ["a dog", "a cat"], "beam": 2})
        assert len(calls) == 1
        assert answer.status_code == 200 and len(answer.json()["translations"]) == 2


def test_past_its_deadline_a_request_is_504_and_its_work_is_dropped(run):
    gate = Gate()
    with live_server(make_app(run, beam=2, request_timeout=0.5, on_batch=gate)) as url:
        first = in_thread(post, f"{url}/translate", {"text": "a dog"})
        gate.entered.wait(10)
        tick = time.monotonic()
        status, body = post(f"{url}/translate", {"text": ["the cat", "a man", "two men"]})
        assert status == 504 and "the work was dropped" in body["error"], body
        assert time.monotonic() - tick < 5
        gate.opened.set()
        first["thread"].join(20)
        assert first["answer"][0] == 504  # it waited in the gate past its deadline too
        assert post(f"{url}/translate", {"text": "a girl"})[0] == 200
        assert 3 not in gate.batches  # the three lines that timed out in the queue were never decoded
        assert get(f"{url}/health")["pending"] == 0


def test_the_work_of_a_client_that_left_is_dropped(run):
    gate = Gate()
    with live_server(make_app(run, beam=2, on_batch=gate)) as url:
        first = in_thread(post, f"{url}/translate", {"text": "a dog"})
        gate.entered.wait(10)
        address = urllib.parse.urlsplit(url)
        for _ in range(5):  # clients that send three lines and hang up at once
            body = json.dumps({"text": ["the cat", "a man", "two men"]}).encode()
            with socket.create_connection((address.hostname, address.port)) as sock:
                sock.sendall(
                    b"POST /translate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                    + f"Content-Length: {len(body)}\r\n\r\n".encode()
                    + body
                )
        wait_until(lambda: get(f"{url}/health")["pending"] == 1)  # theirs went when they did
        gate.opened.set()
        first["thread"].join(20)
        assert first["answer"][0] == 200
        assert post(f"{url}/translate", {"text": "a girl"})[0] == 200
        assert gate.batches == [1, 1]  # the first request's line, then the last one's: none of theirs


@contextlib.contextmanager
def served(app):
    """The app under the server `seq2seq serve` runs, its stop wired as there; yields (url, server)."""
    import uvicorn

    from seq2seq.serve.server import GracefulServer, listen

    sock = listen("127.0.0.1", 0)
    batcher = app.state.batcher
    server = GracefulServer(uvicorn.Config(app, log_level="warning"), on_stop=lambda: batcher.close(0.5))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    wait_until(lambda: server.started)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}", server
    finally:
        server.should_exit = True
        thread.join(30)
        assert not thread.is_alive()


def test_a_stop_answers_503_to_what_the_grace_does_not_reach_and_lets_the_batch_under_way_finish(run):
    gate = Gate()
    with served(make_app(run, beam=2, on_batch=gate)) as (url, server):
        first = in_thread(post, f"{url}/translate", {"text": "a dog"})
        gate.entered.wait(10)
        queued = [in_thread(post, f"{url}/translate", {"text": ["the cat", "a man"]}) for _ in range(3)]
        wait_until(lambda: get(f"{url}/health")["pending"] == 4)
        server.handle_exit(signal.SIGTERM, None)  # what SIGTERM or a first Ctrl-C does
        status, body = post(f"{url}/translate", {"text": "a girl"})  # no new work is taken
        assert status == 503 and "the server is stopping" in body["error"]
        for waiting in queued:  # the gate holds the model past the 0.5 s grace: these are shed
            waiting["thread"].join(10)
            status, body = waiting["answer"]
            assert status == 503 and "the server is stopping" in body["error"], body
        gate.opened.set()
        first["thread"].join(20)
        assert first["answer"][0] == 200  # the batch under way was answered
    assert gate.batches == [1]  # nothing queued was decoded for nobody


def test_a_second_ctrl_c_ends_the_process_at_once(monkeypatch):
    import uvicorn

    from seq2seq.serve.server import GracefulServer

    exits, stops = [], []
    monkeypatch.setattr("os._exit", exits.append)
    server = GracefulServer(uvicorn.Config(lambda *_: None), on_stop=lambda: stops.append(1))
    server.handle_exit(signal.SIGINT, None)
    assert server.should_exit and stops == [1] and exits == []
    server.handle_exit(signal.SIGINT, None)
    assert exits == [130] and stops == [1]


def test_attention_bodies_are_built_in_one_thread_beside_the_event_loop(run, monkeypatch):
    """Building JSON holds Python's lock: one thread builds them all (a pool would only add threads
    for the event loop to win the lock from: docs/serving.md, Overload)."""
    from seq2seq.serve import chunked_json

    builders, chunks = [], chunked_json.chunks

    def recorded(value, size=1 << 16):
        for block in chunks(value, size):
            builders.append(threading.current_thread())
            yield block

    monkeypatch.setattr(chunked_json, "chunks", recorded)
    with live_server(make_app(run, beam=2)) as url:
        asked = [
            in_thread(post, f"{url}/attention", {"text": text}) for text in ("a dog", "the cat", "a man")
        ]
        for waiting in asked:
            waiting["thread"].join(30)
            assert waiting["answer"][0] == 200
    assert len(builders) >= 3 and len(set(builders)) == 1
    assert builders[0].name.startswith("seq2seq-json") and builders[0] is not threading.main_thread()


def test_an_attention_body_is_sent_as_it_is_built(run):
    """Chunked, with no length: the body is never held whole before its first bytes leave."""
    import http.client

    with live_server(make_app(run, beam=2)) as url:
        host, port = urllib.parse.urlsplit(url).netloc.split(":")
        connection = http.client.HTTPConnection(host, int(port), timeout=30)
        connection.request(
            "POST", "/attention", json.dumps({"text": "a dog"}), {"Content-Type": "application/json"}
        )
        response = connection.getresponse()
        body = json.loads(response.read())
        connection.close()
    assert response.status == 200 and response.getheader("Content-Type") == "application/json"
    assert (
        response.getheader("Transfer-Encoding") == "chunked" and response.getheader("Content-Length") is None
    )
    assert body["kinds"]["cross"]["weights"]


def test_an_answered_job_is_freed_without_the_cyclic_collector(run):
    """A job and its future hold no cycle: its answer (for /attention, megabytes of maps) is freed
    when the request is done, not at a later sweep of the collector's slow generations."""
    import gc
    import weakref

    from seq2seq.decoding.options import DecodeOptions
    from seq2seq.runs.load import load_run
    from seq2seq.serve.batcher import Batcher, Job

    batcher = Batcher(*load_run(run))
    batcher.start()
    gc.disable()
    try:
        job = Job("attention", ["a dog"], DecodeOptions(beam=2))
        batcher.submit(job).result(timeout=60)
        gone = weakref.ref(job)
        del job
        # the worker lets go of its last batch's jobs when it takes the next
        batcher.submit(Job("attention", ["a cat"], DecodeOptions(beam=2))).result(timeout=60)
        assert gone() is None
        assert batcher.pending == 0 and batcher.pending_work == 0
    finally:
        gc.enable()
        batcher.stop()
