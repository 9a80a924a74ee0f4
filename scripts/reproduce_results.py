"""Reproduce the README's results table end to end: train each pair, then score it.

    python scripts/reproduce_results.py --data-dir ../shared/corpora/multi30k
    python scripts/reproduce_results.py --data-dir ../shared/corpora/multi30k --pairs en-fr --minutes 50

Each pair trains with the same recipe (`small` preset, 50 minutes of wall clock on the machine it
runs on) into runs/multi30k-<src>-<tgt>; an existing run resumes instead of starting over, and
`--skip-training` only evaluates. It then evaluates the best checkpoint greedily and with beam 5 on
test_2016_flickr and test_2017_flickr (where the pair has it) and prints a markdown table with the
sacreBLEU signature and a few example translations.
"""

import argparse
import json
import subprocess
import sys
from pathlib import Path

from seq2seq.data.corpus import MULTI30K_LANGS
from seq2seq.training.checkpoint import read_metrics

RECIPE = ["--preset", "small"]  # the defaults are the recipe: 3072-piece batches, lr 1e-3, warmup 800
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


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--data-dir", required=True)
    p.add_argument("--pairs", nargs="+", default=["en-fr", "en-de", "en-cs"])
    p.add_argument("--minutes", type=float, default=50)
    p.add_argument("--skip-training", action="store_true")
    args = p.parse_args()
    rows, examples, signature = [], {}, ""
    for pair in args.pairs:
        src, tgt = pair.split("-")
        run = Path("runs") / f"multi30k-{src}-{tgt}"
        if not args.skip_training:
            seq2seq(
                "train",
                "--data-dir",
                args.data_dir,
                "--src",
                src,
                "--tgt",
                tgt,
                "--run",
                str(run),
                "--max-minutes",
                str(args.minutes),
                *RECIPE,
            )
        metrics = read_metrics(run)
        for split in ("test_2016_flickr", "test_2017_flickr"):
            if tgt not in MULTI30K_LANGS[split]:
                continue
            scores = {}
            for search in (["--greedy"], ["--beam", "5"]):
                out = seq2seq(
                    "evaluate",
                    "--run",
                    str(run),
                    "--data-dir",
                    args.data_dir,
                    "--split",
                    split,
                    "--json",
                    *search,
                )
                scores[search[0]] = json.loads(out)
            signature = scores["--beam"]["bleu_signature"]
            g, b = scores["--greedy"], scores["--beam"]
            rows.append(
                f"| {src}->{tgt} | {split} | {g['bleu']:.1f} / {g['chrf']:.1f} | "
                f"{b['bleu']:.1f} / {b['chrf']:.1f} | "
                f"{metrics[-1]['elapsed_s'] / 60:.0f} | {metrics[-1]['step']} | "
                f"{max(r['val_bleu'] for r in metrics):.1f} |"
            )
        examples[pair] = seq2seq("translate", "--run", str(run), *EXAMPLES).splitlines()
    print(
        "| pair | test set | greedy BLEU / chrF | beam 5 BLEU / chrF | train minutes | steps | "
        "best val BLEU (greedy) |"
    )
    print("|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    print(f"\nsacreBLEU: {signature}\n")
    for pair, lines in examples.items():
        for source, translation in zip(EXAMPLES, lines, strict=True):
            print(f"- {pair}: {source} -> {translation}")


if __name__ == "__main__":
    main()
