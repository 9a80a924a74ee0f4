"""ALL-CAPS and Title-Case input: test_2016's sources and references upper-cased (and each word's
first letter a capital), translated as `seq2seq translate` translates lines and as `seq2seq
evaluate` does (both the one request, seq2seq/request, which reads such lines in sentence case and
writes them back in theirs: request/case.py) and by the search alone (the model reading the line
as given), beside the ordinary case; with
`--augmented-run`, a run trained on case-augmented pairs (scripts/case_augment.py) measured the same
way beside it. Cased BLEU (sacreBLEU's default), beam 5.

    python -m scripts.bench_case --run runs/multi30k-en-fr-1206e --augmented-run R --data-dir DIR --figure
"""

import argparse

import sacrebleu

from scripts import figures
from scripts.common import cpu
from seq2seq.data.corpus import load_pairs
from seq2seq.decoding.options import DecodeOptions
from seq2seq.decoding.search import translate
from seq2seq.paired import evaluate_against
from seq2seq.request.case import TITLE, restore
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
    p.add_argument("--augmented-run", help="a run trained on case-augmented pairs (scripts/case_augment.py)")
    p.add_argument("--data-dir", required=True)
    p.add_argument("--figure", action="store_true", help="write docs/figures/case.json")
    args = p.parse_args(argv)
    commit = figures.clean_commit(figures.DEPENDS["case"]) if args.figure else None
    corpus, src, tgt = stored_languages(args.run)
    pairs = load_pairs(corpus, "test_2016_flickr", src, tgt, args.data_dir)
    print(f"test_2016_flickr ({len(pairs)} pairs)\n{cpu()}")
    runs = {"the default recipe": args.run}
    if args.augmented_run is not None:
        runs["trained case-augmented"] = args.augmented_run
    rows, ordinary = [], []
    for model_name, run in runs.items():
        for name, way, bleu in measured(run, pairs):
            ordinary = ordinary or [bleu]  # the default run's ordinary case: what every share is of
            rows.append([model_name, name, way, f"{bleu:.2f}", f"{bleu / ordinary[0]:.1%}"])
            print(" | ".join(rows[-1]))
    if args.figure:
        note = f"{' and '.join(runs.values())}: test_2016_flickr's sources and references alike in each "
        note += (
            "case, beam 5, cased BLEU (sacreBLEU's default); the share is of the default run's ordinary BLEU."
        )
        columns = ["model", "input", "translated by", "BLEU", "of ordinary"]
        figures.record("case", columns, rows, note, commit)


def measured(run: str, pairs: list) -> list[tuple[str, str, float]]:
    """(case, way, BLEU) of the run on `pairs` in each case: through translate's lines and, for
    cased input, by the search alone."""
    model, tokenizer = load_run(run, packed=True)
    options = DecodeOptions(beam=5)
    lines = LineTranslator(
        model, tokenizer, options, Steer(None, None, TraceFile(None), Terms((), (), None, None, False))
    )
    out = []
    for name, cased in CASES.items():
        sources, references = [cased(s) for s, _ in pairs], [cased(r) for _, r in pairs]
        ways = {
            "translate's lines": lines.translate(sources, 1).result.best,
            "evaluate": evaluate_against(
                model, tokenizer, list(zip(sources, references, strict=True)), options
            )[0].hypotheses,
        }
        if name != "ordinary":
            ways["the search alone"] = translate(model, tokenizer, sources, options).best
        for way, hypotheses in ways.items():
            out.append((name, way, sacrebleu.corpus_bleu(hypotheses, [references]).score))
    return out


if __name__ == "__main__":
    main()
