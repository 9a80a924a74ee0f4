"""A pair's answer as `seq2seq check`, `translate --confidence`, the server and the explorer give
it: the sentence score, how likely an omission and a hallucination are (calibration.py's
detectors), the flags, each word's log-probability with a mark where to check it, and the source
words left uncovered."""

from seq2seq.alignment.words import piece_words
from seq2seq.data.tokenizer import is_blank
from seq2seq.trust.calibration import REPEATED, UNCOVERED, Calibration
from seq2seq.trust.signals import Signals, check_pairs

MARK = "(?)"  # after a word to check, in `translate --confidence marks`' text


def flags(s: Signals, calibration: Calibration) -> list[str]:
    """The flags of one pair's signals, in a fixed order. A word to check is marked on the word
    (`answer`'s words), not flagged on the line: a person's good translation holds words the model
    finds unlikely, and a line flag for each would flag most of them."""
    raised = []
    for name in ("omission", "hallucination"):
        detector = getattr(calibration, name)
        if detector.probability(s) >= detector.threshold:
            raised.append(name)
    if s.repetition >= REPEATED:
        raised.append("repetition")
    return raised


def answer(s: Signals | None, calibration: Calibration, blank: str | None = None) -> dict:
    """One pair's answer: its score (mean log-probability a piece, higher is surer), omission and
    hallucination (the probability of each), the flags, each target word with its log-probability
    (and whether to check it) and the source words left uncovered; `dependence` where it was
    measured. `blank`: the flag of a pair with a blank side ("no source", "empty"), which has no
    signals; both sides blank: nothing to check."""
    if s is None:
        return {"score": 0.0, "omission": 0.0, "hallucination": 0.0, "flags": [blank] if blank else [],
                "words": [], "uncovered": [], "coverage": []}  # fmt: skip
    out = {
        "score": round(s.score, 4),
        "omission": round(calibration.omission.probability(s), 4),
        "hallucination": round(calibration.hallucination.probability(s), 4),
        "flags": flags(s, calibration),
        "words": [
            {"word": w, "logprob": round(lp, 4), "unsure": lp <= calibration.unsure_word}
            for w, lp in zip(s.target_words, s.word_logprobs, strict=True)
        ],
        "uncovered": [w for w, c in zip(s.source_words, s.coverage, strict=True) if c < UNCOVERED],
        "coverage": [
            {"word": w, "coverage": round(c, 4)} for w, c in zip(s.source_words, s.coverage, strict=True)
        ],
    }
    if s.dependence is not None:
        out["dependence"] = round(s.dependence, 4)
    return out


def blank_side(source: str, target: str) -> str | None:
    """None for a pair to check; else the flag of its blank side ("no source", "empty"), or ""
    where both are blank (nothing to check, nothing flagged)."""
    return {(False, False): None, (True, False): "no source", (False, True): "empty", (True, True): ""}[
        is_blank(source), is_blank(target)
    ]


def to_check(sources: list[str], targets: list[str]) -> tuple[list[int], list[str | None]]:
    """The pairs to check (their indices), and each pair's blank side (`blank_side`)."""
    blanks = [blank_side(s, t) for s, t in zip(sources, targets, strict=True)]
    return [i for i, blank in enumerate(blanks) if blank is None], blanks


def checkable(model, tokenizer, sources: list[str], targets: list[str]) -> tuple[list[int], list, set[int]]:
    """`to_check`, less the pairs whose translation is longer than the model's longest output
    (flagged "too long" in their place, the others still checked), and the pairs whose source the
    model reads cut to its longest source (checked, and flagged "source cut")."""
    todo, blanks = to_check(sources, targets)
    most = model.cfg.max_positions - 1  # the longest output, and the longest source before its EOS
    lengths = tokenizer.encode([targets[i] for i in todo], "target")
    for i, ids in zip(todo, lengths, strict=True):
        if len(ids) > most:
            blanks[i] = "too long"
    todo = [i for i in todo if blanks[i] is None]
    cut = {
        i
        for i, ids in zip(todo, tokenizer.encode([sources[i] for i in todo]), strict=True)
        if len(ids) > most
    }
    return todo, blanks, cut


def answers(
    found: dict[int, Signals], blanks: list[str | None], calibration: Calibration, cut: set[int] = frozenset()
) -> list[dict]:
    """Each pair's answer: from its signals (`found`, by index) or its blank side; a pair whose
    source was cut also flagged "source cut" (an omission in its tail cannot be seen)."""
    out = [answer(found.get(i), calibration, blank or None) for i, blank in enumerate(blanks)]
    for i in cut:
        out[i]["flags"].append("source cut")
    return out


def check_translations(
    model, tokenizer, sources: list[str], targets: list[str], calibration: Calibration, **checking
) -> list[dict]:
    """Each pair's answer, in order; a pair with a blank side or a translation too long for the
    model is flagged, not checked. `checking`: check_pairs' batch_size and dependence."""
    todo, blanks, cut = checkable(model, tokenizer, sources, targets)
    found = check_pairs(model, tokenizer, [sources[i] for i in todo], [targets[i] for i in todo], **checking)
    return answers(dict(zip(todo, found, strict=True)), blanks, calibration, cut)


def piece_marks(a: dict, source: list[str], target: list[str], calibration: Calibration) -> dict:
    """What the explorer marks on a sentence's strips (`source`, `target`: its pieces, each ending
    with "</s>"): the answer's sentence figures, and for each piece its word's (target: the word,
    its log-probability, whether to check it; source: the word, its coverage, whether uncovered),
    None for "</s>"."""

    def by_piece(pieces: list[str], words: list[dict]) -> list[dict | None]:
        index = piece_words(pieces[:-1]).tolist() if len(pieces) > 1 else []
        if len(words) != (index[-1] + 1 if index else 0):  # no words to mark (a blank side)
            return [None] * len(pieces)
        return [words[w] for w in index] + [None]

    sentence = {k: a[k] for k in ("score", "omission", "hallucination", "flags")}
    return sentence | {
        "unsure_below": calibration.unsure_word,
        "uncovered_below": UNCOVERED,
        "target": by_piece(target, a["words"]),
        "source": [
            None if c is None else c | {"uncovered": c["coverage"] < UNCOVERED}
            for c in by_piece(source, a["coverage"])
        ],
    }


def marked(translation: str, a: dict) -> str:
    """The translation with MARK after each word to check (its words as the answer holds them,
    one space apart), a tab, the score, a tab and the flags (comma-separated; none: empty)."""
    words = [w["word"] + (MARK if w["unsure"] else "") for w in a["words"]] if a["words"] else [translation]
    return f"{' '.join(words)}\t{a['score']:.4f}\t{','.join(a['flags'])}"
