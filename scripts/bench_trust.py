"""How well the trust signals (seq2seq/trust) detect errors in translations, and what checking costs:

    python -m scripts.bench_trust --run runs/multi30k-en-fr-1206c \
        --data-dir ../shared/corpora/multi30k --figure

- The benchmark: seq2seq/trust/cases.py's cases (every pair as it is, and each made wrong one way:
  a clause or two content words dropped, another pair's reference, a loop, a swapped word) of the
  development split (val) and of the test splits (test_2016_flickr + test_2017_flickr).
- Each single signal's AUROC per error type on test (the chance a wrong pair scores above a correct
  one): -score (mean log-probability a piece), coverage lack, repetition, -the least word's
  log-probability, and -dependence (attribution by ablation, from a second pass); then the
  detector that flags that error (calibration.py's, fitted on val exactly as `seq2seq check
  --calibrate` fits it; a swapped word's is the least word's log-probability), and each flag's F1.
- Words: in the model's own beam-5 translations of test, how well a word's log-probability finds
  the words the reference lacks (AUROC), and the precision and recall of the "check this word"
  mark at the threshold chosen on val.
- The sentence score against sentence chrF of the model's own beam-5 translations (Pearson).
- The cost (one process, the run loaded as `translate` loads it): `translate` of test_2016's
  sources with --confidence off and on, beside the search alone, alternated, each the median of
  its rounds; --confidence on over the search alone is the goal's ratio, off over the search alone
  shows that off is free.
"""

import argparse
import statistics
import time

import numpy as np
import sacrebleu

from scripts import figures
from scripts.common import cpu
from seq2seq.data.corpus import load_pairs
from seq2seq.decoding.options import DecodeOptions
from seq2seq.decoding.search import translate
from seq2seq.runs.load import load_run
from seq2seq.runs.recipe import stored_languages
from seq2seq.stream.lines import LineTranslator
from seq2seq.stream.steer import Steer, Terms, TraceFile
from seq2seq.trust.calibration import FAMILIES, FEATURES, Calibration, calibrated, own_signals
from seq2seq.trust.cases import KINDS, cases, word_labels
from seq2seq.trust.signals import check_pairs

SIGNALS = {  # the single signals, each oriented so that higher is likelier wrong
    **{name: f for name, f in FEATURES.items() if name != "length skew"},
    "-dependence": lambda s: -s.dependence,  # attribution by ablation: a second pass
}
COLUMNS = ["error", "pairs", *SIGNALS, "detector"]
GROUP = 256  # lines a group, as `translate` streams a file (8 batches of 32)


def auroc(wrong: np.ndarray, right: np.ndarray) -> float:
    """The chance a wrong pair's value is above a correct one's (ties count half): Mann-Whitney."""
    values = np.concatenate([wrong, right])
    ranks = values.argsort().argsort().astype(float) + 1
    for v in np.unique(values):  # ties share their mean rank
        tied = values == v
        ranks[tied] = ranks[tied].mean()
    return (ranks[: len(wrong)].sum() - len(wrong) * (len(wrong) + 1) / 2) / (len(wrong) * len(right))


def signals_by_kind(model, tokenizer, pairs, seed: int) -> dict[str, list]:
    built = cases(pairs, seed)
    found = check_pairs(model, tokenizer, [s for _, s, _ in built], [t for _, _, t in built], dependence=True)
    out: dict[str, list] = {}
    for (kind, _, _), s in zip(built, found, strict=True):
        out.setdefault(kind, []).append(s)
    return out


def detector_of(kind: str, calibration: Calibration):
    """The value the flag for `kind` reads, oriented (higher: likelier wrong), and its threshold."""
    for family, kinds in FAMILIES.items():
        if kind in kinds:
            detector = getattr(calibration, family)
            return detector.probability, detector.threshold
    return SIGNALS["-least word"], -calibration.unsure_word


def table(test: dict, calibration: Calibration) -> list[list[str]]:
    print(f"{'error':22s} {'pairs':>5s} " + " ".join(f"{name:>13s}" for name in COLUMNS[2:]))
    rows = []
    for kind in KINDS:
        values = [*SIGNALS.values(), detector_of(kind, calibration)[0]]
        scores = [auroc(*(np.array([f(s) for s in test[k]]) for k in (kind, "correct"))) for f in values]
        print(f"{kind:22s} {len(test[kind]):5d} " + " ".join(f"{a:13.3f}" for a in scores))
        rows.append([kind, str(len(test[kind])), *(f"{a:.3f}" for a in scores)])
    return rows


def flag_f1(split: dict, calibration: Calibration) -> list[str]:
    """Each flag's F1 of finding its errors among them and the correct pairs."""
    said = []
    for flag, kinds in FAMILIES.items():
        value, threshold = detector_of(kinds[0], calibration)
        caught = sum(value(s) >= threshold for k in kinds for s in split[k])
        false = sum(value(s) >= threshold for s in split["correct"])
        said.append(f"{flag} {2 * caught / (sum(len(split[k]) for k in kinds) + caught + false):.3f}")
    return said


def own_words(model, tokenizer, pairs: list[tuple[str, str]]) -> tuple[list[float], list[float]]:
    """The log-probabilities of the words of the model's own beam-5 translations of the pairs'
    sources: those the reference lacks (likelier wrong), and those it holds."""
    sources = [s for s, _ in pairs]
    hypotheses = translate(model, tokenizer, sources, DecodeOptions(beam=5)).best
    wrong, right = [], []
    for s, (_, reference) in zip(check_pairs(model, tokenizer, sources, hypotheses), pairs, strict=True):
        for lp, held in zip(s.word_logprobs, word_labels(s.target_words, reference), strict=True):
            if held is not None:
                (right if held else wrong).append(lp)
    return wrong, right


def word_marks(model, tokenizer, pairs, calibration: Calibration) -> str:
    """Word-level: AUROC of -log-probability for the words of the model's own translations that
    the reference lacks, and the mark's precision and recall at the calibrated threshold."""
    wrong, right = (np.array(lps) for lps in own_words(model, tokenizer, pairs))
    caught, false = (wrong <= calibration.unsure_word).sum(), (right <= calibration.unsure_word).sum()
    return (
        f"{len(wrong)} of {len(wrong) + len(right)} words lacking from the reference, AUROC "
        f"{auroc(-wrong, -right):.3f}; marked below {calibration.unsure_word:.2f}: "
        f"{(caught + false) / (len(wrong) + len(right)):.1%} of words, precision "
        f"{caught / max(caught + false, 1):.3f}, recall {caught / len(wrong):.3f}"
    )


def correlation(model, tokenizer, pairs) -> float:
    """Pearson of the sentence score with sentence chrF, on the model's own beam-5 translations."""
    sources, refs = [s for s, _ in pairs], [t for _, t in pairs]
    hyps = translate(model, tokenizer, sources, DecodeOptions(beam=5)).best
    scores = [s.score for s in check_pairs(model, tokenizer, sources, hyps)]
    chrf = [sacrebleu.sentence_chrf(h, [r]).score for h, r in zip(hyps, refs, strict=True)]
    return float(np.corrcoef(scores, chrf)[0, 1])


def cost(run: str, sources: list[str], calibration: Calibration, rounds: int) -> dict[str, float]:
    """Median seconds of `translate`'s lines (groups of GROUP) with --confidence off, on, and of the
    search alone, alternated."""
    model, tokenizer = load_run(run, packed=True)
    options = DecodeOptions(beam=5)
    steer = Steer(None, None, TraceFile(None), Terms((), (), None, None, False))
    ways = {
        "search": lambda lines, first: translate(model, tokenizer, lines, options),
        "off": LineTranslator(model, tokenizer, options, steer).translate,
        "on": LineTranslator(model, tokenizer, options, steer, confidence=("json", calibration)).translate,
    }
    seconds: dict[str, list[float]] = {way: [] for way in ways}
    for _ in range(rounds):
        for way, run_lines in ways.items():
            start = time.perf_counter()
            for first in range(0, len(sources), GROUP):
                run_lines(sources[first : first + GROUP], first + 1)
            seconds[way].append(time.perf_counter() - start)
    return {way: statistics.median(s) for way, s in seconds.items()}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--run", required=True)
    p.add_argument("--data-dir", required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rounds", type=int, default=3, help="rounds of the cost's alternation")
    p.add_argument("--figure", action="store_true", help="write docs/figures/trust.json")
    args = p.parse_args(argv)
    commit = figures.clean_commit(figures.DEPENDS["trust"]) if args.figure else None
    model, tokenizer = load_run(args.run)
    corpus, src, tgt = stored_languages(args.run)
    split = {name: load_pairs(corpus, name, src, tgt, args.data_dir)
             for name in ("val", "test_2016_flickr", "test_2017_flickr")}  # fmt: skip
    print(f"{args.run}: dev val ({len(split['val'])} pairs), test test_2016 + test_2017\n{cpu()}")
    start = time.perf_counter()
    dev = signals_by_kind(model, tokenizer, split["val"], args.seed)
    test = signals_by_kind(model, tokenizer, split["test_2016_flickr"] + split["test_2017_flickr"], args.seed)
    calibration = calibrated(
        dev, own_signals(model, tokenizer, [s for s, _ in split["val"]]), f"{args.run}, val"
    )
    shipped = Calibration.read()
    same = (shipped.omission, shipped.hallucination, shipped.unsure_word) == (
        calibration.omission, calibration.hallucination, calibration.unsure_word,
    )  # fmt: skip
    print(f"the package's calibration.json {'is' if same else 'is NOT'} this fit")
    rows = table(test, calibration)
    f1 = (
        f"F1 on val: {', '.join(flag_f1(dev, calibration))}; on test: {', '.join(flag_f1(test, calibration))}"
    )
    tests = ("test_2016_flickr", "test_2017_flickr")
    words = word_marks(model, tokenizer, split[tests[0]] + split[tests[1]], calibration)
    print(f"words of the model's own translations of test: {words}")
    pearson = [f"{n} {correlation(model, tokenizer, split[n]):.3f}" for n in tests]
    print(f"flags' {f1}\nsentence score vs sentence chrF (beam 5), Pearson: {', '.join(pearson)}")
    sources = [s for s, _ in split["test_2016_flickr"]]
    took = cost(args.run, sources, calibration, args.rounds)
    ratios = f"off {took['off'] / took['search']:.3f}x, on {took['on'] / took['search']:.3f}x"
    print(f"translate, beam 5, {len(sources)} lines: search {took['search']:.1f} s; --confidence {ratios}")
    print(f"({time.perf_counter() - start:.0f} s)")
    if args.figure:
        note = (
            f"AUROC on test_2016 + test_2017, {args.run}; the detectors fitted on val (the package's "
            f"calibration.json {'is' if same else 'is not'} this fit). Flags' {f1}. Words of the "
            f"model's own beam-5 translations of test: {words}. Sentence score "
            f"against sentence chrF of the model's beam-5 translations, Pearson: {', '.join(pearson)}. "
            f"translate of test_2016 ({len(sources)} lines, beam 5, median of {args.rounds} alternated "
            f"rounds, one process, 2 threads): the search alone {took['search']:.1f} s, "
            f"--confidence {ratios}."
        )
        figures.record("trust", COLUMNS, rows, note, commit)


if __name__ == "__main__":
    main()
