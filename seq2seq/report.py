"""An evaluation as the JSON `seq2seq evaluate --json` prints: the scores of a run's translations
(`evaluate.evaluate`'s result), a paired test against a baseline (`evaluate.compare`'s) and, with
--confidence, each line with its sentence chrF and its trust (trust/flags.py's answers)."""

from dataclasses import asdict
from pathlib import Path


def report_json(result, beam: int, what: str, run: Path) -> dict:
    """`evaluate --json`'s object: the scores with their signatures, the time, what was scored."""
    return {
        "bleu": round(result.scores.bleu, 2),
        "chrf": round(result.scores.chrf, 2),
        "signature": result.scores.signature,
        "bleu_signature": result.scores.bleu_signature,
        "chrf_signature": result.scores.chrf_signature,
        "sentences": result.scores.sentences,
        "seconds": round(result.seconds, 2),
        "beam": beam,
        "test_set": what,
        "run": str(run),
    }


def paired_json(comparison, baseline: str) -> dict:
    """The paired test as JSON: for each metric, both systems' estimates and the p-value."""

    def rounded(d: dict) -> dict:
        return {k: round(v, 4) if isinstance(v, float) else v for k, v in d.items()}

    out = {"test": comparison.test, "resamples": comparison.resamples, "baseline": baseline}
    for metric in ("bleu", "chrf"):
        difference = getattr(comparison, metric)
        out[metric] = {
            "system": rounded(asdict(difference.system)),
            "baseline": rounded(asdict(difference.baseline)),
            "p_value": round(difference.p_value, 6),
            "signature": difference.signature,
        }
    return out


def lines_json(pairs: list[tuple[str, str]], hypotheses: list[str], answers: list[dict]) -> list[dict]:
    """Each line: its number, source, hypothesis, reference, sentence chrF and trust answer."""
    from sacrebleu import sentence_chrf

    return [
        {"line": n, "source": s, "hypothesis": h, "reference": r,
         "chrf": round(sentence_chrf(h, [r]).score, 2), **a}
        for n, ((s, r), h, a) in enumerate(zip(pairs, hypotheses, answers, strict=True), start=1)
    ]  # fmt: skip


def flagged(answers: list[dict]) -> dict[str, int]:
    """How many lines raise each flag."""
    counts: dict[str, int] = {}
    for a in answers:
        for flag in a["flags"]:
            counts[flag] = counts.get(flag, 0) + 1
    return counts
