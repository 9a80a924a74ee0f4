"""Which sentence splitting cuts a paragraph back into its sentences: pysbd, sentencex, or the two
together as seq2seq's documents cut (seq2seq/documents/sentences.py: sentencex, then pysbd's
second opinion inside its sentences), measured on paragraphs built from Multi30k's own sentences.

Construction: one side of a split, taken in order, is cut into paragraphs of 2, 3, 4 and 5
consecutive sentences in turn (joined by one space), so each paragraph's true sentences are
known. A sentence without a final mark (. ! ?) gets a full stop, as a sentence inside a
paragraph has one: without it no rule-based splitter can tell where it ends (the English rows
"as given" measure that). A splitting is right on a paragraph when it returns exactly those
sentences (spaces at the ends aside). Every splitter is given the language's own rules (pysbd
has no Czech: its English ones). The choice is made on `train` (the development data here);
`test_2016_flickr` is reported.

    python -m scripts.bench_splitters --data-dir "$SEQ2SEQ_DATA_DIR" [--figure]
"""

import argparse
import gzip
import itertools
import time
from pathlib import Path

from scripts import figures
from scripts.common import cpu

LANGUAGES = ("en", "fr", "de", "cs")
SPLITS = ("train", "test_2016_flickr")
COLUMNS = [
    "language",
    *(f"{s}: {n} missed" for s in ("train", "test_2016") for n in ("pysbd", "sentencex", "both")),
]


def paragraphs(sentences: list[str]) -> list[list[str]]:
    sizes, out, i = itertools.cycle((2, 3, 4, 5)), [], 0
    while i < len(sentences):
        n = next(sizes)
        out.append([s.strip() for s in sentences[i : i + n]])
        i += n
    return [p for p in out if len(p) > 1]


def punctuated(sentence: str) -> str:
    return sentence if sentence.endswith((".", "!", "?")) else sentence + "."


def splitters(lang: str) -> dict:
    """Each splitting of a text into its sentences' strings, with `lang`'s rules."""
    import sentencex

    from seq2seq.documents.sentences import second_opinion, split

    segmenter = second_opinion(lang)  # pysbd as the documents ask it: the language's rules, else English
    return {
        "pysbd": lambda text: segmenter.segment(text),
        "sentencex": lambda text: list(sentencex.segment(lang, text)),
        "both": lambda text: [text[a:b] for a, b in split(text, lang)],
    }


def exact(split_text, given: list[list[str]]) -> tuple[int, float]:
    """How many paragraphs `split_text` cuts exactly into their sentences, and its seconds."""
    start = time.perf_counter()
    found = [[s.strip() for s in split_text(" ".join(p)) if s.strip()] for p in given]
    return sum(f == p for f, p in zip(found, given, strict=True)), time.perf_counter() - start


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", required=True)
    p.add_argument("--figure", action="store_true", help="write docs/figures/splitters.json")
    args = p.parse_args(argv)
    commit = figures.clean_commit(figures.DEPENDS["splitters"]) if args.figure else None
    print(f"CPU: {cpu()}")
    rows, sizes, given_rows, seconds = [], {}, [], {}
    for lang, stops in [(lang, True) for lang in LANGUAGES] + [("en", False)]:
        row = [lang if stops else "en, as given"]
        for split in SPLITS:
            with gzip.open(Path(args.data_dir) / f"{split}.{lang}.gz", "rt", encoding="utf-8") as f:
                sentences = [line.strip() for line in f]
            given = paragraphs([punctuated(s) for s in sentences] if stops else sentences)
            sizes[split] = len(given)
            for name, split_text in splitters(lang).items():
                right, took = exact(split_text, given)
                row.append(str(len(given) - right))
                if (lang, split, stops) == ("en", "train", True):
                    seconds[name] = took
        print(" | ".join(row))
        (rows if stops else given_rows).append(row)
    timing = ", ".join(f"{name} {took:.2f} s" for name, took in seconds.items())
    print(f"English train paragraphs: {timing}")
    if args.figure:
        (given,) = given_rows
        note = (
            f"Paragraphs of 2-5 consecutive sentences ({sizes['train']} a language from train, "
            f"{sizes['test_2016_flickr']} from test_2016_flickr), each sentence ended by a mark (a full "
            "stop added where the corpus has none); a cell: the paragraphs not cut exactly into their "
            "sentences. English as given (no mark added), pysbd, sentencex and both: train "
            f"{', '.join(given[1:4])}; test_2016 {', '.join(given[4:7])}. The time to cut the English "
            f"train paragraphs: {timing}."
        )
        figures.record("splitters", COLUMNS, rows, note, commit)


if __name__ == "__main__":
    main()
