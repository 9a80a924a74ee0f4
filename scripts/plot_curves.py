"""Validation BLEU against training minutes, for results entries or run directories side by side.

    python -m scripts.plot_curves en-fr en-fr-bf16 en-fr-avx2-default --out docs/minutes.png
    python -m scripts.plot_curves runs/multi30k-en-fr runs/other --bleu 55 --out /tmp/curves.png

Each name is an entry of docs/results.json (the metrics.jsonl rows a reproduce run kept) or a run
directory (its metrics.jsonl now). It prints, per name, the minutes to the first validation at
`--bleu` and the best validation, and draws the curves into `--out` (the `plot` extra).
"""

import argparse
import json
from pathlib import Path

from scripts.common import REPO
from seq2seq.errors import Seq2SeqError
from seq2seq.runs.files import read_metrics
from seq2seq.views import plots

RESULTS = REPO / "docs" / "results.json"


def curves(names: list[str], results_file: Path = RESULTS) -> dict[str, list[dict]]:
    """The metrics rows of each name: a run directory's metrics.jsonl, else a results entry's."""
    results = json.loads(results_file.read_text()) if results_file.is_file() else {}
    rows = {}
    for name in names:
        if Path(name).is_dir():
            rows[name] = read_metrics(Path(name))
        elif name in results:
            rows[name] = results[name]["metrics"]
        else:
            raise Seq2SeqError(f"{name} is neither a run directory nor an entry of {results_file.name}")
        if not rows[name]:  # every metrics row is a validation
            raise Seq2SeqError(f"{name} has no validation yet")
    return rows


def summary(runs: dict[str, list[dict]], bleu: float) -> str:
    lines = [f"| run | minutes to val BLEU {bleu:g} | best val BLEU | steps |", "|---|---|---|---|"]
    for name, rows in runs.items():
        reached = plots.minutes_to_bleu(rows, bleu)
        best = max(r["val_bleu"] for r in rows)
        when = f"{reached:.1f}" if reached is not None else "never"
        lines.append(f"| {name} | {when} | {best:.2f} | {rows[-1]['step']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("names", nargs="+", metavar="ENTRY_OR_RUN")
    p.add_argument("--bleu", type=float, default=50.0, help="the validation BLEU to time (default 50)")
    p.add_argument("--out", type=Path, help="the PNG to draw (default: print the figures only)")
    args = p.parse_args(argv)
    try:
        runs = curves(args.names)
        print(summary(runs, args.bleu))
        if args.out:
            plots.bleu_by_minutes(runs, args.out, args.bleu)
    except Seq2SeqError as error:
        p.exit(1, f"error: {error}\n")


if __name__ == "__main__":
    main()
