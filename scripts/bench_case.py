"""ALL-CAPS and Title-Case input: test_2016's sources upper-cased (and each word's first letter a
capital), translated as `seq2seq translate` translates lines and as `seq2seq evaluate` does (both
the one request, seq2seq/request, which reads such lines in sentence case and writes them back in
theirs: request/case.py) and by the search alone (the model reading the line as given), beside the
ordinary case; with `--augmented-run`, a run trained on case-augmented pairs
(scripts/case_augment.py) measured the same way beside it. Beam 5.

- BLEU against the corpus's own references, case ignored (sacreBLEU's lowercase): what was
  translated, whatever its case, so the search alone is not scored on a case mismatch.
- The output's case checked: the share of translations in the input's case (every letter a
  capital; every word a capital first), and cased BLEU against the references put in that case.

    python -m scripts.bench_case --run runs/multi30k-en-fr-1207a --data-dir DIR --figure
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
        for name, way, content, kept, cased in measured(run, pairs):
            ordinary = ordinary or [content]  # the default run's ordinary case: what every share is of
            rows.append(
                [model_name, name, way, f"{content:.2f}", f"{content / ordinary[0]:.1%}", kept, cased]
            )
            print(" | ".join(rows[-1]))
    if args.figure:
        note = f"{' and '.join(runs.values())}: test_2016_flickr's sources in each case, beam 5. Content: "
        note += "BLEU against the corpus's references with case ignored (the share is of the default "
        note += "run's ordinary); the case: the translations in the input's case, and cased BLEU against "
        note += "the references put in the input's case."
        figures.record("case", COLUMNS, rows, note, commit)


COLUMNS = ["model", "input", "translated by", "BLEU, case ignored", "of ordinary", "in the input's case",
           "BLEU, cased reference in the input's case"]  # fmt: skip


def in_case(text: str, name: str) -> bool:
    """Whether a translation is written in the case `name` (ALL CAPS: no small letter; Title Case:
    every word that starts with a letter starts with a capital)."""
    if name == "ALL CAPS":
        return not any(c.islower() for c in text)
    return all(w[0].isupper() for w in text.split() if w[0].isalpha())


def measured(run: str, pairs: list) -> list[tuple[str, str, float, str, str]]:
    """(case, way, BLEU with case ignored, share in the input's case, cased BLEU against the
    references in that case) of the run on `pairs` in each case: through translate's lines and
    evaluate and, for cased input, by the search alone."""
    model, tokenizer = load_run(run, packed=True)
    options = DecodeOptions(beam=5)
    lines = LineTranslator(
        model, tokenizer, options, Steer(None, None, TraceFile(None), Terms((), (), None, None, False))
    )
    references = [r for _, r in pairs]
    out = []
    for name, cased in CASES.items():
        sources = [cased(s) for s, _ in pairs]
        ways = {
            "translate's lines": lines.translate(sources, 1).result.best,
            "evaluate": evaluate_against(
                model, tokenizer, list(zip(sources, references, strict=True)), options
            )[0].hypotheses,
        }
        if name != "ordinary":
            ways["the search alone"] = translate(model, tokenizer, sources, options).best
        for way, hypotheses in ways.items():
            content = sacrebleu.corpus_bleu(hypotheses, [references], lowercase=True).score
            if name == "ordinary":
                out.append((name, way, content, "-", "-"))
                continue
            kept = sum(in_case(h, name) for h in hypotheses) / len(hypotheses)
            cased_bleu = sacrebleu.corpus_bleu(hypotheses, [[cased(r) for r in references]]).score
            out.append((name, way, content, f"{kept:.1%}", f"{cased_bleu:.2f}"))
    return out


if __name__ == "__main__":
    main()
