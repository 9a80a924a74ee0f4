"""When a signal raises a flag, and a pair's answer as `seq2seq check` and the server give it.

The thresholds are chosen on a development split (Multi30k's val) by `scripts/bench_trust.py`
(each flag's best F1 there), for the en->fr run docs/log.md names; they are log-probabilities and
attention masses of that model, so another run's may differ: its own bench says."""

from seq2seq.trust.signals import Signals

# chosen by `python -m scripts.bench_trust --run runs/multi30k-en-fr-1206c --data-dir DIR` on val
# (each flag's best F1 there; docs/log.md has the table, and each flag's F1 on the test splits)
OMISSION = 0.1462  # Signals.omission at or above: a source word is likely left out
HALLUCINATION = -6.4821  # Signals.hallucination at or above: the output owes its source little
UNSURE_WORD = -10.4374  # a word's log-probability below: "check this word"
REPEATED = 0.7  # a share of repeated word trigrams at or above: a loop (three words said four times)
UNCOVERED = 0.5  # a source word attended less than half an output piece's worth is listed (a rule)


def flags(s: Signals) -> list[str]:
    """The flags of one pair's signals, in a fixed order."""
    raised = []
    if s.omission >= OMISSION:
        raised.append("omission")
    if s.hallucination >= HALLUCINATION:
        raised.append("hallucination")
    if s.repetition >= REPEATED:
        raised.append("repetition")
    if any(lp < UNSURE_WORD for lp in s.word_logprobs):
        raised.append("unsure words")
    return raised


def answer(s: Signals | None, blank: str | None = None) -> dict:
    """One pair's answer: its score (higher is surer), omission and hallucination (higher where
    likelier), the flags, each target word with its log-probability (and whether to check it) and
    the source words left uncovered. `blank`: the flag of a pair with a blank side ("no source",
    "empty"), which has no signals; both sides blank: nothing to check."""
    if s is None:
        return {"score": 0.0, "omission": 0.0, "hallucination": 0.0, "flags": [blank] if blank else [],
                "words": [], "uncovered": []}  # fmt: skip
    return {
        "score": round(s.score, 4),
        "omission": round(s.omission, 4),
        "hallucination": round(s.hallucination, 4),
        "flags": flags(s),
        "words": [
            {"word": w, "logprob": round(lp, 4), "unsure": lp < UNSURE_WORD}
            for w, lp in zip(s.target_words, s.word_logprobs, strict=True)
        ],
        "uncovered": [w for w, c in zip(s.source_words, s.coverage, strict=True) if c < UNCOVERED],
    }
