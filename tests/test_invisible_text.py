"""A line of only invisible characters (zero-width spaces and joiners, a byte-order mark, a soft
hyphen) is a blank line: an empty translation in the CLI and the library, the blank line's error
over HTTP, never a sentence the model invents from nothing."""

import pytest
from fastapi.testclient import TestClient

from seq2seq.data.tokenizer import is_blank
from seq2seq.decoding.search import DecodeOptions, translate
from seq2seq.runs.load import load_run
from tests.cli_helpers import run_cli
from tests.serve_helpers import make_app

INVISIBLE = [
    "\u200b",
    "\u200b\u200b",
    "\ufeff",
    "\u200d",
    "\u2060",
    " \u00ad ",
    "\u200c\t\u200b",
    "\x08",
    "\x1b\x07",
]


RUN_SEED = 4  # the `run` fixture's weights (conftest.py)


def test_invisible_characters_alone_are_blank_and_beside_text_are_not():
    assert all(is_blank(line) for line in [*INVISIBLE, "", " \t "])
    assert not any(is_blank(line) for line in ["a", "\u200ba dog", "\ufeffdog", "日本"])


def test_the_library_gives_an_invisible_line_an_empty_translation(run):
    model, tokenizer = load_run(run)
    result = translate(model, tokenizer, [*INVISIBLE, "a dog runs"], DecodeOptions(beam=2, nbest=2))
    assert result.best[: len(INVISIBLE)] == [""] * len(INVISIBLE)
    assert result.nbest[: len(INVISIBLE)] == [[]] * len(INVISIBLE) and result.best[-1] != ""


def test_the_cli_writes_an_empty_line_for_an_invisible_one(run, capsys, monkeypatch):
    stdin = "".join(line + "\n" for line in ["a dog", *INVISIBLE, "the cat"]).encode("utf-8")
    result = run_cli(["translate", "--run", run, "--greedy"], capsys, monkeypatch, stdin)
    assert result.code == 0, result.err
    out = result.out.split("\n")[:-1]
    assert len(out) == len(INVISIBLE) + 2
    assert out[1:-1] == [""] * len(INVISIBLE) and out[0] and out[-1]


@pytest.mark.parametrize("line", INVISIBLE)
def test_the_server_refuses_an_invisible_line_as_it_refuses_a_blank_one(run, line):
    with TestClient(make_app(run, beam=2)) as client:
        for body in ({"text": line}, {"text": ["a dog", line]}):
            response = client.post("/translate", json=body)
            assert response.status_code in (400, 422) and "is empty" in response.json()["error"]
        assert client.post("/attention", json={"text": line}).status_code in (400, 422)


def test_a_line_the_tokenizer_reduces_to_nothing_is_an_empty_translation_on_the_server_too(run):
    """SentencePiece's own space mark, alone, is no piece at all: the empty translation, score 0,
    as the CLI prints it (the server once failed with a 500 on it)."""
    model, tokenizer = load_run(run)
    assert tokenizer.encode(["\u2581"]) == [[]] and not is_blank("\u2581")
    assert translate(model, tokenizer, ["\u2581"], DecodeOptions(beam=2)).best == [""]
    with TestClient(make_app(run, beam=2)) as client:
        answer = client.post("/translate", json={"text": ["a dog", "\u2581"], "nbest": 2}).json()
        assert answer["translations"][1] == "" and answer["scores"][1] == 0.0
        assert answer["nbest"][1] == [{"text": "", "score": 0.0}]


def test_a_control_character_alone_is_refused_as_empty_by_the_server(run):
    """Found by the generated requests (tests/test_serve_contract.py): a lone backspace was a 500."""
    with TestClient(make_app(run, beam=2)) as client:
        response = client.post("/translate", json={"text": "\x08"})
        assert response.status_code == 422 and response.json() == {"error": "text is empty"}
