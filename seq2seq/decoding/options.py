"""How to decode: `DecodeOptions`, the one declaration of the decoding options (no torch here, so
the command line can build its options from it without loading the model's libraries)."""

from dataclasses import dataclass

from seq2seq.decoding.penalty import MAX_LENGTH_PENALTY, check_length_penalty
from seq2seq.errors import Seq2SeqError
from seq2seq.fields import option


@dataclass
class DecodeOptions:
    """How to decode: the one declaration of each option's default and help, which `translate`,
    `evaluate`, the server's requests and the library share, and which travels whole into
    `greedy` and `beam_search`. Change one with `dataclasses.replace(options, beam=1)`."""

    beam: int = option(5, "Beam size (1: greedy search).", 1, None)
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
        True, "Keep each step's keys and values, or recompute the prefix.", flag="--cache/--no-cache"
    )
    batch_size: int = option(64, "Sentences decoded together.", 1, None)
    # the rule training uses
    bf16: bool = option(
        False, "bf16 autocast where it runs faster than fp32 (CUDA; a CPU is measured).", flag="--bf16"
    )

    def check(self) -> None:
        """Reject impossible settings with a message a user can act on."""
        if self.beam < 1:
            raise Seq2SeqError(f"beam size must be at least 1, got {self.beam}")
        if not 1 <= self.nbest <= self.beam:
            raise Seq2SeqError(f"nbest must be between 1 and the beam size {self.beam}, got {self.nbest}")
        if self.min_len < 0 or (self.max_len is not None and self.max_len < 1):
            raise Seq2SeqError("lengths must be positive (min-len >= 0, max-len >= 1)")
        if self.max_len is not None and self.min_len > self.max_len:
            raise Seq2SeqError(f"min-len {self.min_len} is above max-len {self.max_len}")
        if self.batch_size < 1:
            raise Seq2SeqError(f"batch size must be at least 1, got {self.batch_size}")
        check_length_penalty(self.length_penalty)


GREEDY = DecodeOptions(beam=1)
