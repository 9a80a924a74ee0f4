"""Decoding state, passed in and returned explicitly: what the decoder remembers between steps.

Shapes: B rows (sentences x beams), H heads, S source length, Dh head dim, L decoder layers,
Tmax the longest target the buffers hold.
"""

import math

import torch
from torch import Tensor


class DecoderCache:
    """Cross-attention K/V computed once per sentence, and self-attention K/V written step by step
    into one preallocated buffer (L, 2, B, H, Tmax, Dh), so a step costs no concatenation.

    In beam search a sentence's `beams` consecutive rows share its cross K/V, held once: n
    sentences x beams rows read n copies, not n x beams (the step's attention takes each
    sentence's queries together, `Attention.attend_beams`)."""

    def __init__(self, cross_kv: list[tuple[Tensor, Tensor]], src_mask: Tensor, self_kv: Tensor):
        self.cross_kv = cross_kv  # per layer, 2 x (n, H, S, Dh): one per sentence
        self.src_mask = src_mask  # (n, 1, 1, S), True where the source is not padding
        self.beams = 1  # decoder rows per sentence: B = n x beams
        self.self_kv = self_kv  # (L, 2, B, H, Tmax, Dh), contiguous: a view of the front of `buffer`
        self.buffer = self_kv.view(-1)  # the flat memory self_kv lives in
        self.spare: Tensor | None = None  # the other flat buffer: where the next reorder or select goes
        self.length = 0  # target positions written so far
        self.layers = layer_views(self_kv)

    def append_self_kv(self, layer: int, q: Tensor, k: Tensor, v: Tensor):
        """Store this step's (B, H, P, Dh) keys/values (P = 1 but for a forced prefix); return
        attention inputs over every position so far. One position needs no mask (a step only ever
        sees the past); P positions see the cache and, causally, each other."""
        t, P, (keys, values) = self.length, q.size(2), self.layers[layer]
        keys.narrow(2, t, P).copy_(k)
        values.narrow(2, t, P).copy_(v)
        keys, values = keys.narrow(2, 0, t + P), values.narrow(2, 0, t + P)
        if P == 1 or t == 0:  # nothing before the new positions: plain causal attention
            return q, keys, values, None, P > 1
        seen = torch.ones(P, t + P, dtype=torch.bool, device=q.device).tril(t)  # (P, t+P)
        return q, keys, values, seen, False

    def reorder(self, beam_idx: Tensor) -> None:
        """Row i continues the hypothesis of row beam_idx[i]: move the self-attention K/V only.
        When every row that gives its K/V away keeps its own (as beam search arranges its rows, see
        `parent_slots`), only the rows that change are copied, in place; else all rows move."""
        moved = (beam_idx != torch.arange(len(beam_idx), device=beam_idx.device)).nonzero()[:, 0]
        if not len(moved):
            return
        donors = beam_idx[moved]
        if not bool((beam_idx[donors] == donors).all()):
            self._gather_self_kv(beam_idx)
            return
        filled = self.self_kv[..., : self.length, :]  # (L, 2, B, H, t, Dh)
        filled.index_copy_(2, moved, filled.index_select(2, donors))

    def select(self, rows: Tensor, beams: int = 1) -> None:
        """Keep only `rows`, in this order, repeats allowed: finished sentences leave the batch
        (both caches shrink), and beam search's first step turns one row per sentence into one per
        beam. Each run of `beams` rows belongs to one sentence, whose cross K/V move once."""
        sentences = (rows // self.beams)[::beams]  # (n,) the sentence of each run of rows
        self.cross_kv = [tuple(x.index_select(0, sentences) for x in kv) for kv in self.cross_kv]
        self.src_mask = self.src_mask.index_select(0, sentences)
        self.beams = beams
        self._gather_self_kv(rows)

    def _gather_self_kv(self, rows: Tensor) -> None:
        """The self-attention K/V of `rows` into the spare buffer, which becomes the cache's, and the
        cache's buffer the spare: two buffers serve a whole search, whatever the row count does.
        Only the filled prefix moves; the rest is written before it is ever read. (A fresh buffer per
        call would be a fresh mapping of tens of megabytes at beam 5, whose page faults cost more
        than the copy; and beam search selects at almost every step, as sentences finish.)"""
        L, two, _, H, T, Dh = self.self_kv.shape
        shape = (L, two, len(rows), H, T, Dh)
        size = math.prod(shape)
        if self.spare is None or self.spare.numel() < size:
            self.spare = self.buffer.new_empty(size)
        target = self.spare[:size].view(shape)
        t = self.length
        torch.index_select(self.self_kv[..., :t, :], 2, rows, out=target[..., :t, :])
        self.self_kv, self.buffer, self.spare = target, self.spare, self.buffer
        self.layers = layer_views(target)


def layer_views(self_kv: Tensor) -> list[tuple[Tensor, Tensor]]:
    """Each layer's key and value buffers (B, H, Tmax, Dh), as views made once per buffer rather
    than indexed out of (L, 2, ...) at every step: a step then costs a few operator calls fewer."""
    return [(layer[0], layer[1]) for layer in self_kv]


class PrefixCache:
    """The uncached path: keep the tokens so far and recompute the whole decoder every step, cross
    K/V projections included (what decoders without a cache, like JoeyNMT's, do)."""

    def __init__(self, memory: Tensor, src_mask: Tensor):
        self.memory, self.src_mask = memory, src_mask  # (B, S, D), (B, 1, 1, S)
        self.tokens: list[Tensor] = []  # one (B,) tensor per step

    def extend(self, tokens: Tensor) -> Tensor:
        """Append this step's (B,) tokens; return the whole prefix (B, t+1) to run again."""
        self.tokens.append(tokens)
        return torch.stack(self.tokens, dim=1)

    def reorder(self, beam_idx: Tensor) -> None:
        self.tokens = [t.index_select(0, beam_idx) for t in self.tokens]

    def select(self, rows: Tensor, beams: int = 1) -> None:
        self.memory = self.memory.index_select(0, rows)
        self.src_mask = self.src_mask.index_select(0, rows)
        self.reorder(rows)


State = Tensor | tuple[Tensor, Tensor]  # a GRU's h, or an LSTM's (h, c): each (L, B, D)


class RNNCache:
    """The RNN's decoding state. What the Transformer caches as cross-attention K/V, the RNN keeps
    as the encoder states h_j and their attention projection (U h_j, or W h_j), computed once per
    sentence; the recurrent state (and Luong's attentional state) is what each step advances and
    what beam search reorders."""

    def __init__(self, memory: Tensor, keys: Tensor, src_mask: Tensor, state: State, feed: Tensor | None):
        self.memory, self.keys = memory, keys  # (B, S, D) each
        self.src_mask = src_mask  # (B, S), True where the source is not padding
        self.state = state  # (L, B, D), or (h, c) for an LSTM
        self.feed = feed  # (B, D): Luong's attentional state of the previous step; None for Bahdanau

    def reorder(self, beam_idx: Tensor) -> None:
        """Row i continues the hypothesis of row beam_idx[i]: only the recurrent state moves."""
        self.state = map_state(self.state, lambda x: x.index_select(1, beam_idx))
        if self.feed is not None:
            self.feed = self.feed.index_select(0, beam_idx)

    def select(self, rows: Tensor, beams: int = 1) -> None:
        """Keep only `rows`, in this order, repeats allowed (both kinds of state shrink or grow;
        each row keeps its own copy of the per-sentence state, whatever `beams` says)."""
        self.memory, self.keys = self.memory.index_select(0, rows), self.keys.index_select(0, rows)
        self.src_mask = self.src_mask.index_select(0, rows)
        self.reorder(rows)


def map_state(state: State, fn) -> State:
    """Apply `fn` to a GRU's state or to both halves of an LSTM's."""
    return tuple(fn(x) for x in state) if isinstance(state, tuple) else fn(state)
