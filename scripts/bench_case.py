"""ALL-CAPS and Title-Case input: test_2016's sources and references upper-cased (and each word's
first letter a capital), translated as `seq2seq translate` translates lines (seq2seq/stream, which
reads such lines in sentence case and writes them back in theirs: documents/case.py) and by the
search alone (the model reading the line as given), beside the ordinary case. Cased BLEU
(sacreBLEU's default), beam 5.

    python -m scripts.bench_case --run runs/multi30k-en-fr-1206c --data-dir DIR --figure
"""

import argparse

import sacrebleu

from scripts import figures
from scripts.common import cpu
from seq2seq.data.corpus import load_pairs
from seq2seq.decoding.options import DecodeOptions
from seq2seq.decoding.search import translate
from seq2seq.documents.case import TITLE, restore
from seq2seq.runs.load import load_run
from seq2seq.runs.recipe import stored_languages
from seq2seq.stream.lines import LineTranslator
from seq2seq.stream.steer import Steer, Terms, TraceFile

CASES = {
    "ordinary": lambda text: text,
    "ALL CAPS": str.upper,
    "Title Case": lambda text: restore(text.lower(), TITLE),
}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--run", required=True)
    p.add_argument("--data-dir", required=True)
    p.add_argument("--figure", action="store_true", help="write docs/figures/case.json")
    args = p.parse_args(argv)
    commit = figures.clean_commit(figures.DEPENDS["case"]) if args.figure else None
    model, tokenizer = load_run(args.run, packed=True)
    corpus, src, tgt = stored_languages(args.run)
    pairs = load_pairs(corpus, "test_2016_flickr", src, tgt, args.data_dir)
    print(f"{args.run}, test_2016_flickr ({len(pairs)} pairs)\n{cpu()}")
    options = DecodeOptions(beam=5)
    lines = LineTranslator(
        model, tokenizer, options, Steer(None, None, TraceFile(None), Terms((), (), None, None, False))
    )
    rows, ordinary = [], None
    for name, cased in CASES.items():
        sources, references = [cased(s) for s, _ in pairs], [cased(r) for _, r in pairs]
        ways = {"translate's lines": lines.translate(sources, 1).result.best}
        if name != "ordinary":
            ways["the search alone"] = translate(model, tokenizer, sources, options).best
        for way, hypotheses in ways.items():
            bleu = sacrebleu.corpus_bleu(hypotheses, [references]).score
            ordinary = ordinary if ordinary is not None else bleu
            rows.append([name, way, f"{bleu:.2f}", f"{bleu / ordinary:.1%}"])
            print(" | ".join(rows[-1]))
    if args.figure:
        note = (f"{args.run}: test_2016_flickr's sources and references alike in each case, beam 5, "
                "cased BLEU (sacreBLEU's default); the share is of the ordinary case's BLEU.")  # fmt: skip
        figures.record("case", ["input", "translated by", "BLEU", "of ordinary"], rows, note, commit)


if __name__ == "__main__":
    main()
