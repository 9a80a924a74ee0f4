"""Concatenation augmentation by the epoch: a share of the epoch's pairs is joined two by two, source
to source and target to target, with partners drawn afresh each epoch.

Why: Nguyen, Murray and Chiang (2021) found that training on randomly concatenated pairs raised
BLEU by about 1 on four small corpora, and traced it not to discourse (the partners are random)
but to diversity: each sentence is seen beside ever other ones, at shifted positions, in longer
sequences. A corpus seen for dozens of epochs (Multi30k's 29,000 pairs, 44 epochs in 50 minutes)
is the case for it. Here every pair is still seen once an epoch, alone or joined, so an epoch
costs about the same tokens as before and a budget buys the same epochs: joining replaces, it
does not add (the paper added the joined pairs to the originals).

Pieces join as the texts would: a SentencePiece segmentation of "a b" is a's pieces then b's,
since b's first piece carries its own word boundary. A joined pair whose side would pass the
model's positions stays two pairs. The partners come from (seed, epoch) alone, so a resumed run
and every data-parallel process cut the same batches.
"""

from collections.abc import Callable, Sequence

import numpy as np

from seq2seq.data.batch import SideLengths

Rows = Callable[[Sequence[int]], tuple[list[list[int]], list[list[int]]]]


class JoinedPairs(SideLengths):
    """An epoch's pairs, a `share` of them joined two by two: `lengths`, `side_lengths()` and
    `rows(indices)` as the stored or sampled pairs they are made of (`source`, read by `rows`)."""

    def __init__(self, source, rows: Rows, share: float, seed: int, epoch: int, limit: int):
        """`limit`: the most pieces a joined side may have (a target also needs BOS or EOS)."""
        src_lengths, tgt_lengths = source.side_lengths()
        n = len(src_lengths)
        generator = np.random.default_rng([seed, epoch, 0x6A6F696E])  # not the batches' own draw
        partners = generator.permutation(n)[: int(share * n) // 2 * 2].reshape(-1, 2)  # (P, 2)
        fits = (src_lengths[partners].sum(1) <= limit) & (tgt_lengths[partners].sum(1) <= limit)
        joined = partners[fits]
        alone = np.ones(n, dtype=bool)
        alone[joined.ravel()] = False
        singles = np.flatnonzero(alone)
        # (M, 2) the pairs each row is made of: its second is -1 where the pair stands alone
        self.members = np.concatenate([np.stack([singles, np.full_like(singles, -1)], 1), joined])
        self._rows = rows
        first, second = self.members[:, 0], self.members[:, 1]
        super().__init__(  # (M,) each side's, a joined row's the sum of its pairs'
            src_lengths[first] + np.where(second >= 0, src_lengths[second], 0),
            tgt_lengths[first] + np.where(second >= 0, tgt_lengths[second], 0),
        )

    def rows(self, indices) -> tuple[list[list[int]], list[list[int]]]:
        """The pieces of these rows: a joined one is its first pair's, then its second's."""
        members = self.members[np.asarray(indices, dtype=np.int64)]  # (B, 2)
        wanted = members[members >= 0]
        src, tgt = self._rows(wanted.tolist())
        at = {int(i): k for k, i in enumerate(wanted)}  # each pair is in at most one row
        joined_src, joined_tgt = [], []
        for first, second in members.tolist():
            a, b = at[first], at.get(second)
            joined_src.append(src[a] + src[b] if b is not None else src[a])
            joined_tgt.append(tgt[a] + tgt[b] if b is not None else tgt[a])
        return joined_src, joined_tgt
