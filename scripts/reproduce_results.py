"""Reproduce the README's results table end to end: train each pair, score it, and keep the evidence.

    python -m scripts.reproduce_results --data-dir ../shared/corpora/multi30k
    python -m scripts.reproduce_results --data-dir ../shared/corpora/multi30k --pairs en-fr --minutes 50
    python -m scripts.reproduce_results --pairs en-fr --entry en-fr-avx2 --data-dir ...  # a second CPU
    python -m scripts.reproduce_results --tag avx2 --data-dir ...  # every pair again, beside the first
    python -m scripts.reproduce_results --pairs en-fr --entry en-fr-cool --data-dir ... --train --decay rsqrt
    python -m scripts.reproduce_results --table      # the table again, from docs/results.json alone
    python -m scripts.reproduce_results --table en-fr-avx2 en-de-avx2   # of those entries only
    python -m scripts.reproduce_results --figures en-fr-1206   # docs/figures/ from that entry

Each pair trains with the default recipe (`seq2seq train --max-minutes 50`, the `small` preset)
into runs/multi30k-<src>-<tgt>; an existing run resumes instead of starting over, and
`--skip-training` only evaluates. It then evaluates the best checkpoint greedily and with beam 5 on
test_2016_flickr and test_2017_flickr (where the pair has it).

What it produced goes into docs/results.json, kept in the repository: per pair the run's config and
every metrics.jsonl row, the test scores with the sacreBLEU signature, example translations, and
the provenance (commit, date, CPU model and flags, torch). `--figures ENTRY` writes the figure
files the pages quote (scripts/figures.py) from an en->fr entry trained on committed code:
quality-en-fr (its test scores) and train-throughput (its steps, epochs and tokens/s). A pair rerun
replaces its own entry only; `--entry NAME` keeps a second run of one pair (on another CPU, or with
a lever: the options after `--train` are added to the recipe's command) beside the first, and `--tag
TAG` a second run of every pair asked for, as `<pair>-TAG`; a run ends by printing the table of the
entries it wrote. The markdown table in docs/results.md is printed from that file, so it never
outlives its evidence.
"""

import argparse
import datetime
import json
import platform
import subprocess
import sys
from pathlib import Path

import torch

from scripts import common
from seq2seq.atomic import write_atomic
from seq2seq.data.corpus import MULTI30K_LANGS
from seq2seq.runs.files import load_config, read_metrics

RESULTS = common.REPO / "docs" / "results.json"
PAIRS = ["en-fr", "en-de", "en-cs"]
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
    """HEAD's id, "+uncommitted changes" where the package differs from it: a changed file, or a
    module git does not hold (untracked, or hidden by an ignore rule)."""
    proc = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "diff", "--quiet", "HEAD", "--", "seq2seq"]).returncode != 0
    others = subprocess.run(
        ["git", "ls-files", "--others", "--", "seq2seq/*.py"], capture_output=True, text=True
    )
    dirty = dirty or bool(others.stdout.strip())
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
        "cpu": common.cpu(),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "config": load_config(run),
        "metrics": read_metrics(run),
        "test": tests,
        "examples": dict(zip(EXAMPLES, translations, strict=True)),
    }


def entry_names(pairs: list[str], entry: str | None, tag: str | None) -> list[str]:
    """The results entry (and run, `runs/multi30k-<name>`) of each pair: the pair itself, or
    `--entry`'s name for one pair, or `<pair>-<tag>` for each."""
    if entry is not None and tag is not None:
        raise ValueError("--entry and --tag are two ways to name entries; choose one")
    if entry is not None and len(pairs) != 1:
        raise ValueError("--entry names the entry of one pair; --tag names one for each")
    for name in (n for n in (entry, tag) if n is not None):
        if not name or "/" in name:
            raise ValueError(f"{name!r} cannot name an entry and its run directory")
    return [entry] if entry else [f"{pair}-{tag}" if tag else pair for pair in pairs]


def table(results: dict, names: list[str] | None = None) -> str:
    """The markdown table of docs/results.md, from the results file alone: of the entries named,
    in that order, or of every entry."""
    if names:
        missing = [name for name in names if name not in results]
        if missing:
            raise ValueError(f"no entry {', '.join(missing)} in {RESULTS.name}")
        results = {name: results[name] for name in names}
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


def figures_of(entry: dict) -> list:
    """The pages' figures from an en->fr entry: its test scores, and its training's pace."""
    from scripts import figures

    if entry.get("pair") != "en-fr" or "+" in entry["commit"]:
        raise ValueError("the pages' figures come from an en->fr entry trained on committed code")
    stamp = {"date": entry["date"], "cpu": entry["cpu"], "torch": entry["torch"]}
    rows, scored = entry["metrics"], []
    trained = [r for r in rows if not r.get("averaged")]
    last, best = trained[-1], max(rows, key=lambda r: r["val_bleu"])
    for split, scores in entry["test"].items():
        g, b = scores["greedy"], scores["beam5"]
        scored.append([split, f"{g['bleu']:.1f} / {g['chrf']:.1f}", f"{b['bleu']:.1f} / {b['chrf']:.1f}"])
    minutes = rows[-1]["elapsed_s"] / 60
    signature = next(iter(entry["test"].values()))["beam5"]["bleu_signature"]
    quality = figures.stamped(
        "quality-en-fr",
        ["test set", "greedy BLEU / chrF", "beam 5 BLEU / chrF"],
        scored,
        entry["command"],
        entry["commit"],
        f"en->fr, the `small` preset, {minutes:.0f} minutes of training ({last['step']} steps); "
        f"the best checkpoint by validation BLEU ({best['val_bleu']:.1f}, greedy). sacreBLEU {signature}.",
        **stamp,
    )
    tokens = [r["tokens_per_s"] for r in trained if r.get("tokens_per_s")]
    pace = figures.stamped(
        "train-throughput",
        ["preset", "minutes", "steps", "epochs", "target tokens/s", "minutes an epoch", "best val BLEU"],
        [
            [
                "small",
                f"{minutes:.0f}",
                str(last["step"]),
                str(last["epoch"]),
                f"{sum(tokens) / len(tokens):,.0f}",
                f"{trained[-1]['elapsed_s'] / 60 / max(last['epoch'], 1):.2f}",
                f"{best['val_bleu']:.1f}",
            ]
        ],
        entry["command"],
        entry["commit"],
        "Target tokens/s is the mean over the epochs of the pace between validations; an epoch's "
        "minutes include its validation.",
        **stamp,
    )
    return [quality, pace]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--data-dir")
    p.add_argument("--pairs", nargs="+", help="default: " + " ".join(PAIRS))
    p.add_argument("--minutes", type=float, default=50)
    p.add_argument("--skip-training", action="store_true")
    p.add_argument("--entry", help="with one pair: the results entry and run (default: the pair)")
    p.add_argument("--tag", help="every pair's entry and run as <pair>-TAG, beside the pair's own")
    p.add_argument(
        "--train",
        nargs=argparse.REMAINDER,
        default=[],
        help="the rest: `seq2seq train` options besides the default recipe (a lever), e.g. --cooldown 0.2",
    )
    p.add_argument("--figures", metavar="ENTRY", help="only write docs/figures/ from this en->fr entry")
    p.add_argument(
        "--table",
        nargs="*",
        metavar="ENTRY",
        help="only print the table from docs/results.json (of those entries)",
    )
    return p


def main(argv: list[str] | None = None) -> None:
    p = parser()
    args = p.parse_args(argv)
    results = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
    pairs = args.pairs or PAIRS
    try:
        if args.figures is not None:
            if args.figures not in results:
                raise ValueError(f"no entry {args.figures} in {RESULTS.name}")
            from scripts import figures

            for figure in figures_of(results[args.figures]):
                print(f"wrote {figures.write(figure).relative_to(common.REPO)}")
            return
        if args.table is not None:
            if any((args.data_dir, args.pairs, args.entry, args.tag, args.train, args.skip_training)):
                raise ValueError("--table only prints the table; it takes no option of a run")
            print(table(results, args.table))
            return
        if not args.data_dir:
            raise ValueError("--data-dir is required unless --table")
        names = entry_names(pairs, args.entry, args.tag)
    except ValueError as error:
        p.error(str(error))
    for pair, name in zip(pairs, names, strict=True):
        run = Path("runs") / f"multi30k-{name}"
        results[name] = reproduce(pair, run, args.data_dir, args.minutes, args.skip_training, args.train)
        write_atomic(RESULTS, (json.dumps(results, indent=1) + "\n").encode())
    print(table(results, names))


if __name__ == "__main__":
    main()
