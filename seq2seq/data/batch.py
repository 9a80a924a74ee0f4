"""Ids -> tensors: padding, the shift by one between decoder input and output, and token-budget
batches of similar lengths.

Shapes: B sentences, S source length, T target length.
"""

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from seq2seq.data.special import BOS_ID, EOS_ID, PAD_ID


@dataclass
class Batch:
    src: Tensor  # (B, S) source ids + EOS, right-padded
    tgt_in: Tensor  # (B, T) BOS + target ids: what the decoder reads
    tgt_out: Tensor  # (B, T) target ids + EOS: what it must predict (PAD is ignored)
    n_tokens: int  # real target tokens, the unit of throughput and of the loss average
    alignment: Tensor | None = None  # (B, T, S) guided alignment targets (training/guided.py)

    def to(self, device: torch.device) -> "Batch":
        """On CUDA through pinned memory, so the copies overlap the work already queued."""
        if device.type != "cuda":
            return self
        src, tgt_in, tgt_out = (
            t.pin_memory().to(device, non_blocking=True) for t in (self.src, self.tgt_in, self.tgt_out)
        )
        alignment = self.alignment
        if alignment is not None:
            alignment = alignment.pin_memory().to(device, non_blocking=True)
        return Batch(src, tgt_in, tgt_out, self.n_tokens, alignment)


def collate(src_ids: list[list[int]], tgt_ids: list[list[int]], max_len: int) -> Batch:
    """Pad one batch; sequences are cut so that with EOS/BOS they fit `max_len` positions."""
    src = pad([[*s[: max_len - 1], EOS_ID] for s in src_ids])
    tgt_in = pad([[BOS_ID, *t[: max_len - 1]] for t in tgt_ids])
    tgt_out = pad([[*t[: max_len - 1], EOS_ID] for t in tgt_ids])
    return Batch(src, tgt_in, tgt_out, int((tgt_out != PAD_ID).sum()))


def pad(rows: list[list[int]]) -> Tensor:
    """Right-pad id lists into (B, longest) with PAD_ID."""
    out = torch.full((len(rows), max(map(len, rows))), PAD_ID, dtype=torch.long)
    for i, row in enumerate(rows):
        out[i, : len(row)] = torch.tensor(row, dtype=torch.long)
    return out


def pair_lengths(src_ids: list[list[int]], tgt_ids: list[list[int]]) -> list[int]:
    """Batching length of each pair: its longer side plus EOS (or BOS)."""
    return [max(len(s), len(t)) + 1 for s, t in zip(src_ids, tgt_ids, strict=True)]


def batching_lengths(src_lengths: np.ndarray, tgt_lengths: np.ndarray) -> np.ndarray:
    """(N,) `pair_lengths` from the (N,) lengths of each side, for pairs read as arrays."""
    return np.maximum(src_lengths, tgt_lengths) + 1


def token_batches(
    lengths: Sequence[int] | np.ndarray,
    max_tokens: int,
    seed: int,
    epoch: int,
    then_by: Sequence[np.ndarray] = (),
) -> list[np.ndarray]:
    """Sentence indices grouped so that rows x longest length stays within `max_tokens`.

    Sorting by length keeps padding low; random tie-breaking and a shuffled batch order make each
    epoch different, yet the same (seed, epoch) always gives the same batches, so a resumed run
    can skip exactly the batches it already trained on. `then_by`: (N,) keys that order pairs of
    one length before the random tie-break: the source's and the target's lengths (as fairseq
    orders its batches), so a batch's rows pad each side less, not only the longer one. Vectorised
    where it can be: on a corpus of millions of pairs a Python sort of tuples costs seconds and
    hundreds of MB.
    """
    if len(lengths) == 0:
        return []
    g = torch.Generator().manual_seed(seed * 1_000_003 + epoch)
    noise = torch.rand(len(lengths), generator=g).numpy()
    lengths = np.asarray(lengths, dtype=np.int64)
    order = _sorted_by(lengths, *then_by, noise=noise)
    starts, rows, position = [0], 0, 0
    sizes, counts = np.unique(lengths[order], return_counts=True)
    for length, count in zip(sizes.tolist(), counts.tolist(), strict=True):  # ascending lengths
        fits = max(max_tokens // length, 1)  # rows a batch may hold once `length` is its longest
        while count:
            if rows >= fits:
                starts.append(position)
                rows = 0
            take = min(fits - rows, count)
            rows, position, count = rows + take, position + take, count - take
    batches = np.split(order, starts[1:])
    return [batches[j] for j in torch.randperm(len(batches), generator=g).tolist()]


def _sorted_by(*keys: np.ndarray, noise: np.ndarray) -> np.ndarray:
    """Indices sorted by the keys (non-negative integers), then the noise, stable. torch.rand's
    float32 values are multiples of 2^-24, so keys and noise usually fit one int64, which sorts ~3x
    faster than np.lexsort on millions of pairs; the lexsort stays for what does not fit."""
    grid = noise.astype(np.float64) * 2**24
    widths = [int(np.max(k, initial=0)).bit_length() for k in keys]
    if not np.array_equal(grid, np.floor(grid)) or sum(widths) + 24 > 63 or min(map(np.min, keys)) < 0:
        return np.lexsort((noise, *reversed(keys)))
    packed = np.zeros(len(noise), dtype=np.int64)
    for key, width in zip(keys, widths, strict=True):
        packed = (packed << width) | np.asarray(key, dtype=np.int64)
    return np.argsort((packed << 24) | grid.astype(np.int64), kind="stable")
