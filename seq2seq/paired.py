"""`evaluate --baseline / --baseline-run`: a model's evaluation paired with a baseline's, the
baseline given as its translations or as another model decoded the same way."""

from seq2seq.decoding.search import DecodeOptions
from seq2seq.evaluate import Comparison, Evaluation, compare, evaluate
from seq2seq.models.protocol import Seq2SeqModel


def evaluate_against(
    model: Seq2SeqModel,
    tokenizer,
    pairs: list[tuple[str, str]],
    options: DecodeOptions,
    baseline: list[str] | tuple | None = None,
    test: str = "bs",
    resamples: int = 0,
    case: str = "auto",
) -> tuple[Evaluation, Comparison | None]:
    """The evaluation of `pairs`, each source translated as `seq2seq translate` does (the one
    request, with the `case` policy), and with a `baseline` the paired test of the two: `baseline`
    is another system's translations of the pairs' sources, or another (model, tokenizer), which
    translates them the same way as the model under test."""
    if isinstance(baseline, tuple):
        baseline = evaluate(*baseline, pairs, options, requested(*baseline, options, case)).hypotheses
    result = evaluate(model, tokenizer, pairs, options, requested(model, tokenizer, options, case))
    if baseline is None:
        return result, None
    return result, compare(result.hypotheses, baseline, [t for _, t in pairs], test, resamples)


def requested(model, tokenizer, options: DecodeOptions, case: str):
    """Lines -> their translations, as one request of `options` and the `case` policy."""
    from seq2seq.request.request import TranslationRequest
    from seq2seq.request.translator import Translator

    def translated(lines: list[str]) -> list[str]:
        return Translator(model, tokenizer).translate(TranslationRequest(lines, options, case=case)).best

    return translated
