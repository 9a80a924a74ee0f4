"""The one protocol that every architecture implements, and that decoding, training, checkpoints
and the attention views rely on: none of them ever asks which architecture it holds.

    memory, src_mask = model.encode(src)                 the encoder, once per batch
    cache = model.init_cache(memory, src_mask, max_len)  per-sentence work done once: the
                                                         Transformer's cross-attention K/V, the
                                                         RNN's attention keys (U h_j or W h_j)
    logits = model.decode_step(tokens, cache)            one position per row; the cache advances
    cache.reorder(beam_idx)                              rows follow their beam parents
    cache.select(rows)                                   finished sentences leave; beams fill
    logits = model(src, tgt_in)                          teacher forcing, for training
    weights = model.attention(src, tgt_in)               teacher forcing that returns the weights
    model.cfg.max_positions                              the longest source or target, in pieces
    model.embed, model.generator                         the joint embedding, and the output layer
                                                         (None: the embedding matrix, tied); int8
                                                         decoding (`quantize.py`) sets its own

`init_cache(..., use_cache=False)` gives the uncached path (`cache.PrefixCache`): every step
re-runs the decoder over the whole prefix, for the tests and benchmarks that check the cache.

Shapes: B rows, S source length, T target length, V vocabulary, L layers, H heads.
"""

from dataclasses import dataclass, field
from typing import Protocol

from torch import Tensor


class Cache(Protocol):
    def reorder(self, beam_idx: Tensor) -> None:
        """Row i continues the hypothesis of row beam_idx[i]; per-sentence state does not move."""

    def select(self, rows: Tensor) -> None:
        """Keep only `rows`, in this order, repeats allowed (everything moves)."""


class Seq2SeqModel(Protocol):
    cfg: object  # a dataclass with at least `vocab_size` and `max_positions`

    def encode(self, src: Tensor) -> tuple[Tensor, Tensor]:
        """(B, S) ids -> memory (B, S, D) and a mask that is True on real (non-padding) positions."""

    def init_cache(self, memory: Tensor, src_mask: Tensor, max_len: int, use_cache: bool = True) -> Cache:
        """The decoding state of a batch, for outputs of up to `max_len` positions."""

    def decode_step(self, tokens: Tensor, cache: Cache, record: "AttentionRecord | None" = None) -> Tensor:
        """(B,) previous tokens -> (B, V) logits of the next; `record` receives this step's weights."""

    def __call__(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        """Teacher forcing: (B, S) source and (B, T) shifted target -> (B, T, V) logits."""

    def attention(self, src: Tensor, tgt_in: Tensor) -> dict[str, Tensor]:
        """Teacher forcing that returns the weights by kind ("encoder", "decoder", "cross"; each
        architecture has a subset), each (B, L, H, rows, cols)."""


@dataclass
class AttentionRecord:
    """Lists that receive attention weights (B, H, rows, cols) when a caller asks for them, passed
    explicitly, so no weights are kept on the normal path. The Transformer appends one entry per
    layer, the RNN one per step."""

    encoder: list[Tensor] = field(default_factory=list)  # self-attention over the source
    decoder: list[Tensor] = field(default_factory=list)  # masked self-attention over the target
    cross: list[Tensor] = field(default_factory=list)  # target queries over the source
