"""When a flag is raised: detectors fitted to a run on its development split, kept in the run.

Each family of errors has a detector, a logistic regression over a pair's signals (FEATURES,
standardised) fitted on the cases cases.py makes of the development split (that family's errors
against the correct pairs), with the two classes weighted so that errors make up PRIOR of the
pairs: its output is the probability that a translation with these signals has such an error
where that share of translations has one (PRIOR: the share the annotators of data/trust found in
the default run's beam-5 output). Made errors are many and blatant; the flags are raised for the
lines users meet, so each flag's threshold is set by FLAGGED: the lowest at which the flag is
raised on at most that share of the split's references (people's translations) and of the
model's own beam-5 translations of the split. A word is marked "check this word" below the
log-probability at which at most MARKED of the words of those beam-5 translations are.
`seq2seq check --calibrate` fits them to a run and writes RUN/trust.json; a run without one is
read with the package's calibration.json, fitted the same way to the en->fr run docs/scoring.md
measures (another model's log-probabilities differ: calibrate it)."""

import json
import math
from dataclasses import asdict, dataclass, fields, replace
from importlib.resources import files
from pathlib import Path

import torch

from seq2seq.atomic import write_atomic
from seq2seq.data.tokenizer import is_blank
from seq2seq.decoding.search import DecodeOptions, output_limit, translate
from seq2seq.errors import Seq2SeqError
from seq2seq.fields import check
from seq2seq.runs.identity import stale
from seq2seq.trust.cases import cases
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
# The share of translations with such an error that a probability assumes: data/trust's marks of
# the default run's 50 beam-5 translations of its development part (8 omit; none adds, so one in 50).
PRIOR = {"omission": 0.16, "hallucination": 0.02}
# The most a flag may be raised on the development split: (people's translations, the model's own
# beam-5 lines), so that all flags together stay under 5% and 10% of them on held-back lines.
FLAGGED = {"omission": (0.03, 0.06), "hallucination": (0.015, 0.03)}
MARKED = 0.02  # the most words of the model's own beam-5 translations marked "check this word"
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


def fit(wrong: torch.Tensor, right: torch.Tensor, prior: float, steps: int = 2000) -> Detector:
    """A detector of `wrong` (N, F) features among `right` (M, F): gradient descent on the
    standardised features, the classes weighted to `prior` (the share of wrong pairs its
    probability assumes); its threshold is set later (`threshold_within`)."""
    x = torch.cat([wrong, right]).double()
    y = torch.cat([torch.ones(len(wrong)), torch.zeros(len(right))]).double()
    weight = torch.where(y > 0, prior / len(wrong), (1 - prior) / len(right))  # sums to 1
    mean, scale = x.mean(0), x.std(0, correction=0) + 1e-9
    z = torch.cat([(x - mean) / scale, torch.ones(len(x), 1, dtype=torch.float64)], 1)
    w = torch.zeros(z.size(1), dtype=torch.float64)
    for _ in range(steps):
        w -= 2.0 * z.T @ (weight * (torch.sigmoid(z @ w) - y))
    return Detector(mean.tolist(), scale.tolist(), w.tolist(), float("inf"))


def threshold_within(values: list[torch.Tensor], shares: tuple[float, ...]) -> float:
    """The lowest threshold at or above which at most `shares[i]` of `values[i]` lie, for each i
    (values: higher is likelier flagged)."""
    lowest = -float("inf")
    for v, share in zip(values, shares, strict=True):
        allowed = int(share * len(v))  # values that may reach the threshold
        if allowed < len(v):
            kept = v.sort(descending=True).values[allowed]  # the first value that must stay below
            lowest = max(lowest, torch.nextafter(kept, torch.tensor(float("inf"), dtype=kept.dtype)).item())
    return lowest


def calibrated(signals: dict[str, list[Signals]], own: list[Signals], fitted_on: str) -> Calibration:
    """The detectors fitted to the signals of each kind of case (cases.py's kinds, and "correct":
    the references), their thresholds and the word threshold set by FLAGGED on the references and
    `own` (the signals of the model's own beam-5 translations of the same sources)."""
    x = {
        kind: torch.tensor([features(s) for s in found], dtype=torch.float64)
        for kind, found in signals.items()
    }
    wrong = {family: [x[k] for k in kinds if k in x] for family, kinds in FAMILIES.items()}
    has_words = any(s.word_logprobs for s in own)
    if not all(wrong.values()) or "correct" not in x or not has_words:
        lacking = [f for f, found in wrong.items() if not found] + ["translations"] * (not has_words)
        raise Seq2SeqError(f"{fitted_on}: too few pairs to fit the flags (no {', '.join(lacking)} cases)")
    detectors = {}
    for family, found in wrong.items():
        d = fit(torch.cat(found), x["correct"], PRIOR[family])
        said = [torch.tensor([d.probability(s) for s in group]) for group in (signals["correct"], own)]
        detectors[family] = replace(d, threshold=max(threshold_within(said, FLAGGED[family]), 0.0))
    words = torch.tensor([-lp for s in own for lp in s.word_logprobs], dtype=torch.float64)
    unsure = -threshold_within([words], (MARKED,))
    return Calibration(detectors["omission"], detectors["hallucination"], unsure, fitted_on)


def calibrate(model, tokenizer, pairs: list[tuple[str, str]], fitted_on: str, seed: int = 0) -> Calibration:
    """A run's calibration, fitted on `pairs` (its development split) made into cases.py's cases,
    its thresholds set on the references and the model's own beam-5 translations of them."""
    built = cases(pairs, seed)
    lengths = map(len, tokenizer.encode([t for _, _, t in built], "target"))
    built = [case for case, n in zip(built, lengths, strict=True) if n <= output_limit(model)]  # loops grow
    found = check_pairs(model, tokenizer, [s for _, s, _ in built], [t for _, _, t in built])
    by_kind: dict[str, list[Signals]] = {}
    for (kind, _, _), signals in zip(built, found, strict=True):
        by_kind.setdefault(kind, []).append(signals)
    return calibrated(by_kind, own_signals(model, tokenizer, [s for s, _ in pairs]), fitted_on)


def own_signals(model, tokenizer, sources: list[str]) -> list[Signals]:
    """The signals of the model's own beam-5 translations of `sources` (a blank one left out: it
    is flagged "empty", not checked)."""
    own = translate(model, tokenizer, sources, DecodeOptions(beam=5)).best
    kept = [i for i, t in enumerate(own) if not is_blank(t)]
    return check_pairs(model, tokenizer, [sources[i] for i in kept], [own[i] for i in kept])
