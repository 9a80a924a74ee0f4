"""`seq2seq serve`: the API answers what `seq2seq translate` prints, batches concurrent requests into
one model call, answers every bad request with a one-line 4xx JSON error and keeps serving, and the
real server process drains its in-flight request on SIGTERM and exits 0."""

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason='the server needs the extra: pip install -e ".[serve]"')
pytest.importorskip("httpx", reason="FastAPI's test client needs httpx (the test extra)")

from fastapi.testclient import TestClient

from seq2seq.decoding.attention import attention
from seq2seq.errors import Seq2SeqError
from seq2seq.files.reading import one_line
from seq2seq.runs.load import load_run
from seq2seq.views.explorer import maps_json
from tests.cli_helpers import run_cli
from tests.conftest import caption_tokenizer
from tests.serve_helpers import SENTENCES, get, make_app, post, write_runs

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    return caption_tokenizer(tmp_path_factory.mktemp("tok") / "tokenizer.model")


@pytest.fixture(scope="module")
def runs(tmp_path_factory, tokenizer):
    return write_runs(tmp_path_factory.mktemp("runs"), tokenizer)


@pytest.fixture(scope="module")
def client(runs):
    with TestClient(make_app(runs["transformer"], beam=3)) as client:
        yield client


@pytest.fixture
def printed_lines(capsys, monkeypatch):
    """What `seq2seq translate --run RUN ARGS` prints, line by line (it must succeed)."""

    def translate(run, *args):
        result = run_cli(["translate", "--run", run, *args], capsys, monkeypatch)
        assert result.code == 0, result.err
        return result.out.splitlines()

    return translate


# request fields -> the same options of `seq2seq translate`
OPTIONS = {
    "the server's beam": ({}, ["--beam", "3"]),
    "greedy": ({"greedy": True}, ["--greedy"]),
    "nbest": ({"beam": 4, "nbest": 3}, ["--beam", "4", "--nbest", "3"]),
    "lengths": (
        {"length_penalty": 0.6, "min_len": 2, "max_len": 6},
        ["--beam", "3", "--length-penalty", "0.6", "--min-len", "2", "--max-len", "6"],
    ),
}


def printed(answer: dict, nbest: int) -> list[str]:
    """The lines `seq2seq translate` prints, made from a /translate answer."""
    if nbest == 1:
        return [one_line(t) for t in answer["translations"]]
    return [
        f"{i} ||| {one_line(h['text'])} ||| {h['score']:.4f}"
        for i, hyps in enumerate(answer["nbest"])
        for h in hyps
    ]


@pytest.mark.parametrize("name", list(OPTIONS))
def test_translate_answers_what_the_cli_prints(client, runs, printed_lines, name):
    fields, args = OPTIONS[name]
    response = client.post("/translate", json={"text": SENTENCES, **fields})
    assert response.status_code == 200, response.text
    answer = response.json()
    assert printed(answer, fields.get("nbest", 1)) == printed_lines(runs["transformer"], *args, *SENTENCES)
    assert answer["scores"] == [hyps[0]["score"] for hyps in answer["nbest"]]
    one = client.post("/translate", json={"text": SENTENCES[1], **fields}).json()
    assert one["translations"] == answer["translations"][1:2]


def test_concurrent_requests_are_decoded_in_one_model_call(runs, printed_lines):
    """N one-line requests at once: one batched call of N sentences, each answer the CLI's line."""
    calls = []
    app = make_app(
        runs["transformer"],
        beam=2,
        max_batch=len(SENTENCES),
        max_wait_ms=20_000,
        on_batch=lambda *c: calls.append(c),
    )
    with TestClient(app) as client, ThreadPoolExecutor(len(SENTENCES)) as pool:
        answers = list(pool.map(lambda s: client.post("/translate", json={"text": s}).json(), SENTENCES))
    assert calls == [("translate", len(SENTENCES))]  # max_batch reached: no waiting for the 20 s
    expected = printed_lines(runs["transformer"], "--beam", "2", *SENTENCES)
    assert [a["translations"][0] for a in answers] == expected


@pytest.mark.parametrize("arch", ["transformer", "rnn"])
def test_attention_maps_match_the_pieces(runs, tokenizer, arch):
    model, _ = load_run(runs[arch])
    with TestClient(make_app(runs[arch], beam=2)) as client:
        text = SENTENCES[1]
        translated = client.post("/translate", json={"text": text, "max_len": 6}).json()["translations"][0]
        maps = client.post("/attention", json={"text": text, "max_len": 6}).json()
        forced = client.post("/attention", json={"text": text, "translation": "un chien court"}).json()
    assert maps["translation"] == translated
    assert maps["source"] == [*tokenizer.pieces(text), "</s>"]
    assert forced["target"] == [*tokenizer.pieces("un chien court"), "</s>"]
    expected = {"encoder", "decoder", "cross"} if arch == "transformer" else {"cross"}
    for answer in (maps, forced):
        assert set(answer["kinds"]) == expected
        for kind in answer["kinds"].values():
            rows, cols = answer[kind["rows"]], answer[kind["cols"]]
            layers = len(kind["weights"])
            assert [len(kind["weights"][0]), len(kind["weights"][0][0]), len(kind["weights"][0][0][0])] == [
                (4 if arch == "transformer" else 1),
                len(rows),
                len(cols),
            ]
            assert layers == (2 if arch == "transformer" else 1)
    # the forced maps are the library's own, rounded
    library = maps_json(attention(model, tokenizer, text, "un chien court", alternatives=5))
    served, own = forced.pop("alternatives"), library.pop("alternatives")
    assert forced == library
    for a, b in zip(served, own, strict=True):  # one pass each: the same within float rounding
        assert [c["piece"] for c in a["top"]] == [c["piece"] for c in b["top"]]
        assert [a["p"], a["entropy"]] == pytest.approx([b["p"], b["entropy"]], abs=1e-5)


def test_info_health_openapi_and_the_explorer_page(client, tokenizer):
    info = client.get("/info").json()
    assert (info["architecture"], info["src"], info["tgt"]) == ("transformer", "en", "fr")
    assert info["vocab_size"] == tokenizer.vocab_size and info["model"]["d_model"] == 32
    assert info["limits"]["max_lines"] >= 1 and info["limits"]["max_chars"] >= 1
    assert info["defaults"] == {"beam": 3} and "val_bleu" in info
    assert client.get("/health").json()["status"] == "ok"
    assert {"/translate", "/attention", "/info", "/health"} <= set(
        client.get("/openapi.json").json()["paths"]
    )
    page = client.get("/")
    assert page.status_code == 200 and "Attention explorer" in page.text
    assert 'src="http' not in page.text and 'href="http' not in page.text  # no CDN


def huge(n: int) -> bytes:
    return json.dumps({"text": ["a dog"] * n}).encode()


JSON = {"Content-Type": "application/json"}
BAD = {  # name: (path, body bytes, headers, status, words of the message)
    "invalid JSON": ("/translate", b'{"text": "a dog",', JSON, 400, "invalid JSON"),
    "text of a wrong type": ("/translate", b'{"text": 5}', JSON, 422, "text"),
    "beam of a wrong type": ("/translate", b'{"text": "a", "beam": "5"}', JSON, 422, "beam"),
    "a body that is no object": ("/translate", b'["a dog"]', JSON, 422, "JSON object"),
    "no body": ("/translate", b"", JSON, 422, "JSON body"),
    "empty text": ("/translate", b'{"text": ""}', JSON, 422, "empty"),
    "a blank line": ("/translate", b'{"text": ["a dog", "  "]}', JSON, 422, "line 2 is empty"),
    "no lines": ("/translate", b'{"text": []}', JSON, 422, "empty list"),
    "a line break": ("/translate", b'{"text": "a dog\\nruns"}', JSON, 422, "line break"),
    "100,000 lines": ("/translate", huge(100_000), JSON, 413, "limit"),
    "a 1 MB line": ("/translate", json.dumps({"text": "a" * 1_000_000}).encode(), JSON, 413, "characters"),
    "a 3 MB body": ("/translate", json.dumps({"text": "a " * 1_500_000}).encode(), JSON, 413, "bytes"),
    "beam 0": ("/translate", b'{"text": "a", "beam": 0}', JSON, 422, "beam"),
    "beam above the vocabulary": ("/translate", b'{"text": "a", "beam": 100000}', JSON, 422, "beam"),
    "nbest above the beam": ("/translate", b'{"text": "a", "beam": 2, "nbest": 3}', JSON, 422, "nbest"),
    "length penalty NaN": ("/translate", b'{"text": "a", "length_penalty": NaN}', JSON, 422, "finite"),
    "length penalty too high": (
        "/translate",
        b'{"text": "a", "length_penalty": 50}',
        JSON,
        422,
        "length_penalty: must be between 0 and 10",  # the library names the field (DecodeOptions.check)
    ),
    "non-UTF-8 body": ("/translate", b'{"text": "caf\xe9"}', JSON, 400, "UTF-8"),
    "an unknown field": (
        "/translate",
        b'{"text": "a", "src_file": "/etc/passwd"}',
        JSON,
        422,
        "unknown field",
    ),
    "no JSON content type": ("/translate", b'{"text": "a"}', {}, 415, "Content-Type"),
    "a list to /attention": ("/attention", b'{"text": ["a"]}', JSON, 422, "text"),
    "an empty forced translation": (
        "/attention",
        b'{"text": "a", "translation": ""}',
        JSON,
        422,
        "translation",
    ),
    "a lone surrogate": ("/translate", b'{"text": "a \\ud800 b"}', JSON, 422, "surrogate"),
    "an unknown path": ("/translate/file", b"{}", JSON, 404, "Not Found"),
}


@pytest.mark.parametrize("name", list(BAD))
def test_a_bad_request_gets_one_line_of_json_and_the_server_keeps_serving(client, name):
    path, body, headers, status, words = BAD[name]
    response = client.post(path, content=body, headers=headers)
    assert response.status_code == status, response.text
    assert list(response.json()) == ["error"] and words in response.json()["error"]
    assert "\n" not in response.json()["error"] and "Traceback" not in response.text
    assert client.get("/translate").status_code == 405
    assert client.post("/translate", json={"text": "a dog", "max_len": 3}).status_code == 200


def test_lengths_beyond_int64_are_the_models_limit(client):
    response = client.post("/translate", json={"text": "a dog", "min_len": 10**20, "max_len": 10**20})
    assert response.status_code == 200 and len(response.json()["translations"]) == 1, response.text


def test_a_beam_above_the_servers_limit_is_refused_at_start(runs):
    from seq2seq.serve.app import create_app

    model, tokenizer = load_run(runs["transformer"])
    with pytest.raises(Seq2SeqError, match="--beam 100000 is above"):
        create_app(model, tokenizer, {}, beam=100000)


def test_a_failure_inside_the_model_is_a_json_500_and_the_worker_lives_on(runs):
    """Not the client's fault and not hidden: one line, no traceback, and the next request works."""
    failures = [RuntimeError("a bug\nwith a second line")]

    def on_batch(*_):
        if failures:
            raise failures.pop()

    with TestClient(
        make_app(runs["transformer"], on_batch=on_batch), raise_server_exceptions=False
    ) as client:
        broken = client.post("/translate", json={"text": "a dog", "max_len": 3})
        assert broken.status_code == 500 and broken.json() == {
            "error": "internal error (RuntimeError); the server keeps serving"
        }
        assert client.post("/translate", json={"text": "a dog", "max_len": 3}).status_code == 200


def test_the_real_server_drains_a_request_in_flight_on_sigterm_and_exits_0(runs, printed_lines):
    """A process on a free 127.0.0.1 port: it answers over HTTP; a request waiting in the batcher
    when SIGTERM arrives is answered, then the process exits 0."""
    run = runs["transformer"]
    expected = printed_lines(run, "--beam", "2", *SENTENCES[:3])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    command = [sys.executable, "-m", "seq2seq", "serve", "--run", run, "--port", "0", "--beam", "2"]
    # max-batch 2: a two-line request goes at once; a one-line request waits up to 4 s for company
    command += ["--max-batch", "2", "--max-wait-ms", "4000"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
    try:
        url = proc.stdout.readline().split(" at ")[1].split()[0]
        assert url.startswith("http://127.0.0.1:")
        wait_until(lambda: get(f"{url}/health")["status"] == "ok")
        status, answer = post(f"{url}/translate", {"text": SENTENCES[:2]})
        assert status == 200 and answer["translations"] == expected[:2]
        in_flight = {}
        thread = threading.Thread(
            target=lambda: in_flight.update(answer=post(f"{url}/translate", {"text": SENTENCES[2]}))
        )
        thread.start()
        wait_until(lambda: get(f"{url}/health")["pending"] == 1)
        proc.send_signal(signal.SIGTERM)
        thread.join(30)
        status, answer = in_flight["answer"]
        assert status == 200 and answer["translations"] == expected[2:]
        assert proc.wait(30) == 0, proc.stderr.read()
    finally:
        proc.kill()
        proc.wait()
    with pytest.raises(OSError):  # nobody listens any more
        socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1])), timeout=2)


def wait_until(condition, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            if condition():
                return
        except OSError:
            pass
        assert time.monotonic() < deadline, "the server did not get there in time"
        time.sleep(0.05)


def test_without_the_extra_serve_says_how_to_install_it(runs, capsys, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "uvicorn" else real(name, *a)
    )
    result = run_cli(["serve", "--run", runs["transformer"]], capsys, monkeypatch)
    assert result.code == 2 and result.err.strip() == (
        'error: serving needs uvicorn, which `pip install -e ".[serve]"` installs'
    )


def test_a_busy_port_is_one_line(runs, capsys, monkeypatch):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_cli(["serve", "--run", runs["transformer"], "--port", port], capsys, monkeypatch)
    assert result.code == 2 and f"cannot listen on 127.0.0.1:{port}" in result.err
    assert len(result.err.strip().splitlines()) == 1
