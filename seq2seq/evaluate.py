"""Translation quality by sacreBLEU: BLEU and chrF on detokenized text, with their signatures so a
number can be reproduced and compared."""

import time
from dataclasses import dataclass

from sacrebleu.metrics import BLEU, CHRF

from seq2seq.decoding.search import DecodeOptions, translate
from seq2seq.errors import Seq2SeqError
from seq2seq.models.protocol import Seq2SeqModel


@dataclass
class Scores:
    bleu: float
    chrf: float
    bleu_signature: str
    chrf_signature: str
    sentences: int

    @property
    def signature(self) -> str:
        return f"{self.bleu_signature} {self.chrf_signature}"


def score(hypotheses: list[str], references: list[str]) -> Scores:
    """Corpus BLEU (13a tokenization, cased) and chrF of hypotheses against one reference each."""
    if len(hypotheses) != len(references):
        raise Seq2SeqError(
            f"{len(hypotheses)} hypotheses but {len(references)} references; they must pair up"
        )
    if not references:
        raise Seq2SeqError("nothing to score: no references")
    bleu, chrf = BLEU(), CHRF()
    b = bleu.corpus_score(hypotheses, [references])
    c = chrf.corpus_score(hypotheses, [references])
    return Scores(b.score, c.score, str(bleu.get_signature()), str(chrf.get_signature()), len(references))


@dataclass
class Evaluation:
    scores: Scores
    hypotheses: list[str]
    seconds: float


def evaluate(
    model: Seq2SeqModel, tokenizer, pairs: list[tuple[str, str]], options: DecodeOptions, translated=None
) -> Evaluation:
    """Translate the source side of `pairs` and score it against the target side; `translated`,
    how lines are translated (a function of the lines; default: the search alone, as training
    validates; `seq2seq evaluate` gives the one request's, paired.py)."""
    start = time.perf_counter()
    sources = [src for src, _ in pairs]
    hypotheses = translated(sources) if translated else translate(model, tokenizer, sources, options).best
    seconds = time.perf_counter() - start
    return Evaluation(score(hypotheses, [tgt for _, tgt in pairs]), hypotheses, seconds)


TESTS = {"bs": "paired bootstrap resampling", "ar": "approximate randomization"}


@dataclass
class Estimate:
    score: float  # on the whole test set
    mean: float  # over the resamples
    ci: float  # half-width of the 95% confidence interval around the mean


@dataclass
class Difference:
    system: Estimate
    baseline: Estimate
    p_value: float  # of a difference at least this large if the two systems were alike
    signature: str


@dataclass
class Comparison:
    test: str  # a key of TESTS
    resamples: int
    bleu: Difference
    chrf: Difference


def compare(
    hypotheses: list[str], baseline: list[str], references: list[str], test: str = "bs", resamples: int = 0
) -> Comparison:
    """Whether `hypotheses` beat `baseline` by more than chance, by sacreBLEU's own paired tests
    (seeded by SACREBLEU_SEED, 12345 unless set, so a command repeats its numbers). resamples 0:
    sacreBLEU's defaults, 1000 for bootstrap and 10000 for randomization."""
    from sacrebleu.significance import PairedTest

    if test not in TESTS:
        raise Seq2SeqError(f"{test!r} is not one of {', '.join(TESTS)} ({'; '.join(TESTS.values())})")
    if resamples < 0:
        raise Seq2SeqError(f"the number of resamples must be positive, got {resamples}")
    for name, lines in (("hypotheses", hypotheses), ("baseline", baseline)):
        if len(lines) != len(references):
            raise Seq2SeqError(f"{len(lines)} {name} but {len(references)} references; they must pair up")
    paired = PairedTest(
        [("baseline", baseline), ("system", hypotheses)],
        {"bleu": BLEU(), "chrf": CHRF()},
        [references],
        test_type=test,
        n_samples=resamples,
        n_ar_confidence=0,  # randomization: CIs from sacreBLEU's default bootstrap too
    )
    signatures, results = paired()
    bleu, chrf = (_difference(results[k], str(signatures[k])) for k in ("BLEU", "chrF2"))
    return Comparison(test, paired.n_samples, bleu, chrf)


def _difference(results: list, signature: str) -> Difference:
    """sacreBLEU, after MultEval, counts no difference at all as significant (p = 1 / (n + 1)) on
    purpose; to a user comparing two systems, identical scores are not a significant difference,
    so they get p = 1."""
    baseline, system = (Estimate(r.score, float(r.mean), float(r.ci)) for r in results)
    p_value = 1.0 if system.score == baseline.score else float(results[1].p_value)
    return Difference(system, baseline, p_value, signature)
