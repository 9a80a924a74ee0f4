"""Is anything lost when text comes as paragraphs, and what does a document cost over lines?

Construction: test_2016_flickr's English sentences, in order, cut into paragraphs of 2, 3, 4 and 5
consecutive sentences in turn (scripts/bench_splitters.py's `paragraphs`), one space between
sentences and a blank line between paragraphs, as one plain-text document (`--format text`).
First as given (many captions end without a mark); then each sentence without a final mark
(. ! ?) given a full stop, as a sentence inside a paragraph has one: without it no splitter can
tell where it ends. A
paragraph is kept whole when its translation is exactly its sentences' own translations (the same
sentences given as lines) joined by one space. Greedy and beam 5.

Speed: the document against the same sentences given as lines (the library's `translate`, which
`seq2seq translate` calls a group at a time), alternated over rounds, each the median.

    python -m scripts.bench_documents --run runs/multi30k-en-fr-1206c --data-dir DIR --figure
"""

import argparse
import statistics
import time

from scripts import figures
from scripts.bench_splitters import paragraphs, punctuated
from scripts.common import cpu
from seq2seq.data.corpus import load_pairs
from seq2seq.decoding.options import DecodeOptions
from seq2seq.decoding.search import translate
from seq2seq.request.translator import translate_document
from seq2seq.runs.load import load_run
from seq2seq.runs.recipe import stored_languages

COLUMNS = ["paragraphs", "decoding", "kept whole", "sentences", "document / lines (time)"]


def kept(model, tokenizer, given: list[list[str]], options: DecodeOptions, rounds: int) -> tuple:
    """Paragraphs translated whole as their sentences' translations joined, and the median time of
    the document over the median time of its sentences as lines."""
    sentences = [s for p in given for s in p]
    document = "\n\n".join(" ".join(p) for p in given) + "\n"
    times: dict[str, list[float]] = {"lines": [], "document": []}
    for _ in range(rounds):
        start = time.perf_counter()
        alone = translate(model, tokenizer, sentences, options).best
        times["lines"].append(time.perf_counter() - start)
        start = time.perf_counter()
        done = translate_document(model, tokenizer, document, "text", options)
        times["document"].append(time.perf_counter() - start)
    out = done.text.rstrip("\n").split("\n\n")
    at, whole = 0, 0
    for paragraph, translated in zip(given, out, strict=True):
        whole += translated == " ".join(alone[at : at + len(paragraph)])
        at += len(paragraph)
    ratio = statistics.median(times["document"]) / statistics.median(times["lines"])
    return whole, len(sentences), ratio


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--run", required=True)
    p.add_argument("--data-dir", required=True)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--figure", action="store_true", help="write docs/figures/documents.json")
    args = p.parse_args(argv)
    commit = figures.clean_commit(figures.DEPENDS["documents"]) if args.figure else None
    model, tokenizer = load_run(args.run, packed=True)
    corpus, src, tgt = stored_languages(args.run)
    raw = [s for s, _ in load_pairs(corpus, "test_2016_flickr", src, tgt, args.data_dir)]
    print(f"{args.run}, test_2016_flickr\n{cpu()}")
    rows = []
    # as given first (the corpus's captions, many without a final stop), stops added second
    for what, sentences in (("as given", raw), ("with full stops added", [punctuated(s) for s in raw])):
        given = paragraphs(sentences)
        for name, options in (("greedy", DecodeOptions(beam=1)), ("beam 5", DecodeOptions(beam=5))):
            rounds = args.rounds if what == "as given" else 1
            whole, n, ratio = kept(model, tokenizer, given, options, rounds)
            share = f"{whole} ({whole / len(given):.1%})"
            row = [f"{len(given)}, {what}", name, share, str(n), f"{ratio:.3f}"]
            print(" | ".join(row))
            rows.append(row)
    if args.figure:
        note = (
            f"{args.run}: test_2016_flickr's sentences as paragraphs of 2-5 (one text document); kept "
            "whole: the paragraph's translation is its sentences' own translations joined. Time: the "
            f"document over the same sentences as lines, the median of {args.rounds} alternated rounds "
            "(1 for the rows with stops added), one process, 2 threads."
        )
        figures.record("documents", COLUMNS, rows, note, commit)


if __name__ == "__main__":
    main()
