"""Greedy search, and sampling, which is greedy search that draws each piece instead of taking the
most likely one: `options.num_samples` rows per sentence, sharing its encoder pass and its
cross-attention keys.

Shapes: B sentences, N rows per sentence (samples; 1 for greedy), n active rows, V vocabulary,
t output tokens so far.
"""

import torch
from torch import Tensor

from seq2seq.data.special import BOS_ID, EOS_ID
from seq2seq.decoding.options import GREEDY, DecodeOptions
from seq2seq.decoding.penalty import penalty
from seq2seq.decoding.prefix import Prefix, prefill
from seq2seq.decoding.rules import Hypothesis, compaction_due, step_rules
from seq2seq.decoding.sampling import Sampler
from seq2seq.models.protocol import Seq2SeqModel


@torch.inference_mode()
def greedy(
    model: Seq2SeqModel,
    src: Tensor,
    max_lens: Tensor,
    options: DecodeOptions = GREEDY,
    prefix: Prefix | None = None,
    sampler: Sampler | None = None,
) -> list[Hypothesis]:
    """The most likely next token at every step, or with `sampler` a drawn one. src (B, S) ids;
    max_lens (B,) output limits; of `options`, the step rules', length_penalty, use_cache (and
    with a sampler num_samples); `prefix`, pieces each output starts with. One hypothesis per row: B, or
    with a sampler B x N, sentence by sentence."""
    B, alpha = src.size(0), options.length_penalty
    N = options.num_samples if sampler is not None else 1
    memory, src_mask = model.encode(src)
    cache = model.init_cache(memory, src_mask, int(max_lens.max()) + 1, options.use_cache)
    scores = torch.zeros(B, device=src.device)
    history = torch.zeros(B, 0, dtype=torch.long, device=src.device)  # (n, t)
    tokens, start = torch.full((B,), BOS_ID, device=src.device), 0
    if prefix is not None:  # the shortest prefix in one pass, before the rows spread
        history, tokens, start = prefill(model, cache, prefix, scores)
    row = torch.arange(B, device=src.device)  # (n,) which row of the result each active row is
    if N > 1:
        cache.select(row.repeat_interleave(N), N)
        history, tokens, scores = (x.repeat_interleave(N, dim=0) for x in (history, tokens, scores))
        row = torch.arange(B * N, device=src.device)
    alive = torch.ones(len(row), dtype=torch.bool, device=src.device)  # (n,) rows still decoding
    results: list[Hypothesis | None] = [None] * len(row)
    for t in range(start, int(max_lens.max()) + 1):
        logprobs = model.decode_step(tokens, cache).float().log_softmax(-1)  # (n, V)
        step_rules(logprobs, t, row // N, history, max_lens, options, prefix)
        if sampler is None:
            best, tokens = logprobs.max(-1)
        else:
            tokens = sampler.choose(logprobs, t)
            best = logprobs.gather(1, tokens[:, None])[:, 0]
        scores += best
        done = (tokens == EOS_ID) & alive
        for r in done.nonzero()[:, 0].tolist():
            length = history.size(1) + 1
            results[row[r]] = Hypothesis(history[r].tolist(), scores[r].item() / penalty(length, alpha))
        history = torch.cat([history, tokens[:, None]], dim=1)
        alive &= ~done
        if not alive.any():
            break
        if compaction_due(alive):
            keep = alive.nonzero()[:, 0]
            cache.select(keep)
            if sampler is not None:
                sampler.keep(keep.tolist())
            row, tokens, history, scores, alive = (x[keep] for x in (row, tokens, history, scores, alive))
    return results
