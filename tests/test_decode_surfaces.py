"""Every decoding option is declared once (DecodeOptions) and reaches every surface from there:
translate, evaluate and align take it as a flag (those that write one output a line, all but the
n-best's), the server's requests as a field (those it serves); a value out of range is the same one
line on the command line (exit 2) and over HTTP (422). --no-repeat-ngram shows it end to end."""

import dataclasses

import pytest

pytest.importorskip("fastapi", reason='the server needs the extra: pip install -e ".[serve]"')
pytest.importorskip("httpx", reason="FastAPI's test client needs httpx (the test extra)")

from fastapi.testclient import TestClient

from seq2seq.decoding.options import ONE_BEST, OPTIONS, SERVED, DecodeOptions
from seq2seq.decoding.search import translate
from seq2seq.runs.load import load_run
from seq2seq.serve.requests import TranslateRequest
from tests.serve_helpers import make_app

LINES = ["a man rides a red bike down the street", "two dogs play in the snow"]


def flag(name: str) -> str:
    f = next(f for f in dataclasses.fields(DecodeOptions) if f.name == name)
    return (f.metadata["flag"] or "--" + name.replace("_", "-")).split("/")[0]


@pytest.mark.parametrize("name", OPTIONS)
def test_an_option_is_a_flag_of_each_command_that_decodes_and_a_field_where_served(name, cli):
    pages = {command: cli(command, "--help").out for command in ("translate", "evaluate", "align")}
    assert flag(name) in pages["translate"]
    for command in ("evaluate", "align"):
        assert (flag(name) in pages[command]) == (name in ONE_BEST), command
    assert (name in TranslateRequest.model_fields) == (name in SERVED)


@pytest.mark.parametrize(
    "flags, fields, named, words",
    [
        (
            ["--no-repeat-ngram", "-1"],
            {"no_repeat_ngram": -1},
            ["no_repeat_ngram"],
            "must be at least 0, got -1",
        ),
        (
            ["--no-repeat-ngram", "9999"],
            {"no_repeat_ngram": 9999},
            ["no_repeat_ngram"],
            "must be at most the model's longest output (63 pieces), got 9999",
        ),
        (["--sample", "--top-p", "1.5"], {"sample": True, "top_p": 1.5}, ["top_p"], "must be between"),
        (["--beam", "0"], {"beam": 0}, ["beam"], "must be at least 1, got 0"),
        (["--min-len", "-1"], {"min_len": -1}, ["min_len"], "must be at least 0, got -1"),
        (["--nbest", "7"], {"nbest": 7}, ["nbest", "beam"], "must be between 1 and the beam size 5, got 7"),
        (
            ["--sample", "--beam", "3"],
            {"sample": True, "beam": 3},
            ["sample", "beam"],
            "it takes no beam (got 3)",
        ),
    ],
)
def test_a_value_out_of_range_is_one_line_on_the_command_line_and_over_http(
    run, cli, flags, fields, named, words
):
    """The library names the fields at fault; the command line spells them as its flags, the
    server as its JSON names, around the same words."""
    said = cli("translate", "--run", run, *flags, "a dog")
    assert said.code == 2 and said.err.count("\n") == 1, said.err
    spelled = ", ".join(repr("--" + name.replace("_", "-")) for name in named)
    assert said.err.startswith(f"error: Invalid value for {spelled}: ") and words in said.err, said.err
    message = said.err.strip().split(f"{spelled}: ", 1)[1]
    with TestClient(make_app(run)) as client:
        answer = client.post("/translate", json={"text": "a dog", **fields})
    assert answer.status_code == 422 and answer.json()["error"] == f"{', '.join(named)}: {message}"


def test_no_repeat_ngram_reaches_translate_evaluate_the_library_and_the_server(run, cli, tmp_path):
    model, tokenizer = load_run(run)
    plain = translate(model, tokenizer, LINES, DecodeOptions(max_len=30)).best
    blocked = translate(model, tokenizer, LINES, DecodeOptions(max_len=30, no_repeat_ngram=1)).best
    assert blocked != plain  # the untrained model repeats itself; the option changes what it says
    said = cli("translate", "--run", run, "--max-len", "30", "--no-repeat-ngram", "1", *LINES)
    assert said.code == 0 and said.out.splitlines() == blocked
    (tmp_path / "src").write_text("\n".join(LINES) + "\n")
    (tmp_path / "ref").write_text("\n".join(LINES) + "\n")
    scored = cli(
        "evaluate", "--run", run, "--source", tmp_path / "src", "--reference", tmp_path / "ref",
        "--max-len", "30", "--no-repeat-ngram", "1", "--output", tmp_path / "hyp",
    )  # fmt: skip
    assert scored.code == 0 and (tmp_path / "hyp").read_text().splitlines() == blocked
    with TestClient(make_app(run)) as client:
        answer = client.post("/translate", json={"text": LINES, "max_len": 30, "no_repeat_ngram": 1})
    assert answer.json()["translations"] == blocked
