"""`seq2seq check`: how far to trust translations from anywhere (this model's, another system's, a
person's): a line per pair with its score and its flags, or one JSON object a pair."""

import json
from dataclasses import dataclass
from pathlib import Path

from seq2seq.cli.options import DEVICE, RUN, field_parameters, run_dir, taken, with_parameters
from seq2seq.errors import Seq2SeqError
from seq2seq.fields import option
from seq2seq.files.reading import read_lines
from seq2seq.files.writing import Outputs, write_lines


@dataclass
class CheckArgs:
    """`check`'s own options (beside --run and --device)."""

    source: Path = option(..., "Source sentences, one a line.")
    target: Path = option(..., "Their translations (anyone's), one a line.")
    as_json: bool = option(
        False,
        "One JSON object a pair: score, omission, hallucination, flags, each word's log-probability "
        "(and whether to check it) and the source words left uncovered.",
        flag="--json",
    )
    batch_size: int = option(32, "Pairs checked together.", 1, None)


def check(run: Path | None = RUN, device: str = DEVICE, **given):
    """How far to trust each translation: `score omission hallucination flags` a pair (score: mean
    log-probability a piece, higher is surer; omission, hallucination: higher where likelier)."""
    from seq2seq.runs.load import load_run
    from seq2seq.trust.flags import answer
    from seq2seq.trust.signals import check_pairs

    args, run = taken(CheckArgs, given), run_dir(run)
    Outputs(args.source, args.target, run=run)  # standard output alone is written
    sources, targets = read_lines(args.source), read_lines(args.target)
    if len(sources) != len(targets):
        raise Seq2SeqError(f"{args.source} has {len(sources)} lines but {args.target} has {len(targets)}")
    model, tokenizer = load_run(run, device)
    blanks = [blank_side(s, t) for s, t in zip(sources, targets, strict=True)]
    todo = [i for i, blank in enumerate(blanks) if blank is None]
    found = check_pairs(
        model, tokenizer, [sources[i] for i in todo], [targets[i] for i in todo], args.batch_size
    )
    signals = dict(zip(todo, found, strict=True))
    answers = [answer(signals.get(i), blank or None) for i, blank in enumerate(blanks)]
    write_lines([json.dumps(a, ensure_ascii=False) if args.as_json else plain(a) for a in answers], None)


with_parameters(check, field_parameters(CheckArgs))


def blank_side(source: str, target: str) -> str | None:
    """None for a pair to check; else the flag of its blank side ("no source", "empty"), or ""
    where both are blank (nothing to check, nothing flagged)."""
    from seq2seq.data.tokenizer import is_blank

    return {(False, False): None, (True, False): "no source", (False, True): "empty", (True, True): ""}[
        is_blank(source), is_blank(target)
    ]


def plain(a: dict) -> str:
    return f"{a['score']:.4f}\t{a['omission']:.4f}\t{a['hallucination']:.4f}\t{','.join(a['flags'])}"
