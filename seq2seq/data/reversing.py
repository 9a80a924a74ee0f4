"""Bidirectional training: early epochs train on every pair both ways, source -> target and
target -> source, before the run tunes on its own direction alone.

Why: Ding, Wu and Tao (2021), "Improving Neural Machine Translation by Bidirectional Training",
report about +1 BLEU on 15 tasks (160K to 38M pairs) from training the first third of the steps
on the pairs and their reverses, with no new parameters, steps or data: the reversed pairs teach
the same alignments from the other side. It needs nothing but what this toolkit already has: one
joint SentencePiece vocabulary and one embedding matrix for both languages, so a French sentence
is as valid a source as an English one, and the model tells the direction from the source it
reads (no tag).

A reversed pair is the stored pair's target as source and its source as target, in the stored
(unsampled) pieces: source subword sampling regularizes what the model reads in its own
direction, and sampled targets were measured to hurt (results.md). The forward half is the
epoch's own pairs (stored or sampled), so a both-ways epoch holds twice the pairs and costs about
twice the steps.
"""

import numpy as np

from seq2seq.data.batch import SideLengths
from seq2seq.data.joining import Rows


class BothWays(SideLengths):
    """An epoch's pairs (`forward`, read by `rows`), then the `stored` pairs reversed: `lengths`,
    `side_lengths()` and `rows(indices)` as the pairs they are made of; row i < n is forward pair
    i, row n + i is stored pair i reversed."""

    def __init__(self, forward, rows: Rows, stored):
        self._forward_rows, self._stored = rows, stored
        src, tgt = forward.side_lengths()
        self.n_forward = len(src)
        stored_src, stored_tgt = stored.side_lengths()
        super().__init__(np.concatenate([src, stored_tgt]), np.concatenate([tgt, stored_src]))  # (2N,)

    def rows(self, indices) -> tuple[list[list[int]], list[list[int]]]:
        """The pieces of these rows, in their order: forward ones as the epoch has them, reversed
        ones as the stored pair's target then source."""
        n = self.n_forward
        indices = [int(i) for i in indices]
        forward = [i for i in indices if i < n]
        reverse = [i - n for i in indices if i >= n]
        forward_src, forward_tgt = self._forward_rows(forward) if forward else ([], [])
        stored_src, stored_tgt = self._stored.rows(reverse) if reverse else ([], [])
        forward_pairs = iter(zip(forward_src, forward_tgt, strict=True))
        reversed_pairs = iter(zip(stored_tgt, stored_src, strict=True))
        pairs = [next(forward_pairs) if i < n else next(reversed_pairs) for i in indices]
        return [s for s, _ in pairs], [t for _, t in pairs]
