"""`seq2seq evaluate` and `seq2seq score`: how good a run's translations are (BLEU, chrF, a paired
significance test) and how likely it finds given ones (forced decoding)."""

import json
from dataclasses import dataclass
from pathlib import Path

import typer

from seq2seq.cli import display
from seq2seq.cli.options import (
    BATCH_SIZE,
    DATA_DIR,
    DEVICE,
    LENGTH_PENALTY,
    QUANTIZE,
    RUN,
    check_precision,
    decoding,
    fields,
    one_of,
    request_fields,
    run_dir,
)
from seq2seq.decoding.options import ONE_BEST, DecodeOptions
from seq2seq.errors import Seq2SeqError
from seq2seq.fields import option
from seq2seq.files.reading import one_line, read_lines, read_pairs
from seq2seq.files.writing import Outputs, write_lines
from seq2seq.report import paired_json, report_json


@dataclass
class EvaluateArgs:
    """`evaluate`'s own options (beside --run, --data-dir, --device, --quantize and decoding's)."""

    split: str = option("test_2016_flickr", "Corpus split to translate and score.")
    source: Path | None = option(None, "Source file (with --reference).")
    reference: Path | None = option(None, "Reference file.")
    output: Path | None = option(None, "Write the hypotheses here.")
    as_json: bool = option(False, "Print one JSON object.", flag="--json")
    baseline: Path | None = option(
        None, "Another system's translations of the same test set, to test against."
    )
    baseline_run: Path | None = option(
        None, "Another run: translate the test set with it and test against it."
    )
    paired: str = option("bs", "bs: paired bootstrap; ar: approximate randomization.")
    resamples: int = option(0, "[default: 1000 for bs, 10000 for ar]", 0, None)
    confidence: bool = option(
        False,
        "Also how far to trust each line: how many raise each flag, and with --json every line "
        "(source, hypothesis, reference, sentence chrF, score, omission, hallucination, flags).",
        flag="--confidence",
    )

    def check(self, run: Path) -> None:
        from seq2seq.evaluate import TESTS

        if self.baseline is not None and self.baseline_run is not None:
            raise typer.BadParameter("give --baseline or --baseline-run, not both", param_hint="--baseline")
        one_of(self.paired, TESTS, "--paired")
        if (self.source is None) != (self.reference is None):
            raise typer.BadParameter("--source and --reference go together", param_hint="--source")
        outputs = Outputs(self.source, self.reference, self.baseline, run=run, reads=(self.baseline_run,))
        outputs.claim("output", self.output)


def evaluate(
    run: Path | None = RUN,
    data_dir: str | None = DATA_DIR,
    device: str = DEVICE,
    quantize: str | None = QUANTIZE,
    args: EvaluateArgs = fields(EvaluateArgs),
    policy: dict = request_fields(("case",)),
    options: DecodeOptions = decoding(ONE_BEST),  # one hypothesis a line is scored
):
    """Translate a test set and print BLEU and chrF with their sacreBLEU signatures; with a baseline,
    both systems' scores with 95% confidence intervals and the p-value of their difference."""
    from seq2seq.paired import evaluate_against
    from seq2seq.runs.load import load_run

    run = run_dir(run)
    check_precision(quantize, options.bf16)
    args.check(run)
    pairs, what = test_pairs(args, run, data_dir)
    baseline = read_lines(args.baseline) if args.baseline is not None else None
    if baseline is not None and len(baseline) != len(pairs):
        raise Seq2SeqError(f"{args.baseline} has {len(baseline)} lines but the test set has {len(pairs)}")
    model, tokenizer = load_run(run, device, quantize=quantize, packed=True)
    if args.baseline_run is not None:
        baseline = load_run(args.baseline_run, device, quantize=quantize, packed=True)
    result, comparison = evaluate_against(
        model, tokenizer, pairs, options, baseline, args.paired, args.resamples, **policy
    )
    if args.output is not None:
        write_lines([one_line(h) for h in result.hypotheses], args.output)
    report = report_json(result, options.beam, what, run)
    if args.confidence:
        report |= trusted(model, tokenizer, pairs, result.hypotheses, run, options.batch_size)
    if comparison is not None:
        report["paired_test"] = paired_json(comparison, str(args.baseline or args.baseline_run))
    if args.as_json:
        write_lines([json.dumps(report)], None)
    else:
        display.scores(report)


def trusted(model, tokenizer, pairs, hypotheses: list[str], run: Path, batch_size: int) -> dict:
    """--confidence: the count of each flag, and each line with its chrF and trust."""
    from seq2seq.report import flagged, lines_json
    from seq2seq.trust.calibration import Calibration
    from seq2seq.trust.flags import check_translations

    sources, calibration = [s for s, _ in pairs], Calibration.of_run(run)
    answers = check_translations(model, tokenizer, sources, hypotheses, calibration, batch_size=batch_size)
    return {"flagged": flagged(answers), "lines": lines_json(pairs, hypotheses, answers)}


def test_pairs(args: EvaluateArgs, run: Path, data_dir: str | None) -> tuple[list[tuple[str, str]], str]:
    """The pairs to score, and what they are: --source and --reference, else the run's corpus split."""
    if args.source is not None:
        sources, references = read_pairs(args.source, args.reference)
        return list(zip(sources, references, strict=True)), f"{args.source}"
    from seq2seq.data.corpus import load_pairs
    from seq2seq.runs.recipe import stored_languages

    corpus, src, tgt = stored_languages(run)
    return load_pairs(corpus, args.split, src, tgt, data_dir), f"{corpus} {args.split} {src}->{tgt}"


def score(
    source: Path = typer.Option(..., "--source", help="Source sentences, one a line."),
    target: Path = typer.Option(..., "--target", help="Their translations, one a line."),
    run: Path | None = RUN,
    length_penalty: float = LENGTH_PENALTY,
    batch_size: int = BATCH_SIZE,
    as_json: bool = typer.Option(False, "--json", help="One JSON object a line."),
    device: str = DEVICE,
):
    """The model's log-probability of given translations: a line `score total mean pieces` per pair
    (score = total / length penalty, the number `translate --nbest` prints for the same output)."""
    from seq2seq.decoding.forced import score_pairs
    from seq2seq.runs.load import load_run

    run = run_dir(run)

    if batch_size < 1:
        raise typer.BadParameter("must be at least 1", param_hint="--batch-size")
    sources, targets = read_pairs(source, target)
    model, tokenizer = load_run(run, device, packed=True)
    scores = score_pairs(model, tokenizer, sources, targets, length_penalty, batch_size)
    if as_json:
        out = [
            json.dumps({"score": s.score, "total": s.total, "mean": s.mean, "pieces": s.pieces})
            for s in scores
        ]
    else:
        out = [f"{s.score:.4f}\t{s.total:.4f}\t{s.mean:.4f}\t{s.pieces}" for s in scores]
    write_lines(out, None)
