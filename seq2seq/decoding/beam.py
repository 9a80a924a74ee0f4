"""Batched beam search over the model protocol (encode, init_cache, decode_step, cache.reorder /
select), with an optional forced prefix, optional lexical constraints (`Banks`) and an optional
record of the beam (`BeamTrace`).

Shapes: B sentences, K beams, n active sentences, V vocabulary, t output tokens so far.
"""

import torch
from torch import Tensor

from seq2seq.data.special import BOS_ID, EOS_ID
from seq2seq.decoding.beams import best_continuations, parent_slots
from seq2seq.decoding.constraints import Banks
from seq2seq.decoding.options import DecodeOptions
from seq2seq.decoding.penalty import penalty
from seq2seq.decoding.prefix import Prefix, prefill
from seq2seq.decoding.rules import Hypothesis, compaction_due, step_rules
from seq2seq.decoding.trace import BeamTrace
from seq2seq.models.protocol import Seq2SeqModel


@torch.inference_mode()
def beam_search(
    model: Seq2SeqModel,
    src: Tensor,
    max_lens: Tensor,
    options: DecodeOptions,
    prefix: Prefix | None = None,
    trace: BeamTrace | None = None,
    banks: Banks | None = None,
) -> list[list[Hypothesis]]:
    """Batched beam search; per sentence the `options.nbest` best finished hypotheses, best first.

    A sentence is done once `beam` hypotheses have ended in EOS (or at its max length); done
    sentences leave the active batch, shrinking both caches. As in fairseq, only EOS candidates
    ranked within the top `beam` are finished, which makes beam 1 identical to greedy search.
    The first step runs one row per sentence (all beams would be the same BOS prefix, or the same
    forced prefix); choosing its `beam` continuations is what fills the beam. While a row's prefix
    still forces its pieces, its one live hypothesis has the beam to itself (the rest are -inf).
    With `banks`, the beam is filled bank by bank and every output meets its constraints
    (constraints.py); a hypothesis stopped at its length limit with a phrase unmet ranks last.
    """
    B, K, alpha = src.size(0), options.beam, options.length_penalty
    memory, src_mask = model.encode(src)
    cache = model.init_cache(memory, src_mask, int(max_lens.max()) + 1, options.use_cache)
    device = src.device
    sent = torch.arange(B, device=device)
    scores = torch.zeros(B, device=device)
    history = torch.zeros(B, 0, dtype=torch.long, device=device)
    tokens, start = torch.full((B,), BOS_ID, device=device), 0
    if prefix is not None:
        history, tokens, start = prefill(model, cache, prefix, scores)
    if banks is not None:
        banks.start(history)
    if trace is not None:
        trace.root(history, scores)
    scores, history = scores[:, None], history[:, None]  # (n, k), (n, k, t): k hypotheses, 1 at first
    finished: list[list[Hypothesis]] = [[] for _ in range(B)]
    n_finished = torch.zeros(B, dtype=torch.long, device=device)  # (B,) len(finished[b]), on device
    alive = torch.ones(B, dtype=torch.bool, device=device)  # (n,) sentences still searching
    for t in range(start, int(max_lens.max()) + 1):
        n, k = scores.shape
        logprobs = model.decode_step(tokens, cache).float().log_softmax(-1)  # (n*k, V)
        rows = sent.repeat_interleave(k)
        step_rules(logprobs, t, rows, history.reshape(n * k, t), max_lens, options, prefix)
        if banks is not None:
            banks.mask(logprobs, history, (t >= max_lens[rows]).tolist())
        top_scores, parent, token = best_continuations(scores, logprobs, 2 * K)  # (n, 2K) each
        unmet = None
        if banks is not None:  # (n, W) each: with what advances a constraint, bank by bank
            top_scores, parent, token = banks.widen(scores, logprobs, (top_scores, parent, token))
            order = banks.rank(top_scores, parent, token)
            top_scores, parent, token = (x.gather(1, order) for x in (top_scores, parent, token))
            unmet = banks.unmet(parent)
        is_eos = token == EOS_ID
        ends = is_eos[:, :K] & top_scores[:, :K].isfinite() & alive[:, None]
        finish(ends, sent, history, parent, top_scores, alpha, finished, n_finished, unmet)
        # the K first candidates that do not end here carry on (a stable sort keeps their order)
        kept = torch.sort(is_eos.to(torch.uint8), dim=1, stable=True).indices[:, :K]  # (n, K)
        if k == K:  # each hypothesis in its parent's row where it can be: fewer rows to move
            kept = kept.gather(1, parent_slots(parent.gather(1, kept)))
        if trace is not None:
            met = None if banks is None else banks.met(parent, token)
            trace.step(t, sent, alive, top_scores, parent, token, ends, kept, alpha, met, unmet)
        scores, parent, token = (x.gather(1, kept) for x in (top_scores, parent, token))
        if banks is not None:
            banks.carry(parent, token)
        history = torch.cat([history.gather(1, parent[:, :, None].expand(-1, -1, t)), token[:, :, None]], 2)
        beam_idx = (torch.arange(n, device=device)[:, None] * k + parent).view(-1)  # (n*K,)
        alive &= ~((n_finished[sent] >= K) | (t >= max_lens[sent]))
        if not alive.any():
            break
        if k != K or compaction_due(alive):
            keep = alive.nonzero()[:, 0]
            cache.select(beam_idx.view(n, K)[keep].view(-1), K)  # reorder, shrink or grow in one copy
            sent, scores, history, token, alive = (x[keep] for x in (sent, scores, history, token, alive))
            if banks is not None:
                banks.keep(keep.tolist())
        else:  # the cache skips the rows that keep their own parent (all of them, often)
            cache.reorder(beam_idx)
        tokens = token.reshape(-1)
    return [sorted(hyps, key=lambda h: (h.unmet, -h.score))[: options.nbest] for hyps in finished]


def finish(
    ends: Tensor, sent, history, parent, top_scores, alpha: float, finished, n_finished, unmet=None
) -> None:
    """Record the hypotheses that end here: ends (n, K) marks (sentence row, candidate) pairs;
    `unmet` (n, W), the constraints each would leave unmet. Everything they need crosses to
    Python in three transfers, whatever their number."""
    i, j = ends.nonzero().unbind(1)  # (m,) each
    if not len(i):
        return
    sentences = sent[i]
    prefixes = history[i, parent[i, j]].tolist()  # m lists of t tokens
    left = (
        [0] * len(prefixes)
        if unmet is None
        else [unmet[a][c] for a, c in zip(i.tolist(), j.tolist(), strict=True)]
    )
    rows = zip(sentences.tolist(), prefixes, top_scores[i, j].tolist(), left, strict=True)
    for b, prefix, score, u in rows:
        finished[b].append(Hypothesis(prefix, score / penalty(len(prefix) + 1, alpha), u))
    n_finished.index_add_(0, sentences, torch.ones_like(i))
