"""Greedy and beam search over the model protocol (encode, init_cache, decode_step, cache.reorder /
select), and `translate` for lines of text.

Shapes: B sentences, K beams, n active sentences, V vocabulary, t output tokens so far.
"""

from collections.abc import Iterator
from dataclasses import dataclass, field

import torch
from torch import Tensor

from seq2seq.data.batch import pad
from seq2seq.data.special import BOS_ID, EOS_ID, PAD_ID
from seq2seq.data.tokenizer import is_blank
from seq2seq.decoding.beams import best_continuations, parent_slots
from seq2seq.decoding.options import GREEDY, DecodeOptions
from seq2seq.decoding.penalty import penalty
from seq2seq.device import autocast
from seq2seq.errors import Seq2SeqError
from seq2seq.models.protocol import Seq2SeqModel


@dataclass
class Hypothesis:
    tokens: list[int]  # output ids, EOS excluded
    score: float  # sum of log-probabilities (EOS included) divided by the length penalty


@dataclass
class Translations:
    nbest: list[list[tuple[str, float]]]  # per input line: (text, score), best first
    tokens: list[list[int]]  # per input line: the best hypothesis' output ids, EOS excluded
    truncated: int = 0  # lines cut to the model's longest source
    best: list[str] = field(init=False)

    def __post_init__(self):
        self.best = [hyps[0][0] if hyps else "" for hyps in self.nbest]


@torch.inference_mode()
def translate(model: Seq2SeqModel, tokenizer, lines: list[str], options: DecodeOptions) -> Translations:
    """Translate lines in length-sorted batches, returning results in input order; a blank line
    (`is_blank`, or no pieces at all) gives an empty translation without touching the model."""
    options.check()
    if options.beam > model.cfg.vocab_size:  # more beams than pieces to extend them with
        raise Seq2SeqError(
            f"beam size {options.beam} is above the vocabulary's {model.cfg.vocab_size} pieces"
        )
    ids, truncated = source_ids(model, tokenizer, lines)
    nbest: list[list[tuple[str, float]]] = [[] for _ in lines]
    tokens: list[list[int]] = [[] for _ in lines]
    # a line the tokenizer reduces to no pieces is blank too: the model would read EOS alone
    todo = [i for i, line in enumerate(lines) if not is_blank(line) and len(ids[i]) > 1]
    for i, sentence_hyps in search_in_batches(model, ids, todo, options):
        texts = tokenizer.decode([h.tokens for h in sentence_hyps])
        nbest[i] = [(text, h.score) for text, h in zip(texts, sentence_hyps, strict=True)]
        tokens[i] = sentence_hyps[0].tokens
    return Translations(nbest, tokens, truncated)


def search_in_batches(
    model: Seq2SeqModel, ids: list[list[int]], todo: list[int], options: DecodeOptions
) -> Iterator[tuple[int, list[Hypothesis]]]:
    """(i, the hypotheses of ids[i]) for each i of `todo`, searched in batches of similar length
    (less padding), in that length order."""
    device = next(model.parameters()).device
    todo = sorted(todo, key=lambda i: len(ids[i]))
    for start in range(0, len(todo), options.batch_size):
        chunk = todo[start : start + options.batch_size]
        src = pad([ids[i] for i in chunk]).to(device)
        with torch.inference_mode(), autocast(device, options.bf16):
            hyps = search(model, src, options)
        yield from zip(chunk, hyps, strict=True)


def source_ids(model: Seq2SeqModel, tokenizer, lines: list[str]) -> tuple[list[list[int]], int]:
    """Each line's piece ids cut to the model's longest source and ended with EOS, and how many
    lines were cut."""
    ids, cut = fit_sources(model, tokenizer.encode(lines))
    return ids, sum(cut)


def fit_sources(model: Seq2SeqModel, ids: list[list[int]]) -> tuple[list[list[int]], list[bool]]:
    """`source_ids` of encoded lines, with whether each line was cut."""
    max_src = model.cfg.max_positions - 1  # room for EOS
    return [[*x[:max_src], EOS_ID] for x in ids], [len(x) > max_src for x in ids]


def search(model: Seq2SeqModel, src: Tensor, options: DecodeOptions) -> list[list[Hypothesis]]:
    """Greedy when the beam is 1 (same result as beam_search, cheaper), beam search otherwise."""
    max_lens = max_lengths(src, options, output_limit(model))
    if options.beam == 1:
        return [[h] for h in greedy(model, src, max_lens, options)]
    return beam_search(model, src, max_lens, options)


@torch.inference_mode()
def greedy(
    model: Seq2SeqModel, src: Tensor, max_lens: Tensor, options: DecodeOptions = GREEDY
) -> list[Hypothesis]:
    """The most likely next token at every step. src (B, S) ids; max_lens (B,) output limits; of
    `options`, min_len, length_penalty and use_cache."""
    B, min_len, alpha, use_cache = src.size(0), options.min_len, options.length_penalty, options.use_cache
    memory, src_mask = model.encode(src)
    cache = model.init_cache(memory, src_mask, int(max_lens.max()) + 1, use_cache)
    sent = torch.arange(B, device=src.device)  # (n,) which sentence each active row is
    tokens = torch.full((B,), BOS_ID, device=src.device)
    history = torch.zeros(B, 0, dtype=torch.long, device=src.device)  # (n, t)
    scores = torch.zeros(B, device=src.device)
    alive = torch.ones(B, dtype=torch.bool, device=src.device)  # (n,) rows still decoding
    results: list[Hypothesis | None] = [None] * B
    for t in range(int(max_lens.max()) + 1):
        logprobs = model.decode_step(tokens, cache).float().log_softmax(-1)  # (n, V)
        constrain(logprobs, t, min_len, max_lens[sent])
        best, tokens = logprobs.max(-1)
        scores += best
        done = (tokens == EOS_ID) & alive
        for row in done.nonzero()[:, 0].tolist():
            length = history.size(1) + 1
            results[sent[row]] = Hypothesis(
                history[row].tolist(), scores[row].item() / penalty(length, alpha)
            )
        history = torch.cat([history, tokens[:, None]], dim=1)
        alive &= ~done
        if not alive.any():
            break
        if compaction_due(alive):
            keep = alive.nonzero()[:, 0]
            cache.select(keep)
            sent, tokens, history, scores, alive = (x[keep] for x in (sent, tokens, history, scores, alive))
    return results


@torch.inference_mode()
def beam_search(
    model: Seq2SeqModel, src: Tensor, max_lens: Tensor, options: DecodeOptions
) -> list[list[Hypothesis]]:
    """Batched beam search; per sentence the `options.nbest` best finished hypotheses, best first.

    A sentence is done once `beam` hypotheses have ended in EOS (or at its max length); done
    sentences leave the active batch, shrinking both caches. As in fairseq, only EOS candidates
    ranked within the top `beam` are finished, which makes beam 1 identical to greedy search.
    The first step runs one row per sentence (all beams would be the same BOS prefix); choosing
    its `beam` continuations is what fills the beam.
    """
    B, K, min_len, alpha, nbest = (
        src.size(0),
        options.beam,
        options.min_len,
        options.length_penalty,
        options.nbest,
    )
    memory, src_mask = model.encode(src)
    cache = model.init_cache(memory, src_mask, int(max_lens.max()) + 1, options.use_cache)
    device = src.device
    sent = torch.arange(B, device=device)
    scores = torch.zeros(B, 1, device=device)  # (n, k): k hypotheses per sentence, 1 at first
    history = torch.zeros(B, 1, 0, dtype=torch.long, device=device)  # (n, k, t)
    tokens = torch.full((B,), BOS_ID, device=device)
    finished: list[list[Hypothesis]] = [[] for _ in range(B)]
    n_finished = torch.zeros(B, dtype=torch.long, device=device)  # (B,) len(finished[b]), on device
    alive = torch.ones(B, dtype=torch.bool, device=device)  # (n,) sentences still searching
    for t in range(int(max_lens.max()) + 1):
        n, k = scores.shape
        logprobs = model.decode_step(tokens, cache).float().log_softmax(-1)  # (n*k, V)
        constrain(logprobs, t, min_len, max_lens[sent].repeat_interleave(k))
        top_scores, parent, token = best_continuations(scores, logprobs, 2 * K)  # (n, 2K) each
        is_eos = token == EOS_ID
        ends = is_eos[:, :K] & top_scores[:, :K].isfinite() & alive[:, None]
        finish(ends, sent, history, parent, top_scores, alpha, finished, n_finished)
        # the K best candidates that do not end here carry on (a stable sort keeps score order)
        order = torch.sort(is_eos.to(torch.uint8), dim=1, stable=True).indices[:, :K]
        scores, parent, token = (x.gather(1, order) for x in (top_scores, parent, token))
        if k == K:  # each hypothesis in its parent's row where it can be: fewer rows to move
            slots = parent_slots(parent)
            scores, parent, token = (x.gather(1, slots) for x in (scores, parent, token))
        history = torch.cat([history.gather(1, parent[:, :, None].expand(-1, -1, t)), token[:, :, None]], 2)
        beam_idx = (torch.arange(n, device=device)[:, None] * k + parent).view(-1)  # (n*K,)
        alive &= ~((n_finished[sent] >= K) | (t >= max_lens[sent]))
        if not alive.any():
            break
        if k != K or compaction_due(alive):
            keep = alive.nonzero()[:, 0]
            cache.select(beam_idx.view(n, K)[keep].view(-1), K)  # reorder, shrink or grow in one copy
            sent, scores, history, token, alive = (x[keep] for x in (sent, scores, history, token, alive))
        else:  # the cache skips the rows that keep their own parent (all of them, often)
            cache.reorder(beam_idx)
        tokens = token.reshape(-1)
    return [sorted(hyps, key=lambda h: -h.score)[:nbest] for hyps in finished]


def finish(ends: Tensor, sent, history, parent, top_scores, alpha: float, finished, n_finished) -> None:
    """Record the hypotheses that end here: ends (n, K) marks (sentence row, candidate) pairs.
    Everything they need crosses to Python in three transfers, whatever their number."""
    i, j = ends.nonzero().unbind(1)  # (m,) each
    if not len(i):
        return
    sentences = sent[i]
    prefixes = history[i, parent[i, j]].tolist()  # m lists of t tokens
    for b, prefix, score in zip(sentences.tolist(), prefixes, top_scores[i, j].tolist(), strict=True):
        finished[b].append(Hypothesis(prefix, score / penalty(len(prefix) + 1, alpha)))
    n_finished.index_add_(0, sentences, torch.ones_like(i))


COMPACTION_SHARE = 0.25


def compaction_due(alive: Tensor) -> bool:
    """Whether to drop the finished sentences from the batch now: once they are a quarter of it.
    Until then they ride along (their rows are computed and ignored): dropping them costs a copy of
    both caches, and sentences finish at almost every step of a batch."""
    return bool((~alive).sum() >= COMPACTION_SHARE * len(alive))


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


def max_lengths(src: Tensor, options: DecodeOptions, limit: int) -> Tensor:
    """Per-sentence output limit (B,): absolute, or a function of the source length. Limits are
    capped at `limit` in Python first: a length beyond int64 is no tensor."""
    if options.max_len is not None:
        lens = torch.full((src.size(0),), min(options.max_len, limit), device=src.device)
    else:
        src_len = (src != PAD_ID).sum(1)
        lens = (options.max_len_a * src_len + options.max_len_b).long()
    return lens.clamp(min=min(options.min_len, limit), max=limit)
