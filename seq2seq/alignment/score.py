"""Alignment quality against gold links (Och & Ney 2003): with A the links found, S the gold Sure
and P the gold Possible links (S within P), over a whole set of pairs,

    precision = |A & P| / |A|      recall = |A & S| / |S|
    AER = 1 - (|A & S| + |A & P|) / (|A| + |S|)

so a link that is only Possible costs nothing when found and nothing when missed.

Its noise: the AER of the pairs resampled with replacement (a bootstrap over sentences, seeded),
whose 2.5th and 97.5th percentiles bound a 95% interval; 0.005 between two systems on 100 pairs
is often inside it.
"""

from dataclasses import asdict, dataclass

import torch

from seq2seq.alignment.pharaoh import Link, Links
from seq2seq.errors import Seq2SeqError


@dataclass
class AlignmentScore:
    precision: float
    recall: float
    aer: float
    links: int  # |A|
    sure: int  # |S|
    possible: int  # |P|
    pairs: int
    aer_low: float = 0.0  # the 95% bootstrap interval of the AER over sentences
    aer_high: float = 0.0

    def as_json(self) -> dict:
        return asdict(self)


RESAMPLES, SEED = 1000, 12345


def score(found: list[set[Link]], gold: list[Links], resamples: int = RESAMPLES) -> AlignmentScore:
    """Counts summed over the pairs, then the ratios (as every AER table computes them), and the
    AER's bootstrap interval over `resamples` draws of the pairs."""
    if len(found) != len(gold):
        raise Seq2SeqError(f"{len(found)} aligned pairs but {len(gold)} gold ones; they must pair up")
    rows = []  # per pair: |A|, |S|, |P|, |A & S|, |A & P|
    for links, reference in zip(found, gold, strict=True):
        possible = reference.possible | reference.sure
        rows.append(
            (
                len(links),
                len(reference.sure),
                len(possible),
                len(links & reference.sure),
                len(links & possible),
            )
        )
    counts = torch.tensor(rows, dtype=torch.float64).reshape(-1, 5)  # (pairs, 5)
    a, s, p, a_s, a_p = (int(x) for x in counts.sum(0).tolist()) if rows else (0,) * 5
    precision = a_p / a if a else 0.0
    recall = a_s / s if s else 0.0
    aer = 1.0 - (a_s + a_p) / (a + s) if a + s else 0.0
    low, high = _interval(counts, resamples) if rows else (aer, aer)
    return AlignmentScore(precision, recall, aer, a, s, p, len(gold), low, high)


def _interval(counts: torch.Tensor, resamples: int) -> tuple[float, float]:
    """The 2.5th and 97.5th percentiles of the AER over `resamples` draws of the pairs."""
    draws = torch.randint(
        len(counts), (resamples, len(counts)), generator=torch.Generator().manual_seed(SEED)
    )
    a, s, _, a_s, a_p = counts[draws].sum(1).unbind(-1)  # (resamples, pairs, 5) -> 5 x (resamples,)
    aers = 1.0 - (a_s + a_p) / (a + s).clamp(min=1.0)
    low, high = torch.quantile(aers, torch.tensor([0.025, 0.975], dtype=torch.float64)).tolist()
    return low, high
