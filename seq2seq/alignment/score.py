"""Alignment quality against gold links (Och & Ney 2003): with A the links found, S the gold Sure
and P the gold Possible links (S within P), over a whole set of pairs,

    precision = |A & P| / |A|      recall = |A & S| / |S|
    AER = 1 - (|A & S| + |A & P|) / (|A| + |S|)

so a link that is only Possible costs nothing when found and nothing when missed.
"""

from dataclasses import asdict, dataclass

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

    def as_json(self) -> dict:
        return asdict(self)


def score(found: list[set[Link]], gold: list[Links]) -> AlignmentScore:
    """Counts summed over the pairs, then the ratios (as every AER table computes them)."""
    if len(found) != len(gold):
        raise Seq2SeqError(f"{len(found)} aligned pairs but {len(gold)} gold ones; they must pair up")
    a = s = p = a_s = a_p = 0
    for links, reference in zip(found, gold, strict=True):
        possible = reference.possible | reference.sure
        a, s, p = a + len(links), s + len(reference.sure), p + len(possible)
        a_s, a_p = a_s + len(links & reference.sure), a_p + len(links & possible)
    precision = a_p / a if a else 0.0
    recall = a_s / s if s else 0.0
    aer = 1.0 - (a_s + a_p) / (a + s) if a + s else 0.0
    return AlignmentScore(precision, recall, aer, a, s, p, len(gold))
