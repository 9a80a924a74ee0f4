"""The README's three-way table: the Transformer and the two RNN attentions, trained on the same data
with the same wall-clock budget on the same machine, then scored the same way.

    python -m scripts.compare_architectures --data-dir ../shared/corpora/multi30k --minutes 50
    python -m scripts.compare_architectures --data-dir ../shared/corpora/multi30k --skip-training

Each system trains (`small` preset of its architecture, the default recipe otherwise) into
runs/compare-<name>; an existing run resumes instead of starting over. Then each best checkpoint
translates test_2016_flickr with beam 5, and the script prints one markdown row per system: BLEU
and chrF, parameters, training minutes, target tokens/s (mean over validations), and decoding
sentences/s (the evaluation's own time, 2 threads unless OMP_NUM_THREADS says otherwise), under
a line naming the CPU. Run nothing else meanwhile: the systems share the budget, not the machine.
"""

import argparse
import json
from pathlib import Path

from scripts.common import cpu
from scripts.reproduce_results import seq2seq
from seq2seq.runs.files import read_metrics
from seq2seq.runs.load import load_run

SYSTEMS = {  # name -> train options beyond the shared recipe
    "transformer": ["--arch", "transformer"],
    "rnn-bahdanau": ["--arch", "rnn", "--attention", "bahdanau"],
    "rnn-luong": ["--arch", "rnn", "--attention", "luong"],
}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--data-dir", required=True)
    p.add_argument("--minutes", type=float, default=50)
    p.add_argument("--systems", nargs="+", choices=list(SYSTEMS), default=list(SYSTEMS))
    p.add_argument("--skip-training", action="store_true")
    args = p.parse_args()
    print(f"CPU: {cpu()}")
    print(
        "| system | BLEU (beam 5) | chrF | parameters | training minutes | target tokens/s | "
        "decoding sentences/s (beam 5) |"
    )
    print("|---|---|---|---|---|---|---|")
    for name in args.systems:
        run = Path("runs") / f"compare-{name}"
        data = ["--data-dir", args.data_dir]
        if not args.skip_training:
            budget = ["--max-minutes", str(args.minutes)]
            seq2seq("train", *data, "--preset", "small", *budget, "--run", str(run), *SYSTEMS[name])
        scores = json.loads(seq2seq("evaluate", "--run", str(run), *data, "--beam", "5", "--json"))
        metrics = read_metrics(run)
        model, _ = load_run(run)
        parameters = sum(p.numel() for p in model.parameters())
        speeds = [r["tokens_per_s"] for r in metrics if not r.get("averaged")]  # averaged: no training
        tokens_per_s = sum(speeds) / len(speeds)
        print(
            f"| {name} | {scores['bleu']:.1f} | {scores['chrf']:.1f} | {parameters / 1e6:.1f}M | "
            f"{metrics[-1]['elapsed_s'] / 60:.0f} | {tokens_per_s:,.0f} | "
            f"{scores['sentences'] / scores['seconds']:.0f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
