"""Which pairs an epoch trains on: the stored set, or this epoch's subword draw (data/sampling.py).
The draw is a function of (seed, epoch), so a resumed run and every data-parallel process cut the
same batches."""

from pathlib import Path

from seq2seq.data.sampling import SampledPairs
from seq2seq.data.tokenized import TokenizedPairs
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.training.config import TrainConfig


def epoch_pairs(
    train_set: TokenizedPairs,
    tokenizer: Tokenizer | None,
    cfg: TrainConfig,
    epoch: int,
    kept: Path | None = None,
    workers: int = 1,
):
    """What the epoch's batches are cut by (`lengths`, `side_lengths()`) and read from (`rows`).
    `kept`: where the draw is kept (rank 0's run directory); `workers`: processes that draw it;
    `tokenizer`: only what samples (None without subword sampling)."""
    if cfg.subword_alpha <= 0:
        return train_set
    return SampledPairs(train_set, tokenizer, cfg.subword_alpha, cfg.seed, epoch, kept, workers)
