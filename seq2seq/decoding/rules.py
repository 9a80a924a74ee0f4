"""The rules every search shares: what a hypothesis is, which pieces a step may put out, how long
an output may grow, and when finished sentences leave the batch.

Shapes: B sentences, n rows, V vocabulary.
"""

from dataclasses import dataclass

import torch
from torch import Tensor

from seq2seq.data.batch import pad
from seq2seq.data.special import BOS_ID, EOS_ID, PAD_ID
from seq2seq.decoding.options import DecodeOptions
from seq2seq.decoding.prefix import Prefix
from seq2seq.models.protocol import Seq2SeqModel


@dataclass
class Hypothesis:
    tokens: list[int]  # output ids, EOS excluded
    score: float  # sum of log-probabilities (EOS included) divided by the length penalty
    unmet: int = 0  # constraints left unmet: only by one stopped at its length limit (constraints.py)


COMPACTION_SHARE = 0.25


def compaction_due(alive: Tensor) -> bool:
    """Whether to drop the finished sentences from the batch now: once they are a quarter of it.
    Until then they ride along (their rows are computed and ignored): dropping them costs a copy of
    both caches, and sentences finish at almost every step of a batch."""
    return bool((~alive).sum() >= COMPACTION_SHARE * len(alive))


def step_rules(
    logprobs: Tensor,
    t: int,
    sentences: Tensor,
    history: Tensor,
    max_lens: Tensor,
    options: DecodeOptions,
    prefix: Prefix | None = None,
) -> None:
    """In place, every rule of step `t` that a search shares, for logprobs (n, V) of rows whose
    sentences (n,) and outputs so far, history (n, t), are given; max_lens (B,): `constrain`, no
    repeated n-gram, and a prefix's forced pieces (which win: a user's prefix is kept as it is)."""
    constrain(logprobs, t, options.min_len, max_lens[sentences])
    if options.no_repeat_ngram:
        free = None if prefix is None else t >= prefix.lens[sentences]
        block_repeats(logprobs, history, options.no_repeat_ngram, free)
    if prefix is not None:
        prefix.force(logprobs, t, sentences)


def block_repeats(logprobs: Tensor, history: Tensor, n: int, rows: Tensor | None = None) -> None:
    """In place: no row (of `rows`, a (n,) mask; all where None) puts out the piece that would
    repeat an n-gram of its history (n, t): every piece that followed an earlier occurrence of
    its last n - 1 pieces is cut (n = 1: every piece it has put out)."""
    t = history.size(1)
    if t < n:
        return
    grams = history.unfold(1, n, 1)  # (n rows, t - n + 1, n): every n-gram so far
    suffix = history[:, t - n + 1 :]  # (n rows, n - 1): the n-gram the next piece would end
    seen = (grams[:, :, :-1] == suffix[:, None, :]).all(-1)  # (n rows, t - n + 1)
    if rows is not None:
        seen &= rows[:, None]
    row, at = seen.nonzero().unbind(1)
    logprobs[row, grams[row, at, -1]] = float("-inf")


def constrain(logprobs: Tensor, t: int, min_len: int, max_lens: Tensor) -> None:
    """In place: never PAD or BOS; no EOS before min_len; only EOS once a row reaches its max
    (the max wins over min_len, so every row can always end)."""
    at_max = t >= max_lens
    eos = logprobs[at_max, EOS_ID] if at_max.any() else None  # (rows at their max,)
    logprobs[:, PAD_ID] = float("-inf")
    logprobs[:, BOS_ID] = float("-inf")
    if t < min_len:
        logprobs[:, EOS_ID] = float("-inf")
    if eos is not None:
        logprobs[at_max] = float("-inf")
        logprobs[at_max, EOS_ID] = eos


def output_limit(model: Seq2SeqModel) -> int:
    """The most pieces the model can put out (its positions, less the one BOS takes)."""
    return model.cfg.max_positions - 1


def output_room(model: Seq2SeqModel, options: DecodeOptions) -> int:
    """The most pieces a line's output may take: the model's longest output, or --max-len below it."""
    limit = output_limit(model)
    return limit if options.max_len is None else min(options.max_len, limit)


def length_notices(model: Seq2SeqModel, options: DecodeOptions) -> list[str]:
    """What `max_lengths` changes in the asked lengths to fit the model, for the caller to say:
    asking for more than the model can give is not an error, but it is not done either."""
    limit, notices = output_limit(model), []
    for name, value in (("min-len", options.min_len), ("max-len", options.max_len)):
        if value is not None and value > limit:
            notices.append(
                f"{name} {value} is above the model's longest output ({limit} pieces); {limit} is used"
            )
    return notices


def max_lengths(src: Tensor, options: DecodeOptions, limit: int, least: Tensor | None = None) -> Tensor:
    """Per-sentence output limit (B,): absolute, or a function of the source length, and never
    below what a sentence needs (`least`, (B,): a forced prefix and its constraints' pieces; an
    absolute limit below them is refused before).
    Limits are capped at `limit` in Python first: a length beyond int64 is no tensor."""
    if options.max_len is not None:
        lens = torch.full((src.size(0),), min(options.max_len, limit), device=src.device)
    else:
        src_len = (src != PAD_ID).sum(1)
        lens = (options.max_len_a * src_len + options.max_len_b).long()
    if least is not None:
        lens = torch.maximum(lens, least)
    return lens.clamp(min=min(options.min_len, limit), max=limit)


def most_work(ids: list[list[int]], options: DecodeOptions, limit: int, forced: list | None) -> int:
    """Rows x output pieces at most for lines of source pieces `ids` (and their `forced` prefixes),
    searched with `options` under the model's `limit`: the lengths the search itself sets. What a
    server weighs a request by before it takes it on."""
    least = None if forced is None else torch.tensor([len(p) for p in forced])
    return options.rows * int(max_lengths(pad(ids), options, limit, least).sum())
