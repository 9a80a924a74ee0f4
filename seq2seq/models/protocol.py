"""The one protocol every architecture implements, and the only thing decoding, scoring, training,
checkpoints and the attention views see: none of them ever asks which architecture it holds.

An architecture subclasses `Seq2SeqModel` and writes five methods, its own part:

    memory, src_mask = model.encode(src, record)          the encoder, once per batch
    out = model.decode_states(tgt_in, memory, src_mask)   every target position's output state
                                                          (teacher forcing), before the output layer
    logits = model.logits(out)                            the output layer: (..., D) -> (..., V)
    cache = model.start_cache(memory, src_mask, max_len)  per-sentence work done once: the
                                                          Transformer's cross-attention K/V, the
                                                          RNN's attention keys (U h_j or W h_j)
    logits = model.step(tokens, cache, record)            one position per row; the cache advances

and gets the rest, written once here: `decode_all` (every position's logits, or those that
`keep` selects), `forward` (training), `attention` (the weights of a teacher-forced pass),
`init_cache` / `decode_step` (what search calls; `use_cache=False` gives the uncached path, which
re-runs `decode_all` over the whole prefix every step), `steps` / `decode_steps` (several positions
at once, a forced prefix: `step` after `step` unless an architecture does better). Its cache
implements `Cache`: `reorder` (rows follow their beam parents) and `select` (finished sentences
leave, beams fill).
`tests/test_protocol.py` checks every registered architecture against it.

Shapes: B rows, S source length, T target length, V vocabulary, L layers, H heads.
"""

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Protocol

import torch
from torch import Tensor, nn

from seq2seq.models.cache import PrefixCache


class Cache(Protocol):
    def reorder(self, beam_idx: Tensor) -> None:
        """Row i continues the hypothesis of row beam_idx[i]; per-sentence state does not move."""

    def select(self, rows: Tensor, beams: int = 1) -> None:
        """Keep only `rows`, in this order, repeats allowed (everything moves). `rows` comes in
        runs of `beams` rows of one sentence each, which is what lets a cache hold per-sentence
        state once per sentence rather than once per row; until the next select, a reorder only
        moves rows within their sentence's run."""


class ModelConfig(Protocol):
    """What every architecture's config has (each is a dataclass; `asdict` is its JSON)."""

    arch: str  # the registry's name for the architecture, written into config.json
    vocab_size: int
    max_positions: int  # the longest source or target, in pieces, EOS/BOS included


@dataclass
class AttentionRecord:
    """Lists that receive attention weights when a caller asks for them, passed explicitly, so no
    weights are kept on the normal path. Each entry is one layer's (B, H, rows, cols); a step of
    decoding (`step` with a record) appends rows of one query each."""

    encoder: list[Tensor] = field(default_factory=list)  # self-attention over the source
    decoder: list[Tensor] = field(default_factory=list)  # masked self-attention over the target
    cross: list[Tensor] = field(default_factory=list)  # target queries over the source


class Seq2SeqModel(nn.Module, ABC):
    """An encoder-decoder: what `build_model` returns and what every consumer takes."""

    cfg: ModelConfig
    encoder_modules: tuple[str, ...] = ("encoder",)  # the submodules that make the encoder (freezing)
    embedding_modules: tuple[str, ...] = ("embed",)  # the embedding tables (freezing; None: absent)
    embed: nn.Embedding  # the joint source/target embedding; the output layer unless `generator`
    generator: nn.Module | None  # None: the embedding matrix, tied; int8 decoding sets its own

    @abstractmethod
    def encode(self, src: Tensor, record: AttentionRecord | None = None) -> tuple[Tensor, Tensor]:
        """(B, S) ids -> memory (B, S, D) and a mask that is True on real (non-padding) positions."""

    @abstractmethod
    def decode_states(
        self, tgt_in: Tensor, memory: Tensor, src_mask: Tensor, record: AttentionRecord | None = None
    ) -> Tensor:
        """Every target position at once (causally): (B, T) shifted target -> (B, T, D) output
        states, what `logits` takes."""

    @abstractmethod
    def logits(self, out: Tensor) -> Tensor:
        """The output layer: (..., D) output states -> (..., V) logits."""

    @abstractmethod
    def start_cache(self, memory: Tensor, src_mask: Tensor, max_len: int) -> Cache:
        """The cached decoding state of a batch, for outputs of up to `max_len` positions."""

    @abstractmethod
    def step(self, tokens: Tensor, cache: Cache, record: AttentionRecord | None = None) -> Tensor:
        """(B,) previous tokens -> (B, V) logits of the next; the cache advances; `record`
        receives this step's weights."""

    def decode_all(
        self,
        tgt_in: Tensor,
        memory: Tensor,
        src_mask: Tensor,
        record: AttentionRecord | None = None,
        keep: Tensor | None = None,
    ) -> Tensor:
        """(B, T) shifted target -> (B, T, V) logits; with `keep`, (B, T) bool, the logits of those
        positions alone, (N, V) in row order, so the output layer never sees the others."""
        out = self.decode_states(tgt_in, memory, src_mask, record)  # (B, T, D)
        return self.logits(out if keep is None else out[keep])  # (B, T, D) or (N, D) -> (..., V)

    def forward(
        self, src: Tensor, tgt_in: Tensor, keep: Tensor | None = None, record: AttentionRecord | None = None
    ) -> Tensor:
        """Teacher forcing: (B, S) source and (B, T) shifted target -> (B, T, V) logits, or (N, V)
        for the `keep` positions alone: training keeps its real target tokens, so that the output
        projection, the step's largest matrix product, and the loss skip the padding. `record`
        receives the decoder's weights, differentiable (guided alignment trains on them)."""
        memory, src_mask = self.encode(src)
        return self.decode_all(tgt_in, memory, src_mask, record, keep)

    def attention(self, src: Tensor, tgt_in: Tensor) -> dict[str, Tensor]:
        """Teacher forcing that returns the weights by kind ("encoder", "decoder", "cross"; an
        architecture has a subset), each (B, L, H, rows, cols)."""
        record = AttentionRecord()
        memory, src_mask = self.encode(src, record)
        self.decode_states(tgt_in, memory, src_mask, record)  # the weights alone: no output layer
        return {kind: torch.stack(layers, dim=1) for kind, layers in vars(record).items() if layers}

    def set_dropout(self, p: float) -> None:
        """Every dropout of the model to `p`, in place: training raises it late in a long run
        (TrainConfig.late_dropout). An architecture's dropout lives in `nn.Dropout` modules and in
        its recurrent layers' own dropout between layers, so no architecture writes this."""
        for module in self.modules():
            if isinstance(module, nn.Dropout):
                module.p = p
            elif isinstance(module, nn.RNNBase) and module.num_layers > 1:
                module.dropout = p

    def init_cache(self, memory: Tensor, src_mask: Tensor, max_len: int, use_cache: bool = True) -> Cache:
        """The decoding state search starts from: cached, or the prefix alone (`use_cache=False`)."""
        return self.start_cache(memory, src_mask, max_len) if use_cache else PrefixCache(memory, src_mask)

    def decode_step(self, tokens: Tensor, cache: Cache, record: AttentionRecord | None = None) -> Tensor:
        """The next position for each row: (B,) last tokens -> (B, V) logits."""
        if isinstance(cache, PrefixCache):  # uncached: the whole prefix again, every step
            return self.decode_all(cache.extend(tokens), cache.memory, cache.src_mask)[:, -1]
        return self.step(tokens, cache, record)

    def steps(self, tokens: Tensor, cache: Cache) -> Tensor:
        """P positions for each row at once, as P `step`s would run them: (B, P) tokens -> (B, P, V)
        logits; the cache advances P positions. What a forced prefix fills the cache with; an
        architecture that can run them in one pass (the Transformer) overrides this."""
        return torch.stack([self.step(tokens[:, p], cache) for p in range(tokens.size(1))], dim=1)

    def decode_steps(self, tokens: Tensor, cache: Cache) -> Tensor:
        """`decode_step` for P positions at once: (B, P) tokens -> (B, P, V) logits."""
        if isinstance(cache, PrefixCache):
            for p in range(tokens.size(1)):
                prefix = cache.extend(tokens[:, p])
            return self.decode_all(prefix, cache.memory, cache.src_mask)[:, -tokens.size(1) :]
        return self.steps(tokens, cache)
