"""Which pairs an epoch trains on: the stored set, or this epoch's subword draw (data/sampling.py),
in the first `bidirectional` epochs with every pair reversed too (data/reversing.py), and with a
share of them joined two by two (data/joining.py). Each is a function of (seed, epoch), so a
resumed run and every data-parallel process cut the same batches."""

from pathlib import Path

from seq2seq.data.joining import JoinedPairs
from seq2seq.data.reversing import BothWays
from seq2seq.data.sampling import SampledPairs
from seq2seq.data.tokenized import TokenizedPairs
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.training.config import TrainConfig


def epoch_pairs(
    train_set: TokenizedPairs,
    tokenizer: Tokenizer | None,
    cfg: TrainConfig,
    epoch: int,
    max_len: int,
    kept: Path | None = None,
    workers: int = 1,
):
    """What the epoch's batches are cut by (`lengths`, `side_lengths()`), and how to read a batch's
    rows (None: by the step, as runs from before `sample_by_epoch`: Loop._step_rows). `kept`: where
    the draw is kept (rank 0's run directory); `workers`: processes that draw it; `tokenizer`: only
    what samples (None without subword sampling)."""
    # a sampled target or a joined side fits max_len - 1 pieces, as collate cuts them: the rest of
    # the positions hold BOS or EOS
    limit = max_len - 1
    source, rows = _drawn(train_set, tokenizer, cfg, epoch, limit, kept, workers)
    # (TrainConfig refuses bidirectional and concat with the per-step draw, whose rows are None,
    # and together: a join of a pair and a reversed one would mix the directions)
    if epoch < cfg.bidirectional:
        source = BothWays(source, rows, train_set)
        rows = source.rows
    if cfg.concat <= 0:
        return source, rows
    joined = JoinedPairs(source, rows, cfg.concat, cfg.seed, epoch, limit)
    return joined, joined.rows


def _drawn(train_set, tokenizer, cfg: TrainConfig, epoch: int, limit: int, kept, workers: int):
    if cfg.subword_alpha <= 0 and cfg.target_subword_alpha <= 0:
        return train_set, train_set.rows
    if not cfg.sample_by_epoch:
        return train_set, None
    sides = dict(target_alpha=cfg.target_subword_alpha, target_limit=limit)
    sampled = SampledPairs(train_set, tokenizer, cfg.subword_alpha, cfg.seed, epoch, kept, workers, **sides)
    return sampled, sampled.rows
