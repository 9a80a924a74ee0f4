"""Translation quality by sacreBLEU: BLEU and chrF on detokenized text, with their signatures so a
number can be reproduced and compared."""

import time
from dataclasses import dataclass

from sacrebleu.metrics import BLEU, CHRF

from seq2seq.decode import DecodeOptions, translate
from seq2seq.errors import Seq2SeqError


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


def evaluate(model, tokenizer, pairs: list[tuple[str, str]], options: DecodeOptions) -> Evaluation:
    """Translate the source side of `pairs` and score it against the target side."""
    start = time.perf_counter()
    hypotheses = translate(model, tokenizer, [src for src, _ in pairs], options).best
    seconds = time.perf_counter() - start
    return Evaluation(score(hypotheses, [tgt for _, tgt in pairs]), hypotheses, seconds)
