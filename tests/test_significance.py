"""Paired significance against a baseline: sacreBLEU's bootstrap and randomization tests, through
the library and through `evaluate --baseline / --baseline-run`."""

import json
import random

import pytest

from seq2seq.errors import Seq2SeqError
from seq2seq.evaluate import compare
from tests.cli_helpers import run_cli
from tests.conftest import EN, FR, tiny_model, write_run

WORDS = "a dog man woman runs sits red blue car street with the on in two young girl boy plays ball"


def captions(n: int = 200, seed: int = 0) -> tuple[list[str], list[str]]:
    """References, and a system that gets about 70% of their words right."""
    rng, words = random.Random(seed), WORDS.split()
    references = [" ".join(rng.choice(words) for _ in range(rng.randint(5, 12))) for _ in range(n)]
    system = [" ".join(w if rng.random() > 0.3 else rng.choice(words) for w in r.split()) for r in references]
    return references, system


def drop_every_third_word(lines: list[str]) -> list[str]:
    return [" ".join(w for i, w in enumerate(line.split()) if i % 3 != 2) for line in lines]


@pytest.mark.parametrize("test", ["bs", "ar"])
def test_a_system_against_itself_is_not_significant(test):
    references, system = captions()
    comparison = compare(system, list(system), references, test)
    for difference in (comparison.bleu, comparison.chrf):
        assert difference.p_value == 1.0
        assert difference.system.score == difference.baseline.score


@pytest.mark.parametrize("test", ["bs", "ar"])
def test_a_clearly_worse_baseline_is_significantly_worse(test):
    references, system = captions()
    comparison = compare(system, drop_every_third_word(system), references, test)
    assert comparison.resamples == {"bs": 1000, "ar": 10000}[test]
    for difference in (comparison.bleu, comparison.chrf):
        assert difference.p_value < 0.05
        assert difference.system.score > difference.baseline.score + 5
        for estimate in (difference.system, difference.baseline):
            assert 0 < estimate.ci < 10 and abs(estimate.mean - estimate.score) < estimate.ci


def test_the_same_call_gives_the_same_numbers():
    references, system = captions()
    worse = drop_every_third_word(system)
    assert compare(system, worse, references, resamples=200) == compare(
        system, worse, references, resamples=200
    )


def test_bad_requests_are_refused():
    references, system = captions(10)
    with pytest.raises(Seq2SeqError, match="9 baseline but 10 references"):
        compare(system, system[:9], references)
    with pytest.raises(Seq2SeqError, match="is not one of bs, ar"):
        compare(system, system, references, "t-test")


@pytest.fixture(scope="module")
def test_set(tmp_path_factory):
    """A run directory and a 30-line test set it translates badly."""
    root = tmp_path_factory.mktemp("significance")
    run = write_run(root / "run", lambda v: tiny_model(vocab_size=v, seed=2))
    (root / "src").write_text("".join(f"{EN[i % 6]} {i}\n" for i in range(30)))
    (root / "ref").write_text("".join(f"{FR[i % 6]} {i}\n" for i in range(30)))
    return root, run


def evaluate(root, run, capsys, monkeypatch, *more):
    args = ["evaluate", "--run", run, "--source", root / "src", "--reference", root / "ref", "--greedy"]
    return run_cli([*args, *more], capsys, monkeypatch)


def test_evaluate_against_a_baseline_from_the_command_line(test_set, capsys, monkeypatch):
    root, run = test_set
    assert evaluate(root, run, capsys, monkeypatch, "--output", root / "hyp").code == 0
    itself = evaluate(root, run, capsys, monkeypatch, "--baseline", root / "hyp", "--json")
    report = json.loads(itself.out)["paired_test"]
    assert report["test"] == "bs" and report["resamples"] == 1000
    assert report["bleu"]["p_value"] == 1.0 and report["chrf"]["p_value"] == 1.0
    assert "seed:12345" in report["bleu"]["signature"]

    perfect = evaluate(root, run, capsys, monkeypatch, "--baseline", root / "ref", "--json", "--paired", "ar")
    report = json.loads(perfect.out)["paired_test"]
    assert report["bleu"]["baseline"]["score"] == 100.0 and report["bleu"]["p_value"] < 0.05
    assert report["chrf"]["p_value"] < 0.05 and report["resamples"] == 10000

    table = evaluate(root, run, capsys, monkeypatch, "--baseline-run", run)
    assert table.code == 0 and "p-value" in table.out and "1.0000 (not significant)" in table.out


def test_evaluate_refuses_a_baseline_that_does_not_pair_up(test_set, capsys, monkeypatch):
    root, run = test_set
    (root / "short").write_text("un chien\n")
    result = evaluate(root, run, capsys, monkeypatch, "--baseline", root / "short")
    assert result.code == 2 and "has 1 lines but the test set has 30" in result.err
    assert len(result.err.strip().splitlines()) == 1
    both = evaluate(root, run, capsys, monkeypatch, "--baseline", root / "short", "--baseline-run", run)
    assert both.code == 2 and "not both" in both.err
