"""How a finished hypothesis' length weighs in its score: the GNMT length penalty, shared by search
(which ranks with it) and forced decoding (which scores given outputs the way search would)."""

from seq2seq.errors import FieldError


def check_length_penalty(alpha: float) -> None:
    """GNMT's alpha is used between 0 and about 2; far above, ((5 + length) / 6) ** alpha overflows."""
    if not 0.0 <= alpha <= MAX_LENGTH_PENALTY:
        raise FieldError("length_penalty", f"must be between 0 and {MAX_LENGTH_PENALTY:g}, got {alpha:g}")


MAX_LENGTH_PENALTY = 10.0


def penalty(length: int, alpha: float) -> float:
    """GNMT length penalty (Wu et al. 2016); alpha 0 ranks by raw log-probability."""
    return ((5 + length) / 6) ** alpha
