"""Reproduce the README's results table end to end: train each pair, score it, and keep the evidence.

    python scripts/reproduce_results.py --data-dir ../shared/corpora/multi30k
    python scripts/reproduce_results.py --data-dir ../shared/corpora/multi30k --pairs en-fr --minutes 50
    python scripts/reproduce_results.py --pairs en-fr --entry en-fr-avx2 --data-dir ...  # a second CPU
    python scripts/reproduce_results.py --pairs en-fr --entry en-fr-cool --data-dir ... --train --cooldown 0.2
    python scripts/reproduce_results.py --table      # the table again, from docs/results.json alone

Each pair trains with the default recipe (`seq2seq train --max-minutes 50`, the `small` preset)
into runs/multi30k-<src>-<tgt>; an existing run resumes instead of starting over, and
`--skip-training` only evaluates. It then evaluates the best checkpoint greedily and with beam 5 on
test_2016_flickr and test_2017_flickr (where the pair has it).

What it produced goes into docs/results.json, kept in the repository: per pair the run's config and
every metrics.jsonl row, the test scores with the sacreBLEU signature, example translations, and
the provenance (commit, date, CPU model and flags, torch). A pair rerun replaces its own entry
only; `--entry NAME` keeps a second run of one pair (on another CPU, or with a lever: the options
after `--train` are added to the recipe's command) beside the first. The markdown
table in docs/results.md is printed from that file, so it never outlives its evidence.
"""

import argparse
import datetime
import json
import platform
import subprocess
import sys
from pathlib import Path

import machine
import torch

from seq2seq.atomic import write_atomic
from seq2seq.data.corpus import MULTI30K_LANGS
from seq2seq.training.checkpoint import load_config, read_metrics

RESULTS = Path(__file__).resolve().parent.parent / "docs" / "results.json"
SPLITS = ("test_2016_flickr", "test_2017_flickr")
SEARCHES = {"greedy": ["--greedy"], "beam5": ["--beam", "5"]}
EXAMPLES = [
    "The cat sat on the mat.",
    "A man in a blue shirt is riding a bicycle down the street.",
    "Two children are playing football in a park.",
]


def seq2seq(*args: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "seq2seq", *args], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"seq2seq {' '.join(args)} failed: {proc.stderr.strip()}")
    return proc.stdout


def commit() -> str:
    proc = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "diff", "--quiet", "HEAD", "--", "seq2seq"]).returncode != 0
    return proc.stdout.strip() + ("+uncommitted changes" if dirty else "") if proc.returncode == 0 else "?"


def reproduce(
    pair: str, run: Path, data_dir: str, minutes: float, skip_training: bool, recipe: list[str]
) -> dict:
    """Train (unless skipped) and score one pair; the entry docs/results.json keeps for it."""
    src, tgt = pair.split("-")
    command = ["train", "--data-dir", data_dir, "--src", src, "--tgt", tgt, "--run", str(run)]
    command += ["--max-minutes", str(minutes), *recipe]
    trained_at = commit()  # before training: the code may change on disk while it runs
    if not skip_training:
        seq2seq(*command)
    tests = {}
    for split in (s for s in SPLITS if tgt in MULTI30K_LANGS[s]):
        scoring = ["evaluate", "--run", str(run), "--data-dir", data_dir, "--split", split, "--json"]
        tests[split] = {name: json.loads(seq2seq(*scoring, *how)) for name, how in SEARCHES.items()}
    translations = seq2seq("translate", "--run", str(run), *EXAMPLES).splitlines()
    return {
        "pair": pair,
        "command": "seq2seq " + " ".join(command),
        "commit": trained_at,
        "date": datetime.date.today().isoformat(),
        "cpu": machine.cpu(),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "config": load_config(run),
        "metrics": read_metrics(run),
        "test": tests,
        "examples": dict(zip(EXAMPLES, translations, strict=True)),
    }


def table(results: dict) -> str:
    """The markdown table of docs/results.md, from the results file alone."""
    lines = [
        "| pair | test set | greedy BLEU / chrF | beam 5 BLEU / chrF | train minutes | steps | "
        "best val BLEU (greedy) | CPU |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, entry in results.items():
        pair = entry.get("pair", name)
        rows = entry["metrics"]
        trained = [r for r in rows if not r.get("averaged")]
        best = max(rows, key=lambda r: r["val_bleu"])
        mean = f" (mean of last {best['averaged']})" if best.get("averaged") else ""
        how = f"{best['val_bleu']:.1f}{mean}"
        for split, scores in entry["test"].items():
            g, b = scores["greedy"], scores["beam5"]
            lines.append(
                f"| {pair.replace('-', '->')} | {split} | {g['bleu']:.1f} / {g['chrf']:.1f} | "
                f"{b['bleu']:.1f} / {b['chrf']:.1f} | {rows[-1]['elapsed_s'] / 60:.0f} | "
                f"{trained[-1]['step']} ({trained[-1]['epoch']} epochs) | {how} | {entry['cpu']} |"
            )
    signatures = {s["beam5"]["bleu_signature"] for e in results.values() for s in e["test"].values()}
    lines.append("\nsacreBLEU: " + "; ".join(sorted(signatures)))
    for name, entry in results.items():
        lines += [f"- {name}: {source} -> {out}" for source, out in entry["examples"].items()]
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--data-dir")
    p.add_argument("--pairs", nargs="+", default=["en-fr", "en-de", "en-cs"])
    p.add_argument("--minutes", type=float, default=50)
    p.add_argument("--skip-training", action="store_true")
    p.add_argument("--entry", help="with one pair: the results entry and run (default: the pair)")
    p.add_argument(
        "--train",
        nargs=argparse.REMAINDER,
        default=[],
        help="the rest: `seq2seq train` options besides the default recipe (a lever), e.g. --cooldown 0.2",
    )
    p.add_argument("--table", action="store_true", help="only print the table from docs/results.json")
    args = p.parse_args()
    results = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
    if not args.table:
        if not args.data_dir:
            p.error("--data-dir is required unless --table")
        if args.entry and len(args.pairs) != 1:
            p.error("--entry names the entry of one pair")
        for pair in args.pairs:
            name = args.entry or pair
            run = Path("runs") / f"multi30k-{name}"
            results[name] = reproduce(pair, run, args.data_dir, args.minutes, args.skip_training, args.train)
            write_atomic(RESULTS, (json.dumps(results, indent=1) + "\n").encode())
    print(table(results))


if __name__ == "__main__":
    main()
