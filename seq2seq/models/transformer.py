"""The encoder-decoder Transformer (Vaswani et al. 2017), built around one Attention module used
three ways; one of the two architectures behind the protocol in `protocol.py`.

Shapes: B batch (times beams while decoding), S source length, T target length, D model dim,
H heads, Dh head dim, V vocabulary, L decoder layers.
"""

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from seq2seq.data.special import PAD_ID
from seq2seq.models.cache import DecoderCache
from seq2seq.models.dropout import Dropout, attention_kernels
from seq2seq.models.feed_forward import feed_forward
from seq2seq.models.positions import init_weights, sinusoids
from seq2seq.models.protocol import AttentionRecord, Seq2SeqModel
from seq2seq.models.transformer_config import ADDED_SINCE, OPTIONS, PRESETS, TransformerConfig

__all__ = ["ADDED_SINCE", "OPTIONS", "PRESETS", "Transformer", "TransformerConfig"]


class Attention(nn.Module):
    """Multi-head attention on SDPA. Self-attention fuses Q,K,V into one projection; cross-attention
    projects Q from the decoder and K,V (fused) from the encoder memory, which `project_kv` does
    once per sentence while decoding."""

    def __init__(self, cfg: TransformerConfig, cross: bool):
        super().__init__()
        self.n_heads, self.drop = cfg.n_heads, Dropout(cfg.dropout)  # on the weights; set_dropout reaches it
        if cross:
            self.q = nn.Linear(cfg.d_model, cfg.d_model)
            self.kv = nn.Linear(cfg.d_model, 2 * cfg.d_model)
        else:
            self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.out = nn.Linear(cfg.d_model, cfg.d_model)

    def split_heads(self, x: Tensor) -> Tensor:
        B, T, D = x.shape  # -> (B, H, T, Dh)
        return x.view(B, T, self.n_heads, D // self.n_heads).transpose(1, 2)

    def project_qkv(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        return tuple(self.split_heads(t) for t in self.qkv(x).chunk(3, dim=-1))

    def project_kv(self, memory: Tensor) -> tuple[Tensor, Tensor]:
        """Cross-attention K and V from the encoder output: (B, S, D) -> 2 x (B, H, S, Dh)."""
        return tuple(self.split_heads(t) for t in self.kv(memory).chunk(2, dim=-1))

    def attend(
        self,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        mask: Tensor | None = None,
        causal: bool = False,
        record: list[Tensor] | None = None,
    ) -> Tensor:
        """(B, H, T, Dh) queries over (B, H, S, Dh) keys/values -> (B, T, D); mask True = seen.
        `record`, when given, receives the weights (B, H, T, S) this call used, before dropout."""
        if record is not None or (q.size(2) == 1 and not self.training):
            # A decoding step has one query per row; on CPU two small matmuls beat SDPA's kernel
            # setup, and the result is the same attention. SDPA cannot return its weights, so a
            # caller who asks for them gets this path too (in training, with its dropout).
            w = self.weights(q, k, mask, causal)
            if record is not None:
                record.append(w)
            y = self.drop(w) @ v
        elif self.training and self.drop.p > 0 and q.device.type == "cpu":
            # what SDPA computes with dropout on a CPU (its math path), but with the cheap mask
            y = self.drop(self.weights(q, k, mask, causal)) @ v
        else:
            p = self.drop.p if self.training else 0.0
            with attention_kernels(q.device, p):  # never cuDNN's with dropout: a graph per p
                y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p, is_causal=causal)
        B, H, T, Dh = y.shape
        return self.out(y.transpose(1, 2).reshape(B, T, H * Dh))

    def attend_beams(
        self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor, beams: int, record: list[Tensor] | None = None
    ) -> Tensor:
        """A decoding step whose rows come in runs of `beams` per sentence: q (n*beams, H, 1, Dh)
        over one sentence's k, v (n, H, S, Dh), held once -> (n*beams, 1, D). A sentence's beams
        are one (beams x S) product with its keys instead of `beams` vector products with copies."""
        rows, H, _, Dh = q.shape
        q = q.view(rows // beams, beams, H, Dh).transpose(1, 2)  # (n, H, beams, Dh)
        w = self.weights(q, k, mask)  # (n, H, beams, S)
        if record is not None:  # one query per row, as a step records it
            record.append(w.transpose(1, 2).reshape(rows, H, 1, -1))
        y = (w @ v).transpose(1, 2).reshape(rows, 1, H * Dh)  # (n, beams, H, Dh) -> (n*beams, 1, D)
        return self.out(y)

    def weights(self, q: Tensor, k: Tensor, mask: Tensor | None, causal: bool = False) -> Tensor:
        """The attention distribution SDPA computes but does not return: (B, H, T, S); masked
        positions get exactly zero."""
        scores = (q * q.size(-1) ** -0.5) @ k.transpose(-2, -1)
        if causal:  # query t sees keys up to its own position (the last T of the S keys)
            T, S = scores.shape[-2:]
            future = torch.ones(T, S, dtype=torch.bool, device=q.device).triu(S - T + 1)
            scores = scores.masked_fill(future, float("-inf"))
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        return scores.softmax(dim=-1)


class Residual(nn.Module):
    """Residual connection with LayerNorm before (pre-LN) or after (post-LN) the sub-layer."""

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.norm = nn.LayerNorm(cfg.d_model)
        self.drop = Dropout(cfg.dropout)
        self.norm_first = cfg.norm_first

    def forward(self, x: Tensor, sublayer) -> Tensor:
        if self.norm_first:
            return x + self.drop(sublayer(self.norm(x)))
        return self.norm(x + self.drop(sublayer(x)))


class EncoderLayer(nn.Module):
    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.self_attn = Attention(cfg, cross=False)
        self.ff = feed_forward(cfg.ffn, cfg.d_model, cfg.d_ff, cfg.dropout)
        self.res_attn, self.res_ff = Residual(cfg), Residual(cfg)

    def forward(self, x: Tensor, src_mask: Tensor, record: AttentionRecord | None = None) -> Tensor:
        weights = None if record is None else record.encoder
        x = self.res_attn(
            x, lambda h: self.self_attn.attend(*self.self_attn.project_qkv(h), src_mask, record=weights)
        )
        return self.res_ff(x, self.ff)


class DecoderLayer(nn.Module):
    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.self_attn, self.cross_attn = Attention(cfg, cross=False), Attention(cfg, cross=True)
        self.ff = feed_forward(cfg.ffn, cfg.d_model, cfg.d_ff, cfg.dropout)
        self.res_self, self.res_cross, self.res_ff = Residual(cfg), Residual(cfg), Residual(cfg)

    def forward(
        self,
        x: Tensor,
        self_kv,
        cross_kv: tuple[Tensor, Tensor],
        src_mask: Tensor,
        record: AttentionRecord | None = None,
        beams: int = 1,
    ) -> Tensor:
        """One layer for the new target positions `x` (B, T, D).

        `self_kv(h)` returns (q, k, v, mask, causal): the positions' queries and the keys/values
        they may see, either just these positions (teacher forcing, causal) or the cache (decoding).
        `cross_kv` holds one entry per sentence, each serving `beams` consecutive rows of `x`.
        """
        self_w, cross_w = (None, None) if record is None else (record.decoder, record.cross)
        x = self.res_self(x, lambda h: self.self_attn.attend(*self_kv(h), record=self_w))

        def cross(h: Tensor) -> Tensor:
            q = self.cross_attn.split_heads(self.cross_attn.q(h))
            if beams > 1:
                return self.cross_attn.attend_beams(q, *cross_kv, src_mask, beams, record=cross_w)
            return self.cross_attn.attend(q, *cross_kv, src_mask, record=cross_w)

        x = self.res_cross(x, cross)
        return self.res_ff(x, self.ff)


class Transformer(Seq2SeqModel):
    """encode() once, then start_cache() + step() per position; decode_states() for teacher forcing."""

    encoder_modules = ("encoder", "encoder_norm", "source_embed")
    embedding_modules = ("embed", "source_embed")

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model, padding_idx=PAD_ID)
        separate = cfg.source_vocab_size is not None  # the source reads a table of its own
        self.source_embed = nn.Embedding(cfg.source_vocab_size, cfg.d_model, PAD_ID) if separate else None
        self.register_buffer("positions", sinusoids(cfg.max_positions, cfg.d_model), persistent=False)
        self.drop = Dropout(cfg.dropout)
        self.encoder = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.n_encoder_layers))
        self.decoder = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.n_decoder_layers))
        # Pre-LN leaves the residual stream unnormalised, so each stack ends with a LayerNorm.
        self.encoder_norm = nn.LayerNorm(cfg.d_model) if cfg.norm_first else nn.Identity()
        self.decoder_norm = nn.LayerNorm(cfg.d_model) if cfg.norm_first else nn.Identity()
        self.generator = None if cfg.tie_embeddings else nn.Linear(cfg.d_model, cfg.vocab_size)
        self.apply(init_weights)

    def embed_tokens(self, tokens: Tensor, offset: int = 0, table: nn.Embedding | None = None) -> Tensor:
        """(B, T) ids -> (B, T, D) through `table` (default the joint one); scaled by sqrt(D) (unless
        the config says not) so embeddings and positions are comparable."""
        T = tokens.size(1)
        if offset + T > self.cfg.max_positions:
            raise ValueError(f"sequence of {offset + T} exceeds max_positions {self.cfg.max_positions}")
        x = (table or self.embed)(tokens)
        scale = math.sqrt(self.cfg.d_model) if self.cfg.scale_embeddings else 1.0
        return self.drop(x * scale + self.positions[offset : offset + T])

    def logits(self, h: Tensor) -> Tensor:
        """(..., D) -> (..., V) through the tied embedding matrix (or the untied generator)."""
        h = self.decoder_norm(h)
        return F.linear(h, self.embed.weight) if self.generator is None else self.generator(h)

    def encode(self, src: Tensor, record: AttentionRecord | None = None) -> tuple[Tensor, Tensor]:
        """(B, S) source ids -> memory (B, S, D), src_mask (B, 1, 1, S) True where not padding."""
        src_mask = (src != PAD_ID)[:, None, None, :]
        x = self.embed_tokens(src, table=self.source_embed)
        for layer in self.encoder:
            x = layer(x, src_mask, record)
        return self.encoder_norm(x), src_mask

    def decode_states(
        self, tgt_in: Tensor, memory: Tensor, src_mask: Tensor, record: AttentionRecord | None = None
    ) -> Tensor:
        """Every target position at once under a causal mask: (B, T) -> (B, T, D), before the
        final norm (`logits` applies it)."""
        x = self.embed_tokens(tgt_in)
        for layer in self.decoder:
            cross_kv = layer.cross_attn.project_kv(memory)
            x = layer(
                x,
                lambda h, a=layer.self_attn: (*a.project_qkv(h), None, True),
                cross_kv,
                src_mask,
                record,
            )
        return x

    def start_cache(self, memory: Tensor, src_mask: Tensor, max_len: int) -> DecoderCache:
        """Every layer's cross-attention K/V projected here, once per sentence, and empty
        self-attention buffers of `max_len` positions."""
        # contiguous, so every step's attention reads them without a copy
        cross_kv = [
            tuple(x.contiguous() for x in layer.cross_attn.project_kv(memory)) for layer in self.decoder
        ]
        B, _S, D = memory.shape
        shape = (len(self.decoder), 2, B, self.cfg.n_heads, max_len, D // self.cfg.n_heads)
        dtype = cross_kv[0][0].dtype  # the compute dtype: bf16 under autocast, not the fp32 of `memory`
        return DecoderCache(cross_kv, src_mask, memory.new_zeros(shape, dtype=dtype))

    def step(self, tokens: Tensor, cache: DecoderCache, record: AttentionRecord | None = None) -> Tensor:
        """The next position for each row: (B,) last tokens -> (B, V) logits; the cache advances.
        `record` receives this step's weights, one query row each."""
        return self._advance(tokens[:, None], cache, record)[:, 0]

    def steps(self, tokens: Tensor, cache: DecoderCache) -> Tensor:
        """P positions in one pass, each seeing the cache and the positions before it: (B, P) ->
        (B, P, V). One row per sentence (a prefix is forced before the beams spread)."""
        if cache.beams > 1:  # a beam's step reads its sentence's keys once per run of rows
            return super().steps(tokens, cache)
        return self._advance(tokens, cache)

    def _advance(self, tokens: Tensor, cache: DecoderCache, record: AttentionRecord | None = None) -> Tensor:
        x = self.embed_tokens(tokens, offset=cache.length)  # (B, P, D)
        for i, layer in enumerate(self.decoder):
            attn = layer.self_attn
            self_kv = lambda h, i=i, a=attn: cache.append_self_kv(i, *a.project_qkv(h))  # noqa: E731
            x = layer(x, self_kv, cache.cross_kv[i], cache.src_mask, record, cache.beams)
        cache.length += tokens.size(1)
        return self.logits(x)  # (B, P, V)
