"""The server steered, for both architectures: a prefix and sampling in /translate give what the
library gives; /attention lists the model's own alternatives at every position, re-decodes through
one of them (the explorer's click) and returns the beam that ran; bad steering is a 422 line."""

import math

import pytest

pytest.importorskip("fastapi", reason='the server needs the extra: pip install -e ".[serve]"')
pytest.importorskip("httpx", reason="FastAPI's test client needs httpx (the test extra)")

from fastapi.testclient import TestClient

from seq2seq.decoding.forced import score_ids
from seq2seq.decoding.options import DecodeOptions
from seq2seq.decoding.search import source_ids, translate
from seq2seq.decoding.trace import replay
from seq2seq.runs.load import load_run
from tests.conftest import caption_tokenizer
from tests.serve_helpers import SENTENCES, make_app, write_runs


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("runs")
    return write_runs(folder, caption_tokenizer(folder / "tokenizer.model"))


@pytest.fixture(scope="module", params=["transformer", "rnn"])
def served(request, runs):
    with TestClient(make_app(runs[request.param], beam=3)) as client:
        yield client, *load_run(runs[request.param])


def test_translate_with_prefixes_and_samples_is_the_librarys(served):
    client, model, tokenizer = served
    lines, prefixes = SENTENCES[:3], ["un chien", "", "deux"]
    answer = client.post("/translate", json={"text": lines, "prefix": prefixes, "max_len": 12}).json()
    library = translate(model, tokenizer, lines, DecodeOptions(beam=3, max_len=12), prefixes)
    assert answer["translations"] == library.best
    assert answer["translations"][0].startswith("un chien") and answer["translations"][2].startswith("deux")
    sampling = {"sample": True, "num_samples": 4, "seed": 9, "top_p": 0.9, "max_len": 12}
    drawn = client.post("/translate", json={"text": lines, **sampling}).json()
    library = translate(model, tokenizer, lines, DecodeOptions(beam=1, **sampling))
    texts = [[h["text"] for h in hyps] for hyps in drawn["nbest"]]
    assert texts == [[t for t, _ in hyps] for hyps in library.nbest]
    assert [len(hyps) for hyps in drawn["nbest"]] == [4, 4, 4]


def test_translate_with_constraints_is_the_librarys(served):
    from seq2seq.decoding.terms import Terms

    client, model, tokenizer = served
    lines = SENTENCES[:3]
    per_line = [["chien"], [], ["chat", "rouge"]]
    body = {"text": lines, "constraints": per_line, "avoid": ["le"], "max_len": 12}
    answer = client.post("/translate", json=body).json()
    terms = [Terms(tuple(own), ("le",)) for own in per_line]
    library = translate(model, tokenizer, lines, DecodeOptions(beam=3, max_len=12), constraints=terms)
    assert answer["translations"] == library.best
    assert "chien" in answer["translations"][0] and "rouge" in answer["translations"][2]
    everyone = client.post("/translate", json={"text": lines, "constraints": ["chat"], "max_len": 12}).json()
    assert all("chat" in line for line in everyone["translations"])


def test_alternatives_are_the_models_distributions_and_a_click_re_decodes_through_one(served):
    client, model, tokenizer = served
    text = SENTENCES[1]
    maps = client.post("/attention", json={"text": text, "alternatives": 4, "max_len": 10}).json()
    positions = maps["alternatives"]
    assert len(positions) == len(maps["target"]) and maps["forced"] == 0
    for position, piece in zip(positions, maps["target"], strict=True):
        assert position["piece"] == piece and len(position["top"]) == 4
        ps = [choice["p"] for choice in position["top"]]
        assert ps == sorted(ps, reverse=True) and sum(ps) <= 1 + 1e-6
        assert 0 <= position["entropy"] <= math.log(tokenizer.vocab_size) + 1e-6
        assert position["p"] <= ps[0] + 1e-6
    # the chosen pieces' probabilities are what forced decoding of those pieces sums
    tokens = translate(model, tokenizer, [text], DecodeOptions(beam=3, max_len=10)).tokens
    total = score_ids(model, source_ids(model, tokenizer, [text])[0], tokens)[0].total
    assert sum(math.log(p["p"]) for p in positions) == pytest.approx(total, abs=1e-4)
    # the explorer's click: the output before position 1, then that position's second alternative
    choice = next(c for c in positions[1]["top"][1:] if c["prefix"] is not None)
    again = client.post("/attention", json={"text": text, "prefix": choice["prefix"], "max_len": 10}).json()
    assert again["translation"].startswith(choice["prefix"])
    assert again["forced"] == len(tokenizer.encode([choice["prefix"]])[0])


def test_the_beam_the_server_returns_is_the_search_that_ran(served):
    client, _, tokenizer = served
    body = {"text": SENTENCES[2], "beam": 3, "beam_trace": True, "max_len": 10}
    maps = client.post("/attention", json=body).json()
    beam = maps["beam"]
    assert beam["beam"] == 3 and beam["nodes"][0]["state"] == "root"
    (best, _), *_ = replay(beam["nodes"], 3)
    assert tokenizer.decode([best])[0] == maps["translation"]
    assert (
        beam["nbest"][0]
        == max((n for n in beam["nodes"] if n["state"] == "finished"), key=lambda n: n["final"])["id"]
    )
    assert all("piece" in n for n in beam["nodes"][1:])
    assert "beam" not in client.post("/attention", json={"text": SENTENCES[2]}).json()


@pytest.mark.parametrize(
    "route, body, words",
    [
        ("/translate", {"text": ["a", "b"], "prefix": ["un"]}, "prefixes"),
        ("/translate", {"text": "a dog", "prefix": "\u4e2d\u6587"}, "no piece"),
        ("/translate", {"text": "a dog", "prefix": "un\nchien"}, "line break"),
        ("/translate", {"text": "a dog", "sample": True, "temperature": 0}, "temperature"),
        ("/translate", {"text": "a dog", "sample": True, "top_p": 1.5}, "top_p: must be"),
        ("/translate", {"text": "a dog", "sample": True, "temperature": 1e-300}, "float32"),
        ("/translate", {"text": "a dog", "sample": True, "top_p": 1e-300}, "float32"),
        ("/attention", {"text": "a dog", "sample": True, "temperature": 1e39}, "float32"),
        ("/translate", {"text": "a dog", "sample": True, "top_k": 0}, "top_k: must be"),
        ("/translate", {"text": "a dog", "sample": True, "num_samples": 65}, "num_samples: must be"),
        ("/translate", {"text": "a dog", "sample": True, "beam": 3}, "beam"),
        ("/attention", {"text": "a dog", "sample": True, "beam_trace": True}, "beam"),
        ("/translate", {"text": "a dog", "constraints": ["\u4e2d\u6587"]}, "no piece for"),
        ("/translate", {"text": "a dog", "constraints": ["chien"], "greedy": True}, "beam search"),
        ("/translate", {"text": ["a", "b"], "constraints": [["chien"]]}, "lists of constraints"),
        ("/translate", {"text": "a dog", "constraints": ["chien"], "avoid": ["chien"]}, "a term to avoid"),
        ("/translate", {"text": "a dog", "constraints": ["chien", "chat", "rouge"]}, "holds at most 2"),
        ("/translate", {"text": "a dog", "constraints": "chien"}, "constraints"),
        ("/attention", {"text": "a dog", "alternatives": 21}, "alternatives"),
        ("/attention", {"text": "a dog", "translation": "un chien", "prefix": "un"}, "prefix"),
    ],
)
def test_bad_steering_is_a_422_line(served, route, body, words):
    client, _, _ = served
    answer = client.post(route, json=body)
    assert answer.status_code == 422, answer.text
    error = answer.json()["error"]
    assert words in error and "\n" not in error
    assert client.get("/health").json()["status"] == "ok"
