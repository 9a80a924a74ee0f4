"""An evaluation as `evaluate --json` prints it (seq2seq/report.py): the scores rounded as printed,
every signature, what was scored; a paired test's estimates and p-values per metric."""

from types import SimpleNamespace

from seq2seq.report import paired_json, report_json


def test_the_report_holds_the_scores_rounded_and_what_was_scored():
    scores = SimpleNamespace(
        bleu=41.23456, chrf=66.789, signature="s", bleu_signature="b", chrf_signature="c", sentences=12
    )
    report = report_json(SimpleNamespace(scores=scores, seconds=3.14159), 5, "multi30k test", "runs/x")
    assert report == {
        "bleu": 41.23, "chrf": 66.79, "signature": "s", "bleu_signature": "b", "chrf_signature": "c",
        "sentences": 12, "seconds": 3.14, "beam": 5, "test_set": "multi30k test", "run": "runs/x",
    }  # fmt: skip


def test_a_paired_test_gives_each_metric_both_systems_and_its_p_value():
    from dataclasses import dataclass

    @dataclass
    class Estimate:
        score: float
        low: float

    def difference(p):
        return SimpleNamespace(
            system=Estimate(40.123456, 39.0), baseline=Estimate(38.0, 37.5), p_value=p, signature="sig"
        )

    comparison = SimpleNamespace(
        test="bs", resamples=1000, bleu=difference(0.0123456789), chrf=difference(0.5)
    )
    out = paired_json(comparison, "other.txt")
    assert out["test"] == "bs" and out["resamples"] == 1000 and out["baseline"] == "other.txt"
    assert out["bleu"] == {
        "system": {"score": 40.1235, "low": 39.0},
        "baseline": {"score": 38.0, "low": 37.5},
        "p_value": 0.012346,
        "signature": "sig",
    }
    assert out["chrf"]["p_value"] == 0.5
