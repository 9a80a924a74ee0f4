"""From a piece-level score matrix to word links.

Merge rule: the score of (target word, source word) is the mean over the target word's pieces of
the sum over the source word's pieces: a target word asks, on average over its pieces, how much
each source word holds, and a source word holds what all its pieces hold. EOS (the last row and
column) is dropped: attention there is attention to no word.

Extraction rules: `argmax`, each target word linked to its highest-scoring source word (what
attention-as-alignment means, one link per target word); `intersect`, the argmax links that are
also their source word's highest-scoring target word (both directions agree: SimAlign's "Argmax",
Jalili Sabet et al. 2020), fewer links and surer ones; `grow`, the two directions' argmax links
(each target word's best source word, each source word's best target word) symmetrized by
grow-diag-final-and, as statistical aligners' two directions are (symmetry.py): the intersection,
grown into neighbouring links of either direction; `threshold`, each target word linked to
every source word holding at least `threshold` of the word's positive score (normalised to sum
to 1), so a word may have several links or none; `mass`, the same without the normalising: a
method whose scores leave a word's share for no source word (the alignment layer's NULL) keeps it
unlinked where that share is most of it.

Shapes: T target pieces, S source pieces (EOS excluded), n / m target / source words.
"""

import numpy as np

from seq2seq.alignment.pharaoh import Link
from seq2seq.alignment.symmetry import grow_diag_final_and
from seq2seq.errors import FieldError

RULES = ("argmax", "intersect", "grow", "threshold", "mass")


def word_scores(pieces: np.ndarray, source_words: np.ndarray, target_words: np.ndarray) -> np.ndarray:
    """(T, S) piece scores, (S,) and (T,) each piece's word -> (n, m) word scores."""
    n, m = int(target_words.max(initial=-1)) + 1, int(source_words.max(initial=-1)) + 1
    by_source = np.zeros((pieces.shape[0], m))
    np.add.at(by_source.T, source_words, pieces.T)  # (T, m): summed over each word's pieces
    out = np.zeros((n, m))
    np.add.at(out, target_words, by_source)
    counts = np.bincount(target_words, minlength=n)[:, None]
    return out / np.maximum(counts, 1)


def extract(scores: np.ndarray, rule: str = "argmax", threshold: float = 0.5) -> set[Link]:
    """(n target words, m source words) -> links (source word, target word)."""
    if rule not in RULES:
        raise FieldError("extract", f"must be one of {', '.join(RULES)}, not {rule!r}")
    if scores.size == 0:
        return set()
    if rule in ("argmax", "intersect", "grow"):
        best_source, best_target = scores.argmax(1), scores.argmax(0)  # (n,), (m,)
        forward = {(int(i), j) for j, i in enumerate(best_source)}
        if rule == "grow":
            return grow_diag_final_and(forward, {(i, int(j)) for i, j in enumerate(best_target)})
        return {(i, j) for i, j in forward if rule == "argmax" or best_target[i] == j}
    if rule == "mass":
        return {(int(i), int(j)) for j, i in zip(*np.nonzero(scores >= threshold), strict=True)}
    positive = np.clip(scores, 0.0, None)
    mass = positive.sum(1, keepdims=True)
    share = np.divide(positive, mass, out=np.zeros_like(positive), where=mass > 0)
    return {(int(i), int(j)) for j, i in zip(*np.nonzero(share >= threshold), strict=True)}
