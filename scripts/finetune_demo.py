"""Fine-tuning against training from scratch, at equal minutes, on a domain the run never saw:
Multi30k's test_2017_mscoco (COCO captions, where the run learnt from Flickr30k's).

The 461 mscoco pairs are split in order: the first 200 train, the next 50 validate (the runs
choose their best weights there), the last 211 are the test. `--base` (a run trained on Multi30k
en->fr) is fine-tuned on the 200 with `train --init-from` for `--minutes`; a new run of the same
preset trains on the same 200 from scratch for the same minutes. All three (the base untouched,
fine-tuned, from scratch) are scored on the 211 with `seq2seq evaluate`, and the two curves drawn.

    python -m scripts.finetune_demo --base runs/unguided --data-dir ../shared/corpora/multi30k \
        --out runs/coco --minutes 8
"""

import argparse
import gzip
import json
import subprocess
import sys
from pathlib import Path

from scripts.common import cpu

SPLITS = {"train": (0, 200), "val": (200, 250), "test": (250, None)}


def lines(data_dir: Path, lang: str) -> list[str]:
    return gzip.decompress((data_dir / f"test_2017_mscoco.{lang}.gz").read_bytes()).decode().splitlines()


def write_split(data_dir: Path, out: Path) -> None:
    en, fr = lines(data_dir, "en"), lines(data_dir, "fr")
    out.mkdir(parents=True, exist_ok=True)
    for name, (a, b) in SPLITS.items():
        pairs = list(zip(en[a:b], fr[a:b], strict=True))
        (out / f"{name}.tsv").write_text("".join(f"{s}\t{t}\n" for s, t in pairs), encoding="utf-8")
        (out / f"{name}.en").write_text("".join(f"{s}\n" for s, _ in pairs), encoding="utf-8")
        (out / f"{name}.fr").write_text("".join(f"{t}\n" for _, t in pairs), encoding="utf-8")


def seq2seq(*args) -> str:
    return subprocess.run(
        [sys.executable, "-m", "seq2seq", *map(str, args)], check=True, capture_output=True, text=True
    ).stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--minutes", type=float, default=8.0)
    parser.add_argument("--lr", type=float, default=2e-4, help="the fine-tuning's peak rate")
    args = parser.parse_args()
    print(cpu())
    data = args.out / "data"
    write_split(args.data_dir, data)
    corpus = [
        "--corpus",
        f"{data}/{{split}}.tsv",
        "--src",
        "en",
        "--tgt",
        "fr",
        "--max-minutes",
        args.minutes,
    ]
    tuned, scratch = args.out / "tuned", args.out / "scratch"
    seq2seq("train", *corpus, "--init-from", args.base, "--run", tuned, "--lr", args.lr, "--warmup", 20)
    seq2seq("train", *corpus, "--preset", "small", "--run", scratch)
    print(
        f"test: the last {len(lines(args.data_dir, 'en')) - SPLITS['test'][0]} test_2017_mscoco pairs, beam 5"
    )
    for name, run in (("base (Multi30k only)", args.base), ("fine-tuned", tuned), ("from scratch", scratch)):
        report = json.loads(
            seq2seq(
                "evaluate",
                "--run",
                run,
                "--source",
                data / "test.en",
                "--reference",
                data / "test.fr",
                "--json",
            )
        )
        print(f"{name:<22} BLEU {report['bleu']:6.2f}  chrF {report['chrf']:6.2f}")
    subprocess.run(
        [sys.executable, "-m", "scripts.plot_curves", tuned, scratch, "--out", args.out / "curves.png"],
        check=True,
    )


if __name__ == "__main__":
    main()
