"""How the trust flags do where users meet them: on natural errors (data/trust/, translations by
weaker systems this product makes, marked by annotators) and on correct lines at the prevalence a
user sees (people's translations, the model's own beam-5 output):

    python -m scripts.bench_trust_natural --run runs/multi30k-en-fr-1207a \
        --data-dir ../shared/corpora/multi30k [--calibration FILE] [--plot FILE] [--figure]

- Natural set, test part (250 translations of test_2016 lines 1-250): each detector's AUROC for
  its own kind of error as marked (omission: any omitted span; hallucination: any added span; any
  flag, read as the flags' count then their probabilities: any span), over all five systems and
  over the default run's lines alone, and precision and recall of the flag at its threshold at the
  set's own prevalence; the words marked "check this word" against the words in an added or
  mistranslated span, the same way.
- Correct lines: the share of test_2016's references (all 1,000, people's translations) and of
  the model's own beam-5 translations of them that carry any flag, and the share of the beam
  translations' words marked "check this word".
- --plot: the reliability diagram of the omission and hallucination probabilities on the test
  part (the share marked, in bins of the probability said).
The calibration read is the run's own (`check --calibrate`), else the package's, as `check` reads
it; --calibration names another file.
"""

import argparse
import json
from pathlib import Path

import numpy as np

from scripts import figures
from scripts.bench_trust import auroc
from scripts.common import REPO, cpu
from seq2seq.data.corpus import load_pairs
from seq2seq.runs.load import load_run
from seq2seq.trust.calibration import Calibration, own_signals
from seq2seq.trust.flags import flags
from seq2seq.trust.signals import check_pairs

SET = REPO / "data" / "trust"
KINDS = {"omission": "omitted", "hallucination": "added"}
DEFAULT = ("default-beam5", "default-sample-t1.0", "default-sample-t1.2")  # the 50-minute run's lines
COLUMNS = ["flag", "its errors", "AUROC", "AUROC, the default run's", "precision", "recall"]


def natural(part: str) -> list[dict]:
    """The part's items, each with its first annotator's marks."""
    items = [json.loads(line) for line in (SET / f"{part}.jsonl").read_text(encoding="utf-8").splitlines()]
    marks = [
        json.loads(line) for line in (SET / f"{part}.labels.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    return [item | mark for item, mark in zip(items, marks, strict=True)]


def values(signals, calibration: Calibration) -> dict[str, np.ndarray]:
    """Each detector's probability over the pairs."""
    return {name: np.array([getattr(calibration, name).probability(s) for s in signals]) for name in KINDS}


def row(name: str, truth: np.ndarray, score: np.ndarray, up: np.ndarray, default: np.ndarray) -> list[str]:
    """A flag's row: its errors, AUROC (all, and the default run's lines alone), precision and
    recall at its threshold."""
    caught, errors = int((up & truth).sum()), int(truth.sum())
    sub = default & truth, default & ~truth
    return [name, f"{errors} of {len(truth)}", f"{auroc(score[truth], score[~truth]):.3f}",
            f"{auroc(score[sub[0]], score[sub[1]]):.3f}", f"{caught / max(int(up.sum()), 1):.2f}",
            f"{caught / max(errors, 1):.2f}"]  # fmt: skip


def rows_of(items: list[dict], signals, calibration: Calibration) -> list[list[str]]:
    said, shown = [flags(s, calibration) for s in signals], values(signals, calibration)
    default = np.array([i["system"] in DEFAULT for i in items])
    rows = []
    for flag, kind in KINDS.items():
        truth = np.array([bool(i[kind]) for i in items])
        rows.append(row(flag, truth, shown[flag], np.array([flag in f for f in said]), default))
    truth = np.array([any(i[k] for k in ("omitted", "added", "mistranslated")) for i in items])
    count = np.array([len(f) for f in said], dtype=float)
    rows.append(row("any flag", truth, count + sum(shown.values()), count > 0, default))
    wrong, lps, where = [], [], []  # words: in an added or mistranslated span, or not
    for item, s in zip(items, signals, strict=True):
        spans = [range(a, b + 1) for k in ("added", "mistranslated") for a, b in item[k]]
        if len(s.word_logprobs) == len(item["translation"].split()):
            wrong += [any(w in r for r in spans) for w in range(len(s.word_logprobs))]
            lps += s.word_logprobs
            where += [item["system"] in DEFAULT] * len(s.word_logprobs)
    wrong, lps = np.array(wrong), np.array(lps)
    rows.append(row("words to check", wrong, -lps, lps <= calibration.unsure_word, np.array(where)))
    return rows


def correct_rates(model, tokenizer, pairs, calibration: Calibration) -> tuple[float, float, float]:
    """The shares of people's translations and of the model's own beam-5 lines with any flag, and
    the share of the beam lines' words marked."""
    sources, references = [s for s, _ in pairs], [t for _, t in pairs]
    people, mine = check_pairs(model, tokenizer, sources, references), own_signals(model, tokenizer, sources)
    words = [lp <= calibration.unsure_word for s in mine for lp in s.word_logprobs]
    return (
        float(np.mean([bool(flags(s, calibration)) for s in people])),
        float(np.mean([bool(flags(s, calibration)) for s in mine])),
        float(np.mean(words)),
    )


def reliability(items: list[dict], signals, calibration: Calibration, path: Path) -> None:
    """The share marked against the probability said, in five bins, for both detectors."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = values(signals, calibration)
    fig, ax = plt.subplots(figsize=(4.5, 4.5))
    ax.plot([0, 1], [0, 1], color="grey", lw=0.8, ls="--", label="calibrated")
    for flag, kind in KINDS.items():
        truth = np.array([bool(i[kind]) for i in items])
        bins = np.minimum((shown[flag] * 5).astype(int), 4)
        xs = [shown[flag][bins == b].mean() for b in range(5) if (bins == b).any()]
        ys = [truth[bins == b].mean() for b in range(5) if (bins == b).any()]
        ns = [int((bins == b).sum()) for b in range(5) if (bins == b).any()]
        ax.plot(xs, ys, marker="o", label=flag)
        for x, y, n in zip(xs, ys, ns, strict=True):
            ax.annotate(str(n), (x, y), textcoords="offset points", xytext=(4, -10), fontsize=7)
    ax.set(xlabel="probability said", ylabel="share marked by the annotators", xlim=(0, 1), ylim=(0, 1))
    ax.set_title("natural set, test part (pairs per bin)", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--run", required=True)
    p.add_argument("--data-dir", required=True)
    p.add_argument(
        "--calibration", type=Path, help="a calibration file (default: the run's, as check reads it)"
    )
    p.add_argument("--plot", type=Path, help="write the reliability diagram here")
    p.add_argument("--figure", action="store_true", help="write docs/figures/trust-natural.json")
    args = p.parse_args(argv)
    commit = figures.clean_commit(figures.DEPENDS["trust-natural"]) if args.figure else None
    model, tokenizer = load_run(args.run)
    calibration = (
        Calibration.read(args.calibration) if args.calibration else Calibration.of_run(Path(args.run))
    )
    items = natural("test")
    signals = check_pairs(model, tokenizer, [i["source"] for i in items], [i["translation"] for i in items])
    rows = rows_of(items, signals, calibration)
    print(f"{args.run}, calibration fitted on {calibration.fitted_on}\n{cpu()}")
    for row in [COLUMNS, *rows]:
        print("  ".join(f"{c:>20s}" for c in row))
    pairs = load_pairs("multi30k", "test_2016_flickr", "en", "fr", args.data_dir)
    people, own, words = correct_rates(model, tokenizer, pairs, calibration)
    said = (
        f"Correct lines of test_2016 ({len(pairs)}) with any flag: people's translations {people:.1%}, "
        f"the model's own beam-5 translations {own:.1%}; words of those marked: {words:.1%}."
    )
    print(said)
    if args.plot:
        reliability(items, signals, calibration, args.plot)
    if args.figure:
        note = (
            f"The natural set's test part (data/trust/): 250 translations of test_2016 lines 1-250 by five "
            f"systems, marked by annotators; a flag's AUROC for its own kind of error as marked, and its "
            f"precision and recall at its threshold at the set's prevalence. Signals of {args.run}; "
            f"calibration fitted on {calibration.fitted_on}. {said}"
        )
        figures.record("trust-natural", COLUMNS, rows, note, commit)


if __name__ == "__main__":
    main()
