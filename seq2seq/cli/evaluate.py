"""`seq2seq evaluate` and `seq2seq score`: how good a run's translations are (BLEU, chrF, a paired
significance test) and how likely it finds given ones (forced decoding)."""

import json
from pathlib import Path

import typer

from seq2seq.cli import display
from seq2seq.cli.io import one_line, read_lines
from seq2seq.cli.options import (
    BATCH_SIZE,
    DATA_DIR,
    DEVICE,
    LENGTH_PENALTY,
    QUANTIZE,
    RUN,
    check_precision,
    decode_parameters,
    decoding,
    one_of,
    run_dir,
    with_parameters,
)
from seq2seq.cli.outputs import Outputs, write_lines
from seq2seq.decoding.options import ONE_BEST
from seq2seq.errors import Seq2SeqError


def evaluate(
    run: Path | None = RUN,
    data_dir: str | None = DATA_DIR,
    split: str = typer.Option("test_2016_flickr", help="Corpus split to translate and score."),
    source: Path | None = typer.Option(None, "--source", help="Source file (with --reference)."),
    reference: Path | None = typer.Option(None, "--reference", help="Reference file."),
    output: Path | None = typer.Option(None, "--output", help="Write the hypotheses here."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    device: str = DEVICE,
    quantize: str | None = QUANTIZE,
    baseline: Path | None = typer.Option(
        None, "--baseline", help="Another system's translations of the same test set, to test against."
    ),
    baseline_run: Path | None = typer.Option(
        None, "--baseline-run", help="Another run: translate the test set with it and test against it."
    ),
    paired: str = typer.Option("bs", "--paired", help="bs: paired bootstrap; ar: approximate randomization."),
    resamples: int = typer.Option(0, "--resamples", min=0, help="[default: 1000 for bs, 10000 for ar]"),
    **given,
):
    """Translate a test set and print BLEU and chrF with their sacreBLEU signatures; with a baseline,
    both systems' scores with 95% confidence intervals and the p-value of their difference."""
    from seq2seq.data.corpus import load_pairs
    from seq2seq.evaluate import TESTS, compare
    from seq2seq.evaluate import evaluate as evaluate_pairs
    from seq2seq.runs.load import load_run
    from seq2seq.runs.recipe import stored_languages

    run = run_dir(run)

    options = decoding(given)
    check_precision(quantize, options.bf16)
    if baseline is not None and baseline_run is not None:
        raise typer.BadParameter("give --baseline or --baseline-run, not both", param_hint="--baseline")
    one_of(paired, TESTS, "--paired")
    if (source is None) != (reference is None):
        raise typer.BadParameter("--source and --reference go together", param_hint="--source")
    Outputs(source, reference, baseline, run=run, reads=(baseline_run,)).claim("--output", output)
    if source is not None:
        sources, references = read_lines(source), read_lines(reference)
        if len(sources) != len(references):
            raise Seq2SeqError(f"{source} has {len(sources)} lines but {reference} has {len(references)}")
        pairs, what = list(zip(sources, references, strict=True)), f"{source}"
    else:
        corpus, src, tgt = stored_languages(run)
        pairs = load_pairs(corpus, split, src, tgt, data_dir)
        what = f"{corpus} {split} {src}->{tgt}"
    baseline_lines = read_lines(baseline) if baseline is not None else None
    if baseline_lines is not None and len(baseline_lines) != len(pairs):
        raise Seq2SeqError(f"{baseline} has {len(baseline_lines)} lines but the test set has {len(pairs)}")
    model, tokenizer = load_run(run, device, quantize=quantize, packed=True)
    if baseline_run is not None:  # decoded the same way as the run under test
        other, other_tokenizer = load_run(baseline_run, device, quantize=quantize, packed=True)
        baseline_lines = evaluate_pairs(other, other_tokenizer, pairs, options).hypotheses
    result = evaluate_pairs(model, tokenizer, pairs, options)
    if output is not None:
        write_lines([one_line(h) for h in result.hypotheses], output)
    report = {
        "bleu": round(result.scores.bleu, 2),
        "chrf": round(result.scores.chrf, 2),
        "signature": result.scores.signature,
        "bleu_signature": result.scores.bleu_signature,
        "chrf_signature": result.scores.chrf_signature,
        "sentences": result.scores.sentences,
        "seconds": round(result.seconds, 2),
        "beam": options.beam,
        "test_set": what,
        "run": str(run),
    }
    if baseline_lines is not None:
        comparison = compare(result.hypotheses, baseline_lines, [t for _, t in pairs], paired, resamples)
        report["paired_test"] = paired_report(comparison, str(baseline or baseline_run))
    if as_json:
        write_lines([json.dumps(report)], None)
    else:
        display.scores(report)


with_parameters(evaluate, decode_parameters(ONE_BEST))  # one hypothesis a line is scored


def paired_report(comparison, baseline: str) -> dict:
    """The paired test as JSON: for each metric, both systems' estimates and the p-value."""
    from dataclasses import asdict

    def rounded(d: dict) -> dict:
        return {k: round(v, 4) if isinstance(v, float) else v for k, v in d.items()}

    out = {"test": comparison.test, "resamples": comparison.resamples, "baseline": baseline}
    for metric in ("bleu", "chrf"):
        difference = getattr(comparison, metric)
        out[metric] = {
            "system": rounded(asdict(difference.system)),
            "baseline": rounded(asdict(difference.baseline)),
            "p_value": round(difference.p_value, 6),
            "signature": difference.signature,
        }
    return out


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
    sources, targets = read_lines(source), read_lines(target)
    if len(sources) != len(targets):
        raise Seq2SeqError(f"{source} has {len(sources)} lines but {target} has {len(targets)}")
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
