"""A forced prefix: the output of a line starts with given pieces, and the search continues from
there (CTranslate2's `target_prefix`, the interactive-predictive loop of OpenNMT and Sockeye).

The batch's shortest prefix is run in one teacher-forced pass (`decode_steps`) that fills the cache
and scores its pieces; a row whose prefix is longer is held to its pieces one step at a time
(`force`: every other piece's log-probability becomes -inf), so lines of different prefixes
share a batch. Each forced piece's log-probability counts in the score, so a prefixed
translation scores as `seq2seq score` scores the whole output.

Shapes: B sentences, P the longest prefix, m the shortest, V vocabulary, n rows.
"""

from dataclasses import dataclass

import torch
from torch import Tensor

from seq2seq.data.batch import pad
from seq2seq.data.special import BOS_ID, UNK_ID
from seq2seq.data.tokenizer import is_blank
from seq2seq.errors import FieldError


@dataclass
class Prefix:
    """The prefixes of a batch: ids (B, P) padded, each one's length (B,), and the shortest and
    longest length as numbers (read at every step: no tensor to wait for)."""

    ids: Tensor
    lens: Tensor
    shortest: int
    longest: int

    @classmethod
    def of(cls, prefixes: list[list[int]], device) -> "Prefix | None":
        """None when no line has a prefix: the search then runs as it always did."""
        if not any(prefixes):
            return None
        ids = pad([p or [BOS_ID] for p in prefixes]).to(device)  # a filler no position reads
        lens = [len(p) for p in prefixes]
        return cls(ids, torch.tensor(lens, device=device), min(lens), max(lens))

    def force(self, logprobs: Tensor, t: int, sentences: Tensor) -> None:
        """In place: rows whose prefix has a piece at output position `t` may only put out that
        piece, at its own log-probability. logprobs (n, V); sentences (n,) each row's sentence."""
        if t >= self.longest:
            return
        rows = (t < self.lens[sentences]).nonzero()[:, 0]
        token = self.ids[sentences[rows], t]  # (r,)
        kept = logprobs[rows, token]
        logprobs[rows] = float("-inf")
        logprobs[rows, token] = kept


def prefill(model, cache, prefix: Prefix, scores: Tensor) -> tuple[Tensor, Tensor, int]:
    """Run the batch's shortest prefix (m pieces) in one pass, one row per sentence: the cache
    then holds its positions. Adds its pieces' log-probabilities to `scores` (B,) in place and
    returns the output so far (B, m), the last piece of each row (B,) and m."""
    m = prefix.shortest
    if m == 0:
        return prefix.ids[:, :0], torch.full_like(prefix.lens, BOS_ID), 0
    forced = prefix.ids[:, :m]  # (B, m)
    inputs = torch.cat([torch.full_like(forced[:, :1], BOS_ID), forced[:, :-1]], dim=1)
    logprobs = model.decode_steps(inputs, cache).float().log_softmax(-1)  # (B, m, V)
    scores += logprobs.gather(-1, forced[..., None])[..., 0].sum(1)
    return forced, forced[:, -1], m


def prefix_ids(
    tokenizer, prefixes: list[str] | None, lines: int, limit: int, max_len: int | None = None
) -> list[list[int]]:
    """Each line's prefix as pieces ([] for none or a blank one), checked here and nowhere else: a
    one-line error naming the fields for a prefix count other than the lines', a piece the
    vocabulary lacks, or more pieces than the model can put out (`limit`) or `max_len` allows."""
    if prefixes is None:
        return [[] for _ in range(lines)]
    if len(prefixes) != lines:
        raise FieldError("prefixes", f"{lines} lines but {len(prefixes)} prefixes; give one prefix a line")
    ids = [
        [] if is_blank(p) else row
        for p, row in zip(prefixes, tokenizer.encode(prefixes, "target"), strict=True)
    ]
    for number, (text, row) in enumerate(zip(prefixes, ids, strict=True), start=1):
        if UNK_ID in row:
            raise FieldError(
                "prefixes", f"prefix {number} ({text[:40]!r}) holds characters the tokenizer has no piece for"
            )
        if len(row) > limit:
            raise FieldError(
                "prefixes",
                f"prefix {number} has {len(row)} pieces, above the model's longest output ({limit})",
            )
        if max_len is not None and len(row) > max_len:
            raise FieldError(
                ("prefixes", "max_len"),
                f"prefix {number} is longer than max-len {max_len}: raise it, or shorten it",
            )
    return ids
