"""The WMT 2021 terminology task's measures (Alam et al. 2021, "On the Evaluation of Machine
Translation for Terminology Consistency"), as implemented here for one target term list a line:

- exact match: the share of the terms the output holds (lowercased, as whole words);
- window overlap: for each term both the output and the reference hold, the share of the
  reference's words within WINDOW words of the term (the term and punctuation left out) that are
  also within WINDOW words of it in the output; the mean over those terms;
- 1 - TERm: one minus TER in which an edit touching a term's word costs 2 (TERM_WEIGHT) and any
  other 1, over the reference's length weighted the same way. Here without TER's shifts (the
  task's script shifts phrases; this is plain weighted word edit distance, so it is a little
  harsher on reordered output).

And BLEU and chrF with every term's words masked out of both sides, so that a term forced into the
output earns nothing by itself: what is left says whether the rest of the sentence kept up.
"""

import re
import string

from seq2seq.evaluate import score

WINDOW = 2
TERM_WEIGHT = 2.0
PUNCTUATION = string.punctuation + "«»“”\u2019…"


def words(text: str) -> list[str]:
    """Lowercased whitespace words, their punctuation stripped (words of punctuation alone left out)."""
    return [w for w in (t.lower().strip(PUNCTUATION) for t in text.split()) if w]


def term_words(terms: tuple[str, ...]) -> set[str]:
    return {w for t in terms for w in words(t)}


def holds(text: str, term: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(term.lower())}(?!\w)", text.lower()) is not None


def exact_match(outputs: list[str], terms: list[tuple[str, ...]]) -> float:
    said = [holds(out, t) for out, ts in zip(outputs, terms, strict=True) for t in ts]
    return sum(said) / max(len(said), 1)


def _around(tokens: list[str], term: list[str]) -> set[str] | None:
    """The words within WINDOW of the first occurrence of `term` in `tokens` (None: not there)."""
    for i in range(len(tokens) - len(term) + 1):
        if tokens[i : i + len(term)] == term:
            return set(tokens[max(0, i - WINDOW) : i]) | set(tokens[i + len(term) : i + len(term) + WINDOW])
    return None


def window_overlap(outputs: list[str], references: list[str], terms: list[tuple[str, ...]]) -> float:
    shares = []
    for out, ref, ts in zip(outputs, references, terms, strict=True):
        for term in ts:
            mine, theirs = _around(words(out), words(term)), _around(words(ref), words(term))
            if mine is not None and theirs:
                shares.append(len(mine & theirs) / len(theirs))
    return sum(shares) / max(len(shares), 1)


def _weighted_edits(hyp: list[str], ref: list[str], heavy: set[str]) -> float:
    cost = [TERM_WEIGHT if w in heavy else 1.0 for w in ref]
    hcost = [TERM_WEIGHT if w in heavy else 1.0 for w in hyp]
    row = [0.0]
    for c in cost:
        row.append(row[-1] + c)  # deleting the reference's words: inserting them into the output
    for i, h in enumerate(hyp, start=1):
        new = [row[0] + hcost[i - 1]]
        for j, r in enumerate(ref, start=1):
            sub = 0.0 if h == r else max(hcost[i - 1], cost[j - 1])
            new.append(min(row[j - 1] + sub, row[j] + hcost[i - 1], new[j - 1] + cost[j - 1]))
        row = new
    return row[-1]


def one_minus_term(outputs: list[str], references: list[str], terms: list[tuple[str, ...]]) -> float:
    edits = length = 0.0
    for out, ref, ts in zip(outputs, references, terms, strict=True):
        heavy = term_words(ts)
        edits += _weighted_edits(words(out), words(ref), heavy)
        length += sum(TERM_WEIGHT if w in heavy else 1.0 for w in words(ref))
    return 1.0 - edits / max(length, 1.0)


def masked(text: str, terms: tuple[str, ...]) -> str:
    """`text` without the words of its terms (whole words, any case)."""
    drop = term_words(terms)
    return " ".join(t for t in text.split() if t.lower().strip(PUNCTUATION) not in drop)


def masked_scores(
    outputs: list[str], references: list[str], terms: list[tuple[str, ...]]
) -> tuple[float, float]:
    """BLEU and chrF with every term's words masked out of both sides."""
    s = score(
        [masked(o, t) for o, t in zip(outputs, terms, strict=True)],
        [masked(r, t) for r, t in zip(references, terms, strict=True)],
    )
    return s.bleu, s.chrf
