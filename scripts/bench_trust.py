"""How well the trust signals (seq2seq/trust/signals.py) detect errors in translations: a benchmark
built from Multi30k's own pairs, each signal's AUROC per error type, chosen on a development split
(val) and reported on test splits (test_2016_flickr + test_2017_flickr); and how the sentence score
follows the sentence chrF of the model's own translations.

    python -m scripts.bench_trust --run runs/multi30k-en-fr-1206c \
        --data-dir ../shared/corpora/multi30k --figure

The benchmark (`cases`, seeded): every pair of a split as it is (correct), and each pair made wrong
one way, against its own source:
- omission, clause: the reference cut before its last clause (at the last comma or one of
  CLAUSE's words past its second word), the full stop kept; pairs with no such place are skipped;
- omission, words: the reference without its two longest words (content words: 4 letters or more);
- hallucination, other: the reference of another pair of the split (fluent, unrelated);
- hallucination, loop: the reference's first three words said four times;
- wrong word: one content word of the reference swapped for a content word of another reference.
AUROC (the chance a wrong pair scores above a correct one) of each signal, oriented so that higher
means likelier wrong: -score, omission, hallucination (-dependence), repetition, -the least word
log-probability, and their combination (a logistic regression fitted on the development split).
"""

import argparse
import random
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
from seq2seq.trust.signals import check_pairs

# the words a clause (or a phrase a caption can end without) starts with: French, and English
CLAUSE = {"et", "qui", "avec", "dans", "sur", "pendant", "tandis", "devant", "près"} | {
    "and",
    "who",
    "with",
    "in",
}
KINDS = ("omission, clause", "omission, words", "hallucination, other", "hallucination, loop", "wrong word")
SIGNALS = {
    "-score": lambda s: -s.score,
    "omission": lambda s: s.omission,
    "hallucination": lambda s: s.hallucination,
    "repetition": lambda s: s.repetition,
    "-least word": lambda s: -min(s.word_logprobs, default=0.0),
}


def content(words: list[str]) -> list[int]:
    return [i for i, w in enumerate(words) if sum(c.isalpha() for c in w) >= 4]


def cut_clause(words: list[str]) -> list[str] | None:
    """The words before the last clause (the final full stop kept), or None where none starts."""
    starts = [
        i for i, w in enumerate(words) if i >= 2 and (w.lower() in CLAUSE or words[i - 1].endswith(","))
    ]
    if not starts:
        return None
    kept = words[: starts[-1]]
    kept[-1] = kept[-1].rstrip(",")
    return kept + (["."] if words[-1] == "." or words[-1].endswith(".") else [])


def wronged(kind: str, words: list[str], other: list[str], rng: random.Random) -> list[str] | None:
    """The reference's words made wrong in one way (None: this pair cannot be)."""
    if kind == "omission, clause":
        return cut_clause(words)
    if kind == "omission, words":
        longest = sorted(content(words), key=lambda i: -len(words[i]))[:2]
        return None if len(longest) < 2 else [w for i, w in enumerate(words) if i not in longest]
    if kind == "hallucination, other":
        return other
    if kind == "hallucination, loop":
        return None if len(words) < 4 else words[:3] * 4
    mine, theirs = content(words), [w for w in (other[i] for i in content(other)) if w not in words]
    if not mine or not theirs:
        return None
    swapped = list(words)
    swapped[rng.choice(mine)] = rng.choice(theirs)
    return swapped


def cases(pairs: list[tuple[str, str]], seed: int = 0) -> list[tuple[str, str, str]]:
    """(kind, source, translation) for every pair as it is ("correct") and each way made wrong."""
    rng = random.Random(seed)
    order = list(range(len(pairs)))
    rng.shuffle(order)
    others = {i: pairs[order[(k + 1) % len(order)]][1] for k, i in enumerate(order)}  # never itself
    out = [("correct", s, t) for s, t in pairs]
    for kind in KINDS:
        for i, (s, t) in enumerate(pairs):
            made = wronged(kind, t.split(), others[i].split(), rng)
            if made is not None and " ".join(made) != t:
                out.append((kind, s, " ".join(made)))
    return out


def auroc(wrong: np.ndarray, right: np.ndarray) -> float:
    """The chance a wrong pair's value is above a correct one's (ties count half): Mann-Whitney."""
    values = np.concatenate([wrong, right])
    ranks = values.argsort().argsort().astype(float) + 1
    for v in np.unique(values):  # ties share their mean rank
        tied = values == v
        ranks[tied] = ranks[tied].mean()
    return (ranks[: len(wrong)].sum() - len(wrong) * (len(wrong) + 1) / 2) / (len(wrong) * len(right))


def features(signals) -> np.ndarray:
    return np.array([[f(s) for f in SIGNALS.values()] for s in signals])


def fit(x: np.ndarray, y: np.ndarray, steps: int = 2000) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A logistic regression (gradient descent on standardised features): mean, scale, weights."""
    mean, scale = x.mean(0), x.std(0) + 1e-9
    z = np.hstack([(x - mean) / scale, np.ones((len(x), 1))])
    w = np.zeros(z.shape[1])
    for _ in range(steps):
        p = 1 / (1 + np.exp(-z @ w))
        w -= 0.5 * z.T @ (p - y) / len(y)
    return mean, scale, w


def combined(x: np.ndarray, model) -> np.ndarray:
    mean, scale, w = model
    return np.hstack([(x - mean) / scale, np.ones((len(x), 1))]) @ w


COLUMNS = ["error", "pairs", *SIGNALS, "combination"]


def table(dev, test) -> list[list[str]]:
    """Each signal's AUROC per error type on the test split; the combination fitted on dev."""
    print(f"{'error':22s} {'pairs':>5s} " + " ".join(f"{name:>13s}" for name in COLUMNS[2:]))
    rows = []
    for kind in KINDS:
        x_dev, y_dev = (np.vstack([dev[kind], dev["correct"]]),
                        np.r_[np.ones(len(dev[kind])), np.zeros(len(dev["correct"]))])  # fmt: skip
        model = fit(x_dev, y_dev)
        wrong, right = test[kind], test["correct"]
        scores = [auroc(wrong[:, j], right[:, j]) for j in range(wrong.shape[1])]
        scores.append(auroc(combined(wrong, model), combined(right, model)))
        print(f"{kind:22s} {len(wrong):5d} " + " ".join(f"{a:13.3f}" for a in scores))
        rows.append([kind, str(len(wrong)), *(f"{a:.3f}" for a in scores)])
    return rows


# the flag each family of errors raises, and the signal it reads (oriented: higher is likelier wrong)
FLAGS = {
    "omission": (("omission, clause", "omission, words"), "omission"),
    "hallucination": (("hallucination, other", "hallucination, loop"), "hallucination"),
    "repetition": (("hallucination, loop",), "repetition"),
    "unsure word": (("wrong word",), "-least word"),
}


def best_threshold(wrong: np.ndarray, right: np.ndarray) -> tuple[float, float]:
    """The threshold on a signal (flag at or above it) with the best F1 of finding the wrong
    pairs among wrong and right ones, and that F1."""
    best = (float("inf"), 0.0)
    for t in np.unique(np.concatenate([wrong, right])):
        caught, false = (wrong >= t).sum(), (right >= t).sum()
        f1 = 2 * caught / (len(wrong) + caught + false)
        best = max(best, (float(t), float(f1)), key=lambda x: x[1])
    return best


def thresholds(dev, test) -> list[str]:
    """Each flag's threshold, chosen on dev; its F1 on dev and on test."""
    names, said = list(SIGNALS), []
    for flag, (kinds, signal) in FLAGS.items():
        j = names.index(signal)
        wrong_dev, wrong_test = (np.concatenate([split[k][:, j] for k in kinds]) for split in (dev, test))
        t, f1 = best_threshold(wrong_dev, dev["correct"][:, j])
        caught, false = (wrong_test >= t).sum(), (test["correct"][:, j] >= t).sum()
        f1_test = 2 * caught / (len(wrong_test) + caught + false)
        said.append(f"{flag}: {signal} >= {t:.4f} (F1 dev {f1:.3f}, test {f1_test:.3f})")
        print(f"flag {said[-1]}")
    return said


def by_kind(built, signals) -> dict[str, np.ndarray]:
    x = features(signals)
    return {kind: x[[i for i, (k, _, _) in enumerate(built) if k == kind]] for kind in ("correct", *KINDS)}


def correlation(model, tokenizer, pairs) -> tuple[float, int, float]:
    """Pearson of the sentence score with sentence chrF, on the model's own translations, and
    the time checking them takes over the time translating them took."""
    sources, refs = [s for s, _ in pairs], [t for _, t in pairs]
    start = time.perf_counter()
    hyps = translate(model, tokenizer, sources, DecodeOptions(beam=5)).best
    translated = time.perf_counter() - start
    scores = [s.score for s in check_pairs(model, tokenizer, sources, hyps)]
    checked = time.perf_counter() - start - translated
    chrf = [sacrebleu.sentence_chrf(h, [r]).score for h, r in zip(hyps, refs, strict=True)]
    return float(np.corrcoef(scores, chrf)[0, 1]), len(pairs), checked / translated


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--run", required=True)
    p.add_argument("--data-dir", required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--figure", action="store_true", help="write docs/figures/trust.json")
    args = p.parse_args(argv)
    commit = figures.clean_commit(figures.DEPENDS["trust"]) if args.figure else None
    model, tokenizer = load_run(args.run)
    corpus, src, tgt = stored_languages(args.run)
    dev_pairs = load_pairs(corpus, "val", src, tgt, args.data_dir)
    test_pairs = [p for split in ("test_2016_flickr", "test_2017_flickr")
                  for p in load_pairs(corpus, split, src, tgt, args.data_dir)]  # fmt: skip
    print(f"{args.run}: dev val ({len(dev_pairs)} pairs), test test_2016 + test_2017 ({len(test_pairs)})")
    print(f"{cpu()}")
    start = time.perf_counter()
    split = {}
    for name, pairs in (("dev", dev_pairs), ("test", test_pairs)):
        built = cases(pairs, args.seed)
        split[name] = by_kind(
            built, check_pairs(model, tokenizer, [s for _, s, _ in built], [t for _, _, t in built])
        )
    rows = table(split["dev"], split["test"])
    flags = thresholds(split["dev"], split["test"])
    pearson, cost = [], []
    for name in ("test_2016_flickr", "test_2017_flickr"):
        r, n, share = correlation(model, tokenizer, load_pairs(corpus, name, src, tgt, args.data_dir))
        pearson.append(f"{name} {r:.3f}")
        cost.append(f"{share:.2f}")
        print(f"sentence score vs sentence chrF, beam-5 translations of {name} ({n}): Pearson {r:.3f}")
        print(f"checking them took {share:.2f} of the time translating them took")
    print(f"({time.perf_counter() - start:.0f} s)")
    if args.figure:
        note = (
            f"AUROC on test_2016 + test_2017 (the combination fitted on val), {args.run}; the flags' "
            f"thresholds chosen on val: {'; '.join(flags)}. Sentence score against sentence chrF of "
            f"the model's beam-5 translations, Pearson: {', '.join(pearson)}; checking them took "
            f"{' and '.join(cost)} of the time translating them took (one process, 2 threads)."
        )
        figures.record("trust", COLUMNS, rows, note, commit)


if __name__ == "__main__":
    main()
