"""`seq2seq align`: a line out per pair in, scores against gold, and one-line errors on bad input."""

import json
import re
import shutil

import pytest

from seq2seq.alignment.api import align
from seq2seq.alignment.extract import extract
from seq2seq.alignment.pharaoh import parse_line
from seq2seq.runs.load import load_run
from tests.conftest import EN, FR
from tests.helpers import turned_round


@pytest.fixture
def pairs(tmp_path):
    (tmp_path / "src.txt").write_text("\n".join(EN[:4]) + "\n")
    (tmp_path / "tgt.txt").write_text("\n".join(FR[:4]) + "\n")
    gold = "0-0 1-1 2-2\n0-0 1-1 2-2\n0-0 1-1 2?2\n0-0 2-1 1-2\n"  # "a red car": "une voiture rouge"
    (tmp_path / "gold.txt").write_text(gold)
    return tmp_path


def args(run, pairs, *more):
    return ["align", "--run", run, "--source", pairs / "src.txt", "--target", pairs / "tgt.txt", *more]


@pytest.mark.parametrize("method", ["attention", "shift", "gradxinput", "ig"])
def test_a_line_of_links_per_pair_within_its_words(cli, tiny_run, pairs, method):
    result = cli(*args(tiny_run[0], pairs, "--method", method, "--steps", "4"))
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert len(lines) == 4
    for line, source, target in zip(lines, EN, FR, strict=False):
        links = parse_line(line, "out").sure
        assert len(links) == len(target.split())  # argmax: one link per target word
        assert all(i < len(source.split()) and j < len(target.split()) for i, j in links)


def test_without_a_target_the_models_own_translation_is_aligned(cli, tiny_run, pairs):
    (pairs / "src.txt").write_text("a dog runs\n\nthe cat sleeps\n")
    result = cli("align", "--run", tiny_run[0], "--source", pairs / "src.txt", "--json")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert len(lines) == 3 and json.loads(lines[1]) == []  # a blank line gives an empty one


def test_gold_scores_and_the_table_of_heads(cli, tiny_run, pairs):
    result = cli(*args(tiny_run[0], pairs, "--gold", pairs / "gold.txt", "--json"))
    assert result.code == 0, result.err
    (row,) = map(json.loads, result.out.splitlines())
    assert row["sure"] == 11 and row["possible"] == 12 and row["links"] == 12 and 0 <= row["aer"] <= 1
    table = cli(*args(tiny_run[0], pairs, "--gold", pairs / "gold.txt", "--all-heads", "--json"))
    assert table.code == 0, table.err
    rows = [json.loads(line) for line in table.out.splitlines()]
    assert any(r["method"] == "attention layer 1 head 1" for r in rows)
    mean = next(
        r
        for r in rows
        if r["method"].endswith("mean of heads") and r["method"] != "attention layer 1 mean of heads"
    )
    assert mean["aer"] == pytest.approx(row["aer"])  # the last layer's mean: the default method


@pytest.mark.parametrize(
    "layer, position, read_as",
    [
        (2, "input", ["--method", "shift", "--layer", "2", "--head", "1"]),
        (None, "output", ["--method", "attention", "--layer", "1", "--head", "1"]),  # the penultimate
    ],
)
def test_a_guided_run_is_aligned_with_the_head_it_trained(cli, tiny_run, pairs, layer, position, read_as):
    run = pairs / "guided"
    shutil.copytree(tiny_run[0], run)
    sections = json.loads((run / "config.json").read_text())
    guidance = {"guided_alignment": "train.align", "guided_layer": layer, "guided_position": position}
    sections["train"].update(guidance)
    (run / "config.json").write_text(json.dumps(sections))
    scored = lambda *more: cli(*args(run, pairs, "--gold", pairs / "gold.txt", "--json", *more))  # noqa: E731
    default, explicit = scored(), scored(*read_as)
    assert default.code == 0 and explicit.code == 0, default.err + explicit.err
    assert json.loads(default.out) == json.loads(explicit.out)
    assert "mean of heads" not in json.loads(default.out)["method"]
    said = f"the head --guided-alignment trained: layer {read_as[3]} head 1"
    assert said in default.err and said not in explicit.err
    # a method, layer or head given is what aligns: here the unguided run's, read the same way
    unguided = cli(*args(tiny_run[0], pairs, "--gold", pairs / "gold.txt", "--json", "--method", "attention"))
    assert json.loads(scored("--method", "attention").out) == json.loads(unguided.out)


def link_sets(result) -> list[set[tuple[int, int]]]:
    assert result.code == 0, result.err
    return [set(map(tuple, json.loads(line))) for line in result.out.splitlines()]


@pytest.mark.parametrize("rule", ["argmax", "grow"])
def test_a_reverse_run_aligns_by_the_mean_of_the_two_directions(cli, tiny_run, pairs, rule):
    back = turned_round(tiny_run, pairs)
    sources, targets = EN[:4], FR[:4]
    ahead = align(*load_run(tiny_run[0]), sources, targets)
    behind = align(*load_run(back), targets, sources)
    expected = [extract((f.scores + r.scores.T) / 2, rule) for f, r in zip(ahead, behind, strict=True)]
    read = ("--reverse-run", back, "--method", "attention", "--extract", rule, "--json")
    both = link_sets(cli(*args(tiny_run[0], pairs, *read)))
    assert both == expected
    # without a target, the reverse run is forced through the forward run's own translations
    (pairs / "src.txt").write_text("a dog runs\n\nthe cat sleeps\n")
    symmetrized = read
    own = cli("align", "--run", tiny_run[0], "--source", pairs / "src.txt", *symmetrized)
    assert len(link_sets(own)) == 3 and link_sets(own)[1] == set()
    for side in ("src.txt", "tgt.txt"):
        (pairs / side).write_text("")
    assert link_sets(cli(*args(tiny_run[0], pairs, *symmetrized))) == []  # nothing in, nothing out


@pytest.mark.parametrize("combine", ["harmonic", "product"])
def test_a_reverse_run_combines_the_directions_as_asked(cli, tiny_run, pairs, combine):
    from seq2seq.alignment.api import COMBINATIONS

    back = turned_round(tiny_run, pairs)
    ahead = align(*load_run(tiny_run[0]), EN[:4], FR[:4])
    behind = align(*load_run(back), FR[:4], EN[:4])
    expected = [
        extract(COMBINATIONS[combine](f.scores, r.scores.T), "threshold", 0.2)
        for f, r in zip(ahead, behind, strict=True)
    ]
    asked = ("--reverse-run", back, "--combine", combine, "--method", "attention", "--extract", "threshold")
    asked += ("--threshold", "0.2")
    assert link_sets(cli(*args(tiny_run[0], pairs, *asked, "--json"))) == expected
    alone = cli(*args(tiny_run[0], pairs, "--combine", combine))
    assert alone.code == 2 and "--combine" in alone.err and "--reverse-run" in alone.err, alone.err


@pytest.mark.parametrize(
    "turn, more, message",
    [
        (False, ["--output"], "translates en->fr, not fr->en"),
        (True, ["--baseline", "eflomal", "--output"], "--reverse-run"),
    ],
)
def test_a_reverse_run_must_translate_the_other_way(cli, tiny_run, pairs, turn, more, message):
    back = turned_round(tiny_run, pairs) if turn else tiny_run[0]
    out = pairs / "links.txt"
    result = cli(*args(tiny_run[0], pairs, "--reverse-run", back, *more, out))
    assert result.code == 2 and message in result.err, result.err
    assert not out.exists()


def test_a_line_too_long_for_the_reverse_run_is_named_as_the_users_line(cli, tiny_run, pairs):
    """The reverse run reads the pairs turned round: a line too long for it (here a run of 8
    positions) is named as the user's line (the reverse run's source is the user's target)."""
    back = turned_round(tiny_run, pairs)
    sections = json.loads((back / "config.json").read_text())
    sections["model"]["max_positions"] = 8
    (back / "config.json").write_text(json.dumps(sections))
    out = pairs / "links.txt"
    result = cli(*args(tiny_run[0], pairs, "--reverse-run", back, "--output", out))
    said = re.search(
        r"the reverse run reads each pair turned round: (source|target) line \d+ has", result.err
    )
    assert result.code == 2 and said, result.err
    assert not out.exists()


def test_a_source_longer_than_the_model_reads_is_refused_not_cut(cli, tiny_run, pairs):
    """A source past the model's positions would lose its last words (and a gold link to them would
    count as missed): refused in one line, as a target that long is."""
    (pairs / "src.txt").write_text("\n".join([*EN[:3], "red " * 300]) + "\n")
    out = pairs / "links.txt"
    for more in ([], ["--target", pairs / "tgt.txt"]):
        result = cli("align", "--run", tiny_run[0], "--source", pairs / "src.txt", *more, "--output", out)
        said = "source line 4 has" in result.err and "the model's limit is 255" in result.err
        assert result.code == 2 and said, result.err
        assert not out.exists()


def test_eflomal_aligns_beside_the_model(cli, tiny_run, pairs):
    pytest.importorskip("eflomal")
    result = cli(*args(tiny_run[0], pairs, "--baseline", "eflomal", "--data-dir", tiny_run[1]))
    assert result.code == 0, result.err
    assert len(result.out.splitlines()) == 4


@pytest.mark.parametrize(
    "gold, target, message",
    [
        ("0-0\n0-0\n", None, "gold.txt has 2 lines of links for 4 sentence pairs"),
        ("0-0\n0-0\n0-0\n0-x\n", None, "gold.txt line 4: '0-x' is not a link"),
        ("0-0\n0-0\n0-0\n5-0\n", None, "gold.txt line 4: link 5-0 is out of range"),
        ("0-0\n" * 4, "un chien court\n", "has 4 lines but"),
        ("0-0\n" * 4, "un chien court\n\nle chat dort\nune voiture rouge\n", "line 2: the target is blank"),
        ("0-0\n" * 4, "un chien court\ndeux\nle chat dort\n" + "rouge " * 80 + "\n", "target line 4 has"),
    ],
)
def test_bad_pairs_and_gold_are_one_line_errors_and_write_nothing(
    cli, tiny_run, pairs, gold, target, message
):
    (pairs / "gold.txt").write_text(gold)
    if target is not None:
        (pairs / "tgt.txt").write_text(target)
    out = pairs / "links.txt"
    result = cli(*args(tiny_run[0], pairs, "--gold", pairs / "gold.txt", "--output", out))
    assert result.code == 2 and message in result.err, result.err
    assert len(result.err.strip().splitlines()) == 1 and not out.exists()


@pytest.mark.parametrize("option", ["--layer", "--head"])
def test_a_layer_or_head_out_of_range_names_the_cross_attentions(cli, tiny_run, pairs, option):
    out = pairs / "links.txt"
    result = cli(*args(tiny_run[0], pairs, option, "99", "--output", out))
    assert result.code == 2 and f"{option} must be between 1 and" in result.err, result.err
    assert "(the cross-attention's" in result.err and not out.exists()


def test_all_heads_needs_gold_and_an_attention_method(cli, tiny_run, pairs):
    result = cli(*args(tiny_run[0], pairs, "--all-heads"))
    assert result.code == 2 and "--all-heads" in result.err


def test_pictures_of_each_pair_with_its_links(cli, tiny_run, pairs):
    pytest.importorskip("matplotlib")
    png = pairs / "links.png"
    result = cli(
        *args(tiny_run[0], pairs, "--gold", pairs / "gold.txt", "--attention-png", png, "--steps", "2")
    )
    assert result.code == 0, result.err
    for line in range(1, 5):
        assert (pairs / f"links-{line}.png").read_bytes().startswith(b"\x89PNG")
    refused = cli(*args(tiny_run[0], pairs, "--baseline", "eflomal", "--attention-png", png))
    assert refused.code == 2 and "--attention-png" in refused.err


def test_markup_is_placed_into_the_targets_through_the_links(cli, tiny_run, pairs):
    """`align --markup`: each target with the source's tags, placed by the documents' code over the
    links `align` gives for the plain pairs, drawn by the rule `translate` places tags by
    (intersect): the same links, the same placement."""
    from seq2seq.documents.html import tagged_line
    from seq2seq.documents.placing import place

    plain = (pairs / "src.txt").read_text().splitlines()
    tagged = [f"<b>{line.split()[0]}</b> " + " ".join(line.split()[1:]) + " <br>" for line in plain]
    (pairs / "tagged.txt").write_text("\n".join(tagged) + "\n")
    links = cli(*args(tiny_run[0], pairs, "--json", "--extract", "intersect"))
    assert links.code == 0 and links.out != cli(*args(tiny_run[0], pairs, "--json")).out, links.err
    placed = cli(
        "align",
        "--run",
        tiny_run[0],
        "--source",
        pairs / "tagged.txt",
        "--target",
        pairs / "tgt.txt",
        "--markup",
    )
    assert placed.code == 0, placed.err
    targets = (pairs / "tgt.txt").read_text().splitlines()
    for number, (line, target, found, out) in enumerate(
        zip(tagged, targets, links.out.splitlines(), placed.out.splitlines(), strict=True), start=1
    ):
        run = tagged_line(line, number)
        expected = place(run, [(0, len(run.text))], [target], [{tuple(k) for k in json.loads(found)}]).text
        assert out == expected and out.count("<b>") == out.count("</b>") == 1 and "<br>" in out
    markup = ["--markup", "--extract", "argmax"]  # a rule given is the rule used
    by_argmax = cli(
        *args(tiny_run[0], pairs, *markup)[:4], pairs / "tagged.txt", *args(tiny_run[0], pairs)[5:], *markup
    )
    assert by_argmax.code == 0 and by_argmax.out != placed.out, by_argmax.err
    refused = cli("align", "--run", tiny_run[0], "--source", pairs / "tagged.txt", "--markup")
    assert refused.code == 2 and "needs --target" in refused.err


def test_an_unguided_run_is_read_with_the_head_the_development_half_chooses(cli, tiny_run, pairs):
    from seq2seq.alignment.aligner import development_half
    from seq2seq.alignment.api import head_scores

    default = cli(*args(tiny_run[0], pairs, "--json"))
    said = re.search(r"aligning with attention layer (\d) (head (\d)|mean of heads), the gold set's "
                     r"development half's best \(AER (\S+)\)", default.err)  # fmt: skip
    assert default.code == 0 and said, default.err
    model, tokenizer = load_run(tiny_run[0])
    table, _ = head_scores(model, tokenizer, *development_half(("en", "fr")), shifted=False)
    (layer, head), best = min(table.items(), key=lambda item: item[1].aer)
    assert (int(said[1]), said[3] and int(said[3])) == (layer, head) and said[4] == f"{best.aer:.3f}"
    read = ("--layer", str(layer)) + (() if head is None else ("--head", str(head)))
    assert default.out == cli(*args(tiny_run[0], pairs, "--json", *read)).out
    # a run between languages the gold set does not pair: the last layer's mean, nothing said
    other = pairs / "de"
    shutil.copytree(tiny_run[0], other)
    sections = json.loads((other / "config.json").read_text())
    sections["train"].update(tgt="de")
    (other / "config.json").write_text(json.dumps(sections))
    plain = cli(*args(other, pairs, "--json"))
    assert plain.code == 0 and "aligning" not in plain.err
    assert plain.out == cli(*args(tiny_run[0], pairs, "--json", "--method", "attention")).out
