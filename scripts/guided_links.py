"""Word links of a corpus's training pairs for `seq2seq train --guided-alignment`: eflomal over the
pairs tokenized as the gold set is (`split_words`), both directions, grow-diag-final-and, then
mapped back onto each line's own whitespace tokens (what training counts words by).

    python -m scripts.guided_links --data-dir ../shared/corpora/multi30k --out runs/train.en-fr.align
"""

import argparse
import time
from pathlib import Path

from scripts.common import cpu
from seq2seq.alignment.baseline import eflomal_links
from seq2seq.alignment.pharaoh import Links
from seq2seq.alignment.words import split_with_origin
from seq2seq.atomic import write_atomic
from seq2seq.data.corpus import load_pairs


def raw_links(pairs: list[tuple[str, str]], src: str, tgt: str) -> list[Links]:
    """Links between the lines' own whitespace tokens, from eflomal's links of the split words."""
    split = [(split_with_origin(s, src), split_with_origin(t, tgt)) for s, t in pairs]
    links = eflomal_links([" ".join(s[0]) for s, _ in split], [" ".join(t[0]) for _, t in split])
    return [
        Links.of({(s[1][i], t[1][j]) for i, j in pair.sure})
        for (s, t), pair in zip(split, links, strict=True)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default="multi30k")
    parser.add_argument("--data-dir")
    parser.add_argument("--src", default="en")
    parser.add_argument("--tgt", default="fr")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    print(cpu())
    pairs = load_pairs(args.corpus, "train", args.src, args.tgt, args.data_dir)
    start = time.perf_counter()
    links = raw_links(pairs, args.src, args.tgt)
    write_atomic(args.out, "".join(f"{pair.pharaoh()}\n" for pair in links).encode())
    print(f"{len(links)} pairs aligned in {time.perf_counter() - start:.0f} s -> {args.out}")


if __name__ == "__main__":
    main()
