"""Which pairs an epoch trains on, a part at a time, and the batches cut from each: a stored set is
one part (its pairs, or this epoch's subword draw: data/sampling.py), a streamed corpus many
(training/streaming.py). The batches are a function of (seed, epoch, part), so a resumed run and
every data-parallel process cut the same ones."""

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from seq2seq.data.batch import token_batches
from seq2seq.data.corpus import FilterReport
from seq2seq.data.sampling import SampledPairs
from seq2seq.data.tokenized import TokenizedPairs
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.training.config import TrainConfig
from seq2seq.training.resume import TrainingState


@dataclass
class EpochPart:
    """Batches of one part of an epoch, where their rows are read, and the part's place in it."""

    batches: list[np.ndarray]  # each (B,) indices into the part's pairs
    rows: Callable[[np.ndarray], tuple[list[list[int]], list[list[int]]]]  # source and target ids
    before: float = 0.0  # the share of the epoch before the part (0 where the epoch's size is unknown)
    share: float = 1.0  # the part's own share of it
    lines: Callable[[np.ndarray], list[int]] | None = None  # each pair's line in the corpus (stored)
    paced: bool = True  # whether the shares are known (a stream's length may not be)
    last: bool = True  # the epoch ends with it

    def done(self, batch: int) -> float:
        """The share of the epoch trained once `batch` of the part's batches are."""
        return self.before + self.share * batch / max(len(self.batches), 1)


class Epochs(Protocol):
    """What the loop walks: an epoch's parts from where the state stands."""

    report: FilterReport

    def parts(self, state: TrainingState) -> Iterator[EpochPart]: ...
    def batches_known(self, part: EpochPart) -> int | None: ...
    def ended(self, state: TrainingState) -> None: ...


class StoredEpochs:
    """The epochs of a stored set: each one part, every pair once."""

    def __init__(
        self,
        train_set: TokenizedPairs,
        tokenizer: Tokenizer,
        cfg: TrainConfig,
        kept: Path | None,
        workers: int,
    ):
        """`kept`: where an epoch's subword draw is kept (rank 0's run directory); `workers`:
        processes that draw it."""
        self.train_set, self.tokenizer, self.cfg, self.kept, self.workers = (
            train_set,
            tokenizer,
            cfg,
            kept,
            workers,
        )
        self.report = train_set.report

    def parts(self, state: TrainingState) -> Iterator[EpochPart]:
        source = epoch_pairs(self.train_set, self.tokenizer, self.cfg, state.epoch, self.kept, self.workers)
        sides = source.side_lengths()  # ties in length broken by the source's, then the target's
        batches = token_batches(source.lengths, self.cfg.max_tokens, self.cfg.seed, state.epoch, sides)
        yield EpochPart(batches, source.rows, lines=self._lines)

    def batches_known(self, part: EpochPart) -> int | None:
        """The epoch's batches, known from its first part."""
        return len(part.batches)

    def ended(self, state: TrainingState) -> None: ...

    def _lines(self, indices: np.ndarray) -> list[int]:
        (lines,) = self.train_set.columns(indices, "line")
        return lines


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
