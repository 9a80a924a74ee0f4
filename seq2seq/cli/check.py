"""`seq2seq check`: how far to trust translations from anywhere (this model's, another system's, a
person's): a line per pair with its score and its flags, or one JSON object a pair; and with
--calibrate, the flags fitted to the run on its development split."""

import json
from dataclasses import dataclass, replace
from pathlib import Path

from seq2seq.cli import display
from seq2seq.cli.options import DATA_DIR, DEVICE, RUN, fields, run_dir
from seq2seq.errors import OptionError
from seq2seq.fields import option
from seq2seq.files.reading import read_pairs
from seq2seq.files.writing import Outputs, write_lines


@dataclass
class CheckArgs:
    """`check`'s own options (beside --run, --data-dir and --device)."""

    source: Path | None = option(None, "Source sentences, one a line.")
    target: Path | None = option(None, "Their translations (anyone's), one a line.")
    as_json: bool = option(
        False,
        "One JSON object a pair: score, omission, hallucination, flags, each word's log-probability "
        "(and whether to check it) and the source words left uncovered.",
        flag="--json",
    )
    dependence: bool = option(
        False, "Also how much each translation owes its source (a second pass over it).", flag="--dependence"
    )
    batch_size: int = option(32, "Pairs checked together.", 1, None)
    calibrate: bool = option(
        False,
        "Fit the flags to this run on its corpus's --split (errors made from its references) and "
        "keep them in the run (trust.json), instead of checking pairs.",
        flag="--calibrate",
    )
    split: str = option("val", "--calibrate: the development split to fit on.")


def check(
    run: Path | None = RUN,
    data_dir: str | None = DATA_DIR,
    device: str = DEVICE,
    args: CheckArgs = fields(CheckArgs),
):
    """How far to trust each translation: `score omission hallucination flags` a pair (score: mean
    log-probability a piece, higher is surer; omission, hallucination: the probability of each)."""
    from seq2seq.runs.load import load_run
    from seq2seq.trust.calibration import Calibration
    from seq2seq.trust.flags import check_translations

    run = run_dir(run)
    if args.calibrate:
        return calibrate(args, run, data_dir, device)
    for flag, path in (("--source", args.source), ("--target", args.target)):
        if path is None:
            raise OptionError(flag, "is needed to check pairs (or give --calibrate)")
    Outputs(args.source, args.target, run=run)  # standard output alone is written
    sources, targets = read_pairs(args.source, args.target)
    model, tokenizer = load_run(run, device)
    calibration = Calibration.of_run(run)
    checking = {"batch_size": args.batch_size, "dependence": args.dependence}
    answers = check_translations(model, tokenizer, sources, targets, calibration, **checking)
    write_lines([json.dumps(a, ensure_ascii=False) if args.as_json else plain(a) for a in answers], None)


def calibrate(args: CheckArgs, run: Path, data_dir: str | None, device: str) -> None:
    from seq2seq.data.corpus import load_pairs
    from seq2seq.runs.identity import weights_digest
    from seq2seq.runs.load import load_run
    from seq2seq.runs.lock import run_lock
    from seq2seq.runs.recipe import stored_languages
    from seq2seq.trust.calibration import RUN_FILE, calibrate

    if args.source is not None or args.target is not None:
        raise OptionError("--calibrate", "fits on the run's corpus split; give no --source or --target")
    corpus, src, tgt = stored_languages(run)
    pairs = load_pairs(corpus, args.split, src, tgt, data_dir)
    with run_lock(run):  # one writer in a run: not beside a training that replaces its weights
        model, tokenizer = load_run(run, device)
        fitted = calibrate(model, tokenizer, pairs, f"{run.name}, {corpus} {args.split} ({len(pairs)} pairs)")
        replace(fitted, weights=weights_digest(run)).write(run / RUN_FILE)
    display.note(f"wrote {run / RUN_FILE}: {describe(fitted)}")


def describe(c) -> str:
    return (
        f"omission flagged at p >= {c.omission.threshold:.3f}, hallucination at p >= "
        f"{c.hallucination.threshold:.3f}, a word to check below log-probability {c.unsure_word:.2f}"
    )


def plain(a: dict) -> str:
    return f"{a['score']:.4f}\t{a['omission']:.4f}\t{a['hallucination']:.4f}\t{','.join(a['flags'])}"
