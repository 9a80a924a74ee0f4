"""How to decode: `DecodeOptions`, the one declaration of the decoding options (no torch here, so
the command line can build its options from it without loading the model's libraries)."""

import math
from dataclasses import dataclass, fields

from seq2seq.decoding.penalty import MAX_LENGTH_PENALTY, check_length_penalty
from seq2seq.errors import FieldError
from seq2seq.fields import option

MAX_SAMPLES = 64  # samples per line at most: each is a decoded row
# the model computes in float32: a setting finite and above 0 in Python can be 0 or inf there
# (1e-300 is 0, 1e39 is inf), and every piece is then cut; these are float32's limits
FLOAT32_TINY = 1.1754943508222875e-38  # the smallest normal float32
FLOAT32_MAX = 3.4028234663852886e38


def _field(name: str):
    return next(f for f in fields(DecodeOptions) if f.name == name)


@dataclass
class DecodeOptions:
    """How to decode: the one declaration of each option (default, help, range, flag, and whether
    the server's requests take it: `served`), from which the commands that decode (translate,
    evaluate, align) build their options and the server its request fields; the library takes it
    as it is, and it travels whole into `greedy` and `beam_search`. A field with help is an
    option; `check` and `check_for` word every refusal, for the command line and HTTP alike.
    Change one with `dataclasses.replace(options, beam=1)`."""

    beam: int = option(
        5,
        "Beam size (1: greedy search) [default: 5; 1 with --sample, or the server's --beam].",
        1,
        None,
        unset=None,
    )
    nbest: int = option(
        1,
        "The K best hypotheses per line, best first (at most the beam), as `index ||| text ||| score`.",
        1,
        None,
    )
    # scores are divided by ((5 + length) / 6) ** alpha
    length_penalty: float = option(1.0, "GNMT length penalty alpha.", 0.0, MAX_LENGTH_PENALTY)
    min_len: int = option(0, "Output pieces at least.", 0, None)  # before EOS is allowed
    # None: max_len_a x the source's length + max_len_b
    max_len: int | None = option(None, "Output pieces at most [default: 1.5 x source + 10].", 1, None)
    max_len_a: float = 1.5
    max_len_b: int = 10
    use_cache: bool = option(
        True,
        "Keep each step's keys and values, or recompute the prefix.",
        flag="--cache/--no-cache",
        served=False,
    )
    batch_size: int = option(64, "Sentences decoded together.", 1, None, served=False)
    sample: bool = option(
        False,
        "Draw each next piece from the model's distribution instead of searching (greedy rows, no beam).",
        flag="--sample",
    )
    temperature: float = option(1.0, "Sampling: divide the logits by T (> 0; below 1 sharper).", 0.0, None)
    top_k: int | None = option(None, "Sampling: only the K most likely pieces.", 1, None)
    top_p: float = option(1.0, "Sampling: the fewest pieces holding P of the mass (0 < P <= 1).", 0.0, 1.0)
    epsilon: float = option(0.0, "Sampling: leave out pieces below this probability (0 <= E < 1).", 0.0, 1.0)
    num_samples: int = option(
        1, f"Sampling: samples per line (at most {MAX_SAMPLES}), best first as with --nbest.", 1, MAX_SAMPLES
    )
    seed: int | None = option(
        None, "Sampling: the seed; the same seed gives the same samples, batched or alone.", 0, None
    )
    # CTranslate2's no_repeat_ngram_size: every search, all rows; a prefix is forced as it is
    no_repeat_ngram: int = option(
        0, "No hypothesis repeats an n-gram of N pieces (0: any may; at most the longest output).", 0, None
    )
    # the rule training uses
    bf16: bool = option(
        False,
        "bf16 autocast where it runs faster than fp32 (CUDA; a CPU is measured).",
        flag="--bf16",
        served=False,
    )

    @property
    def rows(self) -> int:
        """The decoder rows a line takes: its beams, or its samples."""
        return self.num_samples if self.sample else self.beam

    def check(self) -> None:
        """Reject impossible settings with a message a user can act on, naming the fields at fault
        (each edge spells them its own way: `--top-p` on the command line, `top_p` over HTTP)."""
        if self.beam < 1:
            raise FieldError("beam", f"must be at least 1, got {self.beam}")
        if not 1 <= self.nbest <= self.beam:
            raise FieldError(
                ("nbest", "beam"), f"must be between 1 and the beam size {self.beam}, got {self.nbest}"
            )
        if self.min_len < 0:
            raise FieldError("min_len", f"must be at least 0, got {self.min_len}")
        if self.max_len is not None and self.max_len < 1:
            raise FieldError("max_len", f"must be at least 1, got {self.max_len}")
        if self.max_len is not None and self.min_len > self.max_len:
            raise FieldError(
                ("min_len", "max_len"), f"{self.min_len} pieces at least is above {self.max_len} at most"
            )
        if self.batch_size < 1:
            raise FieldError("batch_size", f"must be at least 1, got {self.batch_size}")
        if self.no_repeat_ngram < 0:
            raise FieldError("no_repeat_ngram", f"must be at least 0, got {self.no_repeat_ngram}")
        check_length_penalty(self.length_penalty)
        self.check_sampling()

    def check_sampling(self) -> None:
        if not FLOAT32_TINY <= self.temperature <= FLOAT32_MAX:  # NaN fails both
            raise FieldError(
                "temperature",
                f"must be between {FLOAT32_TINY:.4g} and {FLOAT32_MAX:.4g} "
                f"(float32's range, where the model computes), got {self.temperature}",
            )
        if not FLOAT32_TINY <= self.top_p <= 1:
            raise FieldError(
                "top_p", f"must be between {FLOAT32_TINY:.4g} (float32's smallest) and 1, got {self.top_p}"
            )
        if not (math.isfinite(self.epsilon) and 0 <= self.epsilon < 1):
            raise FieldError("epsilon", f"must be at least 0 and below 1, got {self.epsilon}")
        if self.top_k is not None and self.top_k < 1:
            raise FieldError("top_k", f"must be at least 1, got {self.top_k}")
        if not 1 <= self.num_samples <= MAX_SAMPLES:
            raise FieldError("num_samples", f"must be between 1 and {MAX_SAMPLES}, got {self.num_samples}")
        if self.seed is not None and not 0 <= self.seed < 2**63:
            raise FieldError("seed", f"must be between 0 and 2**63 - 1, got {self.seed}")
        if not self.sample:
            return
        if self.beam > 1:
            raise FieldError(
                ("sample", "beam"), f"sampling draws one piece at a time; it takes no beam (got {self.beam})"
            )
        if self.nbest > 1:
            raise FieldError(("sample", "nbest"), "sampling gives num-samples hypotheses a line, not nbest")

    def check_for(self, vocab_size: int, longest: int) -> None:
        """`check`, and what only the model can say: a beam within its vocabulary of `vocab_size`
        pieces, an n-gram within its `longest` output."""
        self.check()
        if self.beam > vocab_size:  # more beams than pieces to extend them with
            raise FieldError("beam", f"{self.beam} is above the vocabulary's {vocab_size} pieces")
        if self.no_repeat_ngram > longest:
            raise FieldError(
                "no_repeat_ngram",
                f"must be at most the model's longest output ({longest} pieces), got {self.no_repeat_ngram}",
            )

    def check_terms(self) -> None:
        """Constraints make room in the beam: refuse them a search without one."""
        if self.sample or self.beam < 2:
            raise FieldError(
                ("beam", "sample"),
                "terms need beam search (a beam of 2 or more): greedy search and sampling have no "
                "beam to make room for them",
            )


GREEDY = DecodeOptions(beam=1)
GREEDY_HELP = "Greedy search (same as --beam 1)."
OPTIONS = tuple(f.name for f in fields(DecodeOptions) if "help" in f.metadata)  # every decoding option
ONE_BEST = tuple(n for n in OPTIONS if n not in ("nbest", "num_samples"))  # a line, one output
SERVED = tuple(name for name in OPTIONS if _field(name).metadata.get("served", True))


def chosen(values: dict, greedy: bool = False, default_beam: int = 5) -> DecodeOptions:
    """The options asked for, checked: `values` of fields (a beam of None: not given), with the one
    beam rule every caller shares: greedy is beam 1; otherwise the beam given, else one row when
    sampling (it draws one piece at a time), else `default_beam` (the server's --beam)."""
    beam = values.get("beam")
    if greedy:
        beam = 1
    elif beam is None:
        beam = 1 if values.get("sample") else default_beam
    options = DecodeOptions(**(values | {"beam": beam}))
    options.check()
    return options
