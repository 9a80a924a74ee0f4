"""The errors a trust signal should catch, made from correct pairs (a development or test split's
own references), so that the flags can be fitted and measured without hand labels. Every pair as
it is ("correct"), and each pair made wrong one way, against its own source:

- omission, clause: the reference cut before its last clause (at the last comma or one of
  CLAUSE's words past its second word), the full stop kept; pairs with no such place are skipped;
- omission, words: the reference without its two longest words (content words: 4 letters or more);
- hallucination, other: the reference of another pair of the split (fluent, unrelated);
- hallucination, loop: the reference's first three words said four times;
- wrong word: one content word of the reference swapped for a content word of another reference.

Seeded: the same pairs and seed make the same cases.

For the words of a translation, `word_labels` says which the reference holds: a word of the model's
own translation that its reference lacks is likelier wrong (the reference stands in for the
post-edit that word-level quality estimation labels against)."""

import random
import string
from collections import Counter

# the words a clause (or a phrase a caption can end without) starts with: French, and English
CLAUSE = {"et", "qui", "avec", "dans", "sur", "pendant", "tandis", "devant", "près"} | {
    "and",
    "who",
    "with",
    "in",
}
KINDS = ("omission, clause", "omission, words", "hallucination, other", "hallucination, loop", "wrong word")


def content(words: list[str]) -> list[int]:
    return [i for i, w in enumerate(words) if sum(c.isalpha() for c in w) >= 4]


def cut_clause(words: list[str]) -> list[str] | None:
    """The words before the last clause (the final full stop kept), or None where none starts."""
    starts = [
        i for i, w in enumerate(words) if i >= 2 and (w.lower() in CLAUSE or words[i - 1].endswith(","))
    ]
    if not starts:
        return None
    kept = words[: starts[-1]]
    kept[-1] = kept[-1].rstrip(",")
    return kept + (["."] if words[-1] == "." or words[-1].endswith(".") else [])


def wronged(kind: str, words: list[str], other: list[str], rng: random.Random) -> list[str] | None:
    """The reference's words made wrong in one way (None: this pair cannot be)."""
    if kind == "omission, clause":
        return cut_clause(words)
    if kind == "omission, words":
        longest = sorted(content(words), key=lambda i: -len(words[i]))[:2]
        return None if len(longest) < 2 else [w for i, w in enumerate(words) if i not in longest]
    if kind == "hallucination, other":
        return other
    if kind == "hallucination, loop":
        return None if len(words) < 4 else words[:3] * 4
    mine, theirs = content(words), [w for w in (other[i] for i in content(other)) if w not in words]
    if not mine or not theirs:
        return None
    swapped = list(words)
    swapped[rng.choice(mine)] = rng.choice(theirs)
    return swapped


def cases(pairs: list[tuple[str, str]], seed: int = 0) -> list[tuple[str, str, str]]:
    """(kind, source, translation) for every pair as it is ("correct") and each way made wrong."""
    rng = random.Random(seed)
    order = list(range(len(pairs)))
    rng.shuffle(order)
    others = {i: pairs[order[(k + 1) % len(order)]][1] for k, i in enumerate(order)}  # never itself
    out = [("correct", s, t) for s, t in pairs]
    for kind in KINDS:
        for i, (s, t) in enumerate(pairs):
            made = wronged(kind, t.split(), others[i].split(), rng)
            if made is not None and " ".join(made) != t:
                out.append((kind, s, " ".join(made)))
    return out


PUNCTUATION = string.punctuation + "«»“”\u2019…"  # and the typographic apostrophe


def word_labels(words: list[str], reference: str) -> list[bool | None]:
    """For each word, whether the reference holds it (lowercased, its punctuation stripped; each of
    the reference's words matches once); None for a word of punctuation alone."""
    left = Counter(w.lower().strip(PUNCTUATION) for w in reference.split())
    labels: list[bool | None] = []
    for word in words:
        key = word.lower().strip(PUNCTUATION)
        labels.append(None if not key else left[key] > 0)
        left[key] -= bool(key and left[key] > 0)
    return labels
