"""Which sentence splitter cuts a paragraph back into its sentences: pysbd or sentencex, measured
on paragraphs built from Multi30k's own sentences.

Construction: the English side of a split, taken in order, is cut into paragraphs of 2, 3, 4 and
5 consecutive sentences in turn (joined by one space), so each paragraph's true sentences are
known. A splitter is right on a paragraph when it returns exactly those sentences (spaces at the
ends aside). The choice is made on `val`; the figure reports `test_2016_flickr` too.

    pip install pysbd   # the other splitter measured (sentencex comes with the docs extra)
    python -m scripts.bench_splitters --data-dir "$SEQ2SEQ_DATA_DIR"
"""

import argparse
import gzip
import itertools
import time
from pathlib import Path

from scripts.common import cpu


def paragraphs(sentences: list[str]) -> list[list[str]]:
    sizes, out, i = itertools.cycle((2, 3, 4, 5)), [], 0
    while i < len(sentences):
        n = next(sizes)
        out.append([s.strip() for s in sentences[i : i + n]])
        i += n
    return [p for p in out if len(p) > 1]


def splitters():
    import pysbd
    import sentencex

    segmenter = pysbd.Segmenter(language="en", clean=False)
    return {
        "pysbd": lambda text: segmenter.segment(text),
        "sentencex": lambda text: list(sentencex.segment("en", text)),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data-dir", required=True)
    args = p.parse_args()
    print(f"CPU: {cpu()}")
    print("| split | paragraphs | splitter | split exactly | sentences found / true | seconds |")
    print("|---|---:|---|---:|---:|---:|")
    for split in ("val", "test_2016_flickr"):
        with gzip.open(Path(args.data_dir) / f"{split}.en.gz", "rt", encoding="utf-8") as f:
            given = paragraphs([line.rstrip("\n") for line in f])
        for name, split_text in splitters().items():
            start = time.perf_counter()
            found = [[s.strip() for s in split_text(" ".join(p)) if s.strip()] for p in given]
            seconds = time.perf_counter() - start
            exact = sum(f == p for f, p in zip(found, given, strict=True))
            counts = sum(map(len, found)) / sum(map(len, given))
            share = f"{exact / len(given):.1%}"
            print(f"| {split} | {len(given)} | {name} | {share} | {counts:.3f} | {seconds:.1f} |")


if __name__ == "__main__":
    main()
