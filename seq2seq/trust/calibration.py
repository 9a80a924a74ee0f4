"""When a flag is raised: detectors fitted to a run on its development split, kept in the run.

Each family of errors has a detector, a logistic regression over a pair's signals (FEATURES,
standardised) that gives the probability the pair is wrong that way; it is fitted on the cases
cases.py makes of the development split (that family's errors against the correct pairs), and its
flag is raised at the probability with the best F1 there. A word is marked "check this word" below
a log-probability chosen on the model's own beam-5 translations of the split: the one that finds
the most of the words their references lack (cases.word_labels) while at least WORD_PRECISION of
the words it marks are such words (a mark should be worth a look; the best F1 would mark a
quarter of all words, half of them wrongly). `seq2seq check --calibrate`
fits them to a run and writes RUN/trust.json; a run without one is read with the package's
calibration.json, fitted the same way to the en->fr run docs/scoring.md measures (another model's
log-probabilities differ: calibrate it)."""

import json
import math
from dataclasses import asdict, dataclass, fields
from importlib.resources import files
from pathlib import Path

import torch

from seq2seq.atomic import write_atomic
from seq2seq.decoding.search import DecodeOptions, output_limit, translate
from seq2seq.errors import Seq2SeqError
from seq2seq.fields import check
from seq2seq.runs.identity import stale
from seq2seq.trust.cases import cases, word_labels
from seq2seq.trust.signals import Signals, check_pairs

RUN_FILE = "trust.json"  # a run's own calibration, beside its weights
FEATURES = {  # each oriented so that higher is likelier wrong
    "-score": lambda s: -s.score,
    "coverage lack": lambda s: s.coverage_lack,
    "repetition": lambda s: s.repetition,
    "-least word": lambda s: -min(s.word_logprobs, default=0.0),
    "length skew": lambda s: abs(math.log(max(s.length_ratio, 1e-3))),
}
FAMILIES = {
    "omission": ("omission, clause", "omission, words"),
    "hallucination": ("hallucination, other", "hallucination, loop"),
}
WORD_PRECISION = 0.75  # of the words marked "check this word" on the development split, lacking
REPEATED = 0.7  # a share of repeated word trigrams at or above: a loop (three words said four times)
UNCOVERED = 0.5  # a source word attended less than half an output piece's worth is listed (a rule)


def features(s: Signals) -> list[float]:
    return [f(s) for f in FEATURES.values()]


@dataclass
class Detector:
    """A logistic regression over FEATURES: the probability a pair is wrong in one family's way,
    and the probability at or above which its flag is raised."""

    mean: list[float]
    scale: list[float]
    weights: list[float]  # one a feature, then the bias
    threshold: float

    def probability(self, s: Signals) -> float:
        x = features(s)
        z = self.weights[-1] + sum(
            w * (v - m) / d for w, v, m, d in zip(self.weights[:-1], x, self.mean, self.scale, strict=True)
        )
        return 1.0 / (1.0 + math.exp(-max(min(z, 60.0), -60.0)))


@dataclass
class Calibration:
    omission: Detector
    hallucination: Detector
    unsure_word: float  # a word's log-probability below this: "check this word"
    fitted_on: str  # what it was fitted to: the run and the split
    weights: str | None = None  # the digest of the run's weights it was fitted to (runs/identity.py)

    @classmethod
    def read(cls, path: Path | None = None) -> "Calibration":
        """The calibration at `path` (a run's trust.json), or where there is none the package's."""
        if path is None or not Path(path).is_file():
            return cls.from_json(files("seq2seq.trust").joinpath("calibration.json").read_text("utf-8"))
        try:
            return cls.from_json(Path(path).read_text(encoding="utf-8"))
        except (ValueError, KeyError, TypeError, RecursionError) as e:
            raise Seq2SeqError(
                f"{path} is no calibration ({e}); write it again with check --calibrate"
            ) from None

    @classmethod
    def of_run(cls, run: Path) -> "Calibration":
        """A run's own calibration (RUN_FILE, written by `check --calibrate`), else the package's
        (also where the run's was fitted to other weights: a notice says so)."""
        own = cls.read(Path(run) / RUN_FILE)
        if stale(run, own.weights, Path(run) / RUN_FILE, f"seq2seq check --calibrate --run {run}"):
            return cls.read()
        return own

    @classmethod
    def from_json(cls, text: str) -> "Calibration":
        """A calibration from its JSON, every field checked (a ValueError naming it otherwise)."""
        data = json.loads(text)
        if not isinstance(data, dict) or not {"omission", "hallucination", "unsure_word", "fitted_on"} <= set(
            data
        ):
            raise ValueError("give omission, hallucination, unsure_word and fitted_on")
        unknown = set(data) - {f.name for f in fields(cls)}
        if unknown:
            raise ValueError(f"unknown field {sorted(unknown)[0]!r}")
        check("unsure_word", data["unsure_word"], float, "calibration")
        check("fitted_on", data["fitted_on"], str, "calibration")
        check("weights", data.get("weights"), str | None, "calibration")
        detectors = [detector(data[name], name) for name in ("omission", "hallucination")]
        return cls(*detectors, float(data["unsure_word"]), data["fitted_on"], data.get("weights"))

    def write(self, path: Path) -> None:
        write_atomic(Path(path), (json.dumps(asdict(self), indent=1) + "\n").encode("utf-8"))


def detector(data: object, name: str) -> Detector:
    """A Detector from JSON: one mean and scale a feature, a weight a feature and the bias, all
    finite (a scale above 0), a threshold that is a number of at least 0 (inf: never raised)."""
    n = len(FEATURES)
    if not isinstance(data, dict) or set(data) != {"mean", "scale", "weights", "threshold"}:
        raise ValueError(f"{name} must hold mean, scale, weights and threshold")
    for key, size in (("mean", n), ("scale", n), ("weights", n + 1)):
        values = data[key]
        if not isinstance(values, list) or len(values) != size:
            raise ValueError(f"{name}.{key} must be a list of {size} numbers ({n} features)")
        for i, value in enumerate(values):
            check(
                f"{name}.{key}[{i}]", value, float, "calibration", (1e-12, None) if key == "scale" else None
            )
    threshold = data["threshold"]
    if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not threshold >= 0:
        raise ValueError(f"{name}.threshold must be a number of at least 0, not {threshold!r:.40}")
    return Detector([float(v) for v in data["mean"]], [float(v) for v in data["scale"]],
                    [float(v) for v in data["weights"]], float(threshold))  # fmt: skip


def fit(wrong: torch.Tensor, right: torch.Tensor, steps: int = 2000) -> Detector:
    """A detector of `wrong` (N, F) features among `right` (M, F): gradient descent on the
    standardised features, then the threshold with the best F1."""
    x = torch.cat([wrong, right]).double()
    y = torch.cat([torch.ones(len(wrong)), torch.zeros(len(right))]).double()
    mean, scale = x.mean(0), x.std(0, correction=0) + 1e-9
    z = torch.cat([(x - mean) / scale, torch.ones(len(x), 1, dtype=torch.float64)], 1)
    w = torch.zeros(z.size(1), dtype=torch.float64)
    for _ in range(steps):
        w -= 0.5 * z.T @ (torch.sigmoid(z @ w) - y) / len(y)
    p = torch.sigmoid(z @ w)
    threshold, _ = best_threshold(p[: len(wrong)], p[len(wrong) :])
    return Detector(mean.tolist(), scale.tolist(), w.tolist(), threshold)


def best_threshold(wrong: torch.Tensor, right: torch.Tensor) -> tuple[float, float]:
    """The value at or above which to flag (`wrong` and `right`: a signal's values, higher is
    likelier wrong) with the best F1 of finding the wrong among both, and that F1."""
    best = (float("inf"), 0.0)
    for t in torch.cat([wrong, right]).unique().tolist():
        caught, false = int((wrong >= t).sum()), int((right >= t).sum())
        best = max(best, (t, 2 * caught / (len(wrong) + caught + false)), key=lambda b: b[1])
    return best


def calibrated(signals: dict[str, list[Signals]], words: tuple, fitted_on: str) -> Calibration:
    """The detectors fitted to the signals of each kind of case (cases.py's kinds, and "correct"),
    and the word threshold to `words` (`own_words`: the log-probabilities of wrong and right words)."""
    x = {
        kind: torch.tensor([features(s) for s in found], dtype=torch.float64)
        for kind, found in signals.items()
    }
    wrong = {family: [x[k] for k in kinds if k in x] for family, kinds in FAMILIES.items()}
    if not all(wrong.values()) or "correct" not in x or not all(words):
        lacking = [f for f, found in wrong.items() if not found] + ["words"] * (not all(words))
        raise Seq2SeqError(f"{fitted_on}: too few pairs to fit the flags (no {', '.join(lacking)} cases)")
    detectors = {family: fit(torch.cat(found), x["correct"]) for family, found in wrong.items()}
    wrong, right = (torch.tensor(lps, dtype=torch.float64) for lps in words)
    return Calibration(detectors["omission"], detectors["hallucination"], precise(wrong, right), fitted_on)


def precise(wrong: torch.Tensor, right: torch.Tensor, precision: float = WORD_PRECISION) -> float:
    """The highest log-probability at or below which marking words keeps at least `precision` of
    the marks on `wrong` words (the lowest of all where none does)."""
    best = float(torch.cat([wrong, right]).min())
    for t in torch.cat([wrong, right]).unique().tolist():  # ascending: the last that holds is kept
        caught, false = int((wrong <= t).sum()), int((right <= t).sum())
        if caught / (caught + false) >= precision:
            best = t
    return best


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


def calibrate(model, tokenizer, pairs: list[tuple[str, str]], fitted_on: str, seed: int = 0) -> Calibration:
    """A run's calibration, fitted on `pairs` (its development split) made into cases.py's cases."""
    built = cases(pairs, seed)
    lengths = map(len, tokenizer.encode([t for _, _, t in built], "target"))
    built = [case for case, n in zip(built, lengths, strict=True) if n <= output_limit(model)]  # loops grow
    found = check_pairs(model, tokenizer, [s for _, s, _ in built], [t for _, _, t in built])
    by_kind: dict[str, list[Signals]] = {}
    for (kind, _, _), signals in zip(built, found, strict=True):
        by_kind.setdefault(kind, []).append(signals)
    return calibrated(by_kind, own_words(model, tokenizer, pairs), fitted_on)
