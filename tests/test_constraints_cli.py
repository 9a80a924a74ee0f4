"""Constraints where users give them: `translate --constraint/--avoid/--constraints-file/--glossary`,
the Python API and the server's `/translate` (which answers as the command line does); the beam's
record and the explorer count the phrases met; what cannot be met is one line, exit 2 (a 422)."""

import json

import pytest

from seq2seq.decoding.options import DecodeOptions
from seq2seq.decoding.search import translate
from seq2seq.decoding.terms import Glossary, Terms, constraints_line
from seq2seq.runs.load import load_run

LINES = ["a dog runs", "the cat sleeps", "a red car"]


def out_lines(result) -> list[str]:
    assert result.code == 0, result.err
    return result.out.splitlines()


def test_every_translation_holds_its_terms_and_none_to_avoid(cli, tiny_run):
    run, _ = tiny_run
    avoided = "le"
    got = out_lines(cli("translate", "--run", run, "--constraint", "chien", "--avoid", avoided, *LINES))
    model, tokenizer = load_run(run)
    for line in got:
        assert "chien" in line
    ids = translate(model, tokenizer, LINES, DecodeOptions(), constraints=[Terms(("chien",), (avoided,))] * 3)
    assert ids.best == got  # the API and the command line agree
    banned = tuple(tokenizer.encode([avoided], "target")[0])
    for tokens in ids.tokens:
        assert not any(tuple(tokens[i : i + len(banned)]) == banned for i in range(len(tokens)))


def test_a_constraints_file_and_a_glossary_give_each_line_its_own(cli, tiny_run, tmp_path):
    run, _ = tiny_run
    (tmp_path / "in.txt").write_text("\n".join(LINES) + "\n")
    (tmp_path / "c.txt").write_text('["voiture"]\n\n{"include": ["chat"], "avoid": ["le"]}\n')
    got = out_lines(
        cli(
            "translate",
            "--run",
            run,
            "--input",
            tmp_path / "in.txt",
            "--constraints-file",
            tmp_path / "c.txt",
        )
    )
    plain = out_lines(cli("translate", "--run", run, *LINES))
    assert "voiture" in got[0] and got[1] == plain[1] and "chat" in got[2]
    (tmp_path / "g.tsv").write_text("Dog\tjoue\ncar\tcourt\n")
    glossed = out_lines(cli("translate", "--run", run, "--glossary", tmp_path / "g.tsv", *LINES))
    assert glossed[1] == plain[1] and "court" in glossed[2] and glossed[0] == plain[0]  # "Dog": case counts
    folded = out_lines(
        cli("translate", "--run", run, "--glossary", tmp_path / "g.tsv", "--ignore-case", *LINES)
    )
    assert "joue" in folded[0] and folded[1] == plain[1]


def test_the_beam_trace_records_each_lines_constraints_and_the_phrases_met(cli, tiny_run, tmp_path):
    run, _ = tiny_run
    trace, page = tmp_path / "beam.jsonl", tmp_path / "page.html"
    args = ["--constraint", "chien", "--beam-trace", trace, "--attention-html", page]
    out_lines(cli("translate", "--run", run, *args, *LINES[:2]))
    for record in map(json.loads, trace.read_text().splitlines()):
        assert record["constraints"] == {"include": ["chien"], "avoid": []}
        assert {n["met"] for n in record["nodes"][1:]} == {0, 1}
    assert '"met": 1' in page.read_text()


def test_terms_are_read_as_documented():
    assert constraints_line("", "f") == Terms()
    assert constraints_line("un chien\tle chat", "f") == Terms(("un chien", "le chat"))
    assert constraints_line('{"include": ["a"], "avoid": ["b"]}', "f") == Terms(("a",), ("b",))
    glossary = Glossary.parse(["cat\tchat", "", "red car\tvoiture rouge"], "g", ignore_case=True)
    assert glossary.terms("The Cat and the RED CAR") == ("chat", "voiture rouge")
    assert glossary.terms("a catalogue, a redcar") == ()  # whole words only


@pytest.mark.parametrize(
    "args, words",
    [
        (["--constraint", "\u4e2d\u6587"], "no piece for"),
        (["--constraint", "chien", "--greedy"], "beam search"),
        (["--constraint", "chien", "--sample"], "beam search"),
        (["--constraint", "chien", "--avoid", "chien"], "a term to avoid"),
        (["--constraint", "un chien court vite", "--max-len", "2"], "above the longest output"),
        (["--beam", "2", "--constraint", "chien", "--constraint", "chat"], "holds at most 1"),
        (["--constraints-file", "{tmp}/two.txt"], "give one line of constraints a line"),
        (["--constraints-file", "{tmp}/bad.txt"], "is not readable JSON"),
        (["--glossary", "{tmp}/notab.tsv"], "one tab between two terms"),
        (["--ignore-case"], "goes with a glossary"),
    ],
)
def test_constraints_that_cannot_be_met_are_one_line_and_write_nothing(cli, tiny_run, tmp_path, args, words):
    run, _ = tiny_run
    (tmp_path / "two.txt").write_text("chien\nchat\n")  # two lines of constraints, three lines
    (tmp_path / "bad.txt").write_text('["chien"\n\n\n')
    (tmp_path / "notab.tsv").write_text("dog chien\n")
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    result = cli("translate", "--run", run, *args, "--output", tmp_path / "out.txt", *LINES)
    assert result.code == 2 and words in result.err, result.err
    assert len(result.err.strip().splitlines()) == 1 and not (tmp_path / "out.txt").exists()
