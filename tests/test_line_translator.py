"""`translate`'s lines as a library (seq2seq/stream): a group's output is the search's, numbered
from where the group starts; prefixes and terms are the lines' own; the maps are keyed by input
line; the views draw one picture as FILE and several as FILE-<line>; and `evaluate_against` tests a
run against a baseline of lines or of another model decoded the same way."""

from pathlib import Path
from types import SimpleNamespace

import pytest

from seq2seq.decoding.search import DecodeOptions, translate
from seq2seq.errors import FieldError, Seq2SeqError
from seq2seq.files.writing import Outputs
from seq2seq.paired import evaluate_against
from seq2seq.runs.load import load_run
from seq2seq.stream.lines import LineTranslator
from seq2seq.stream.steer import Steer, Terms, TraceFile, check_count, prefix_lines
from seq2seq.stream.views import Views

LINES = ["a dog runs", "the cat sleeps", "a man rides a horse"]


@pytest.fixture(scope="module")
def loaded(run):
    return load_run(run, "cpu")


def steer(prefix=None, trace=None, include=()):
    return Steer(prefix, None, TraceFile(trace), Terms(include, None, None, None, False))


def views(tmp_path, run, *, terminal=None, png=None, html=None, layer=None, head=None, warn=print):
    return Views(terminal, png, layer, head, html, run, Outputs(run=run), warn)


def test_a_group_is_the_searchs_output_numbered_from_its_first_line(loaded):
    model, tokenizer = loaded
    options = DecodeOptions(beam=2, nbest=2)
    group = LineTranslator(model, tokenizer, options, steer()).translate(LINES, 7)
    result = translate(model, tokenizer, LINES, options)
    assert group.result.nbest == result.nbest and group.maps == {} and group.notices == []
    out = group.output_lines()
    assert len(out) == 6 and [line.split(" ||| ")[0] for line in out] == ["6", "6", "7", "7", "8", "8"]
    one_best = LineTranslator(model, tokenizer, DecodeOptions(), steer()).translate(LINES, 1)
    assert one_best.output_lines() == translate(model, tokenizer, LINES, DecodeOptions()).best


def test_every_line_starts_with_the_prefix_and_the_trace_holds_each_line(loaded, tmp_path):
    model, tokenizer = loaded
    trace = tmp_path / "trace.jsonl"
    steering = steer(prefix="le", trace=trace)
    group = LineTranslator(model, tokenizer, DecodeOptions(beam=2), steering).translate(LINES, 4)
    prefixed = translate(model, tokenizer, LINES, DecodeOptions(beam=2), ["le"] * 3)
    assert group.result.best == prefixed.best
    steering.trace.finish()
    records = trace.read_text(encoding="utf-8").splitlines()
    assert [r.split(",")[0] for r in records] == ['{"line": 4', '{"line": 5', '{"line": 6']


def test_the_maps_are_keyed_by_input_line_and_a_bad_head_is_refused(loaded, run, tmp_path):
    model, tokenizer = loaded
    wanted = views(tmp_path, run, terminal=lambda *a: None)
    group = LineTranslator(model, tokenizer, DecodeOptions(), steer(), wanted).translate(["", *LINES], 10)
    assert sorted(group.maps) == [11, 12, 13]  # the blank line 10 has no map
    assert group.maps[12].source_text == LINES[1]
    bad = views(tmp_path, run, terminal=lambda *a: None, head=99)
    with pytest.raises(Seq2SeqError, match="--head must be between 1 and 4"):
        LineTranslator(model, tokenizer, DecodeOptions(), steer(), bad).translate(LINES, 1)


def test_terms_are_checked_before_any_line(loaded):
    model, tokenizer = loaded
    translator = LineTranslator(model, tokenizer, DecodeOptions(beam=1), steer(include=("chien",)))
    with pytest.raises(Seq2SeqError):
        translator.notices(LINES)  # constraints need a beam of at least 2 (or more terms)
    assert (
        LineTranslator(model, tokenizer, DecodeOptions(beam=3), steer(include=("chien",))).notices(LINES)
        == []
    )


def test_steering_errors_name_their_fields_and_the_command_line_spells_them_as_flags():
    from seq2seq.cli.options import spelled
    from seq2seq.serve.errors import spelled as named

    with pytest.raises(FieldError) as raised:
        prefix_lines("le", Path("prefixes.txt"))
    assert raised.value.fields == ("prefix", "prefix_file")
    assert spelled(raised.value) == "Invalid value for '--prefix', '--prefix-file': give one, not both"
    with pytest.raises(FieldError, match=r"constraints_file: c\.txt has 2 lines but the input has 3"):
        check_count(["a", "b"], 3, Path("c.txt"), "constraints_file")
    with pytest.raises(FieldError, match="ignore_case: goes with a glossary"):
        Terms((), (), None, None, True)
    error = FieldError(("prefixes", "include", "avoid"), "no room")
    assert spelled(error) == "Invalid value for '--prefix', '--constraint', '--avoid': no room"
    assert named(error) == "prefix, constraints, avoid: no room"
    assert steer(prefix="le").prefixes_of(3, 2) == ["le", "le"] and steer().prefixes_of(1, 2) is None


def test_one_picture_is_file_and_several_are_numbered(loaded, run, tmp_path):
    pytest.importorskip("matplotlib")
    model, tokenizer = loaded
    shown = []
    for lines, folder in ((LINES[:1], "one"), (LINES[:2], "two")):
        (tmp_path / folder).mkdir()
        png = tmp_path / folder / "map.png"
        wanted = views(tmp_path, run, terminal=lambda m, layer, head: shown.append(m.source_text), png=png)
        group = LineTranslator(model, tokenizer, DecodeOptions(), steer(), wanted).translate(lines, 1)
        for number, maps in group.maps.items():
            wanted.show(number, maps)
        wanted.finish()
    assert sorted(p.name for p in (tmp_path / "one").iterdir()) == ["map.png"]
    assert sorted(p.name for p in (tmp_path / "two").iterdir()) == ["map-1.png", "map-2.png"]
    assert shown == [LINES[0], LINES[0], LINES[1]]


def test_layer_and_head_go_with_a_drawn_map(run):
    args = SimpleNamespace(layer=2, head=None, show_attention=False, attention_png=None, attention_html=None)
    with pytest.raises(FieldError, match="layer, show_attention, attention_png: goes with a map drawn"):
        Views.of(args, run, Outputs(run=run), None, print)


def test_a_run_against_itself_as_lines_or_as_a_model_is_alike(loaded):
    model, tokenizer = loaded
    pairs = [(s, "un chien court") for s in LINES * 3]
    alone, none = evaluate_against(model, tokenizer, pairs, DecodeOptions())
    assert none is None
    as_model, by_model = evaluate_against(model, tokenizer, pairs, DecodeOptions(), (model, tokenizer))
    as_lines, by_lines = evaluate_against(model, tokenizer, pairs, DecodeOptions(), list(alone.hypotheses))
    assert as_model.hypotheses == as_lines.hypotheses == alone.hypotheses
    for comparison in (by_model, by_lines):
        assert comparison.bleu.system.score == comparison.bleu.baseline.score
        assert comparison.bleu.p_value > 0.5
