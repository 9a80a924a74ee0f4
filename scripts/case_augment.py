"""Case augmentation, the other way to ALL-CAPS and Title-Case input (Mozilla's; request/case.py's
fold-and-restore is the way `translate` takes): a copy of a Multi30k folder whose training pairs
gain an upper-cased copy of a seeded `--share` of them and a Title-Cased copy of another (source
and target alike), every other file linked as it is. A run trained on it reads cased lines as
given; scripts/bench_case.py measures it ("the search alone") beside fold-and-restore.

    python -m scripts.case_augment --data-dir DIR --out runs/corpus-cased
    python -m scripts.reproduce_results --pairs en-fr --entry en-fr-cased --data-dir runs/corpus-cased
    python -m scripts.bench_case --run runs/multi30k-en-fr-cased --data-dir runs/corpus-cased
"""

import argparse
import gzip
import random
from pathlib import Path

from seq2seq.request.case import TITLE, restore


def augmented(lines: dict[str, list[str]], share: float, seed: int) -> dict[str, list[str]]:
    """Each language's training lines, then the upper-cased copies of a seeded `share` of the pairs,
    then the Title-Cased copies of another `share` (the pairs drawn without overlap)."""
    count = len(next(iter(lines.values())))
    drawn = random.Random(seed).sample(range(count), 2 * round(share * count))
    upper, title = drawn[: len(drawn) // 2], drawn[len(drawn) // 2 :]
    return {
        lang: [*text, *(text[i].upper() for i in upper), *(restore(text[i].lower(), TITLE) for i in title)]
        for lang, text in lines.items()
    }


def read(path: Path) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return f.read().splitlines()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--langs", nargs="+", default=["en", "fr"])
    p.add_argument("--share", type=float, default=0.05, help="of the pairs copied in each case")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=False)
    given = {lang: read(args.data_dir / f"train.{lang}.gz") for lang in args.langs}
    lines = augmented(given, args.share, args.seed)
    for lang, text in lines.items():
        with gzip.open(args.out / f"train.{lang}.gz", "wt", encoding="utf-8") as f:
            f.write("\n".join(text) + "\n")
    for path in args.data_dir.iterdir():
        if not (args.out / path.name).exists():
            (args.out / path.name).symlink_to(path.resolve())
    added = len(lines[args.langs[0]]) - len(given[args.langs[0]])
    print(f"{args.out}: {added} cased copies added to the training pairs (seed {args.seed})")


if __name__ == "__main__":
    main()
