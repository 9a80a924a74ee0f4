"""The RNN encoder-decoder where attention began, the second architecture behind the protocol in
`protocol.py`: Bahdanau (additive) or Luong (multiplicative) attention, GRU or LSTM cells.

At output step t, with encoder states h_j and decoder state s:
    e_tj = score(s, h_j);  alpha_tj = softmax_j(e_tj);  c_t = sum_j alpha_tj h_j
- Bahdanau et al. 2015: a bidirectional encoder; e_tj = v^T tanh(W s_(t-1) + U h_j) from the
  previous state; s_t = f(s_(t-1), [y_(t-1); c_t]); output from g(s_t, y_(t-1), c_t).
- Luong et al. 2015: a unidirectional encoder; s_t = f(s_(t-1), [y_(t-1); h~_(t-1)]) ("input
  feeding"); e_tj = s_t . h_j ("dot") or s_t^T W h_j ("general") from the current state;
  h~_t = tanh(W_c [c_t; s_t]) feeds the output layer and the next step.

Shapes: B batch (times beams while decoding), S source length, T target length, D model dim,
L recurrent layers, V vocabulary.
"""

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from seq2seq.data.special import PAD_ID
from seq2seq.models.cache import RNNCache, State, map_state
from seq2seq.models.dropout import Dropout
from seq2seq.models.protocol import AttentionRecord, Seq2SeqModel
from seq2seq.models.rnn_config import OPTIONS, PRESETS, RNNConfig

__all__ = ["OPTIONS", "PRESETS", "RNN", "RNNConfig"]


class AdditiveAttention(nn.Module):
    """Bahdanau: e_tj = v^T tanh(W s + U h_j)."""

    def __init__(self, d: int):
        super().__init__()
        self.W, self.U = nn.Linear(d, d, bias=False), nn.Linear(d, d)
        self.v = nn.Linear(d, 1, bias=False)

    def keys(self, memory: Tensor) -> Tensor:
        return self.U(memory)  # U h_j, once per sentence: (B, S, D)

    def scores(self, s: Tensor, keys: Tensor) -> Tensor:
        return self.v(torch.tanh(self.W(s)[:, None] + keys)).squeeze(-1)  # (B, S)


class MultiplicativeAttention(nn.Module):
    """Luong: e_tj = s . h_j ("dot") or s^T W h_j = s . (W h_j) ("general")."""

    def __init__(self, d: int, score: str):
        super().__init__()
        self.W = nn.Linear(d, d, bias=False) if score == "general" else None

    def keys(self, memory: Tensor) -> Tensor:
        return memory if self.W is None else self.W(memory)  # h_j or W h_j, once per sentence

    def scores(self, s: Tensor, keys: Tensor) -> Tensor:
        return (keys @ s[:, :, None]).squeeze(-1)  # (B, S)


def align(scores: Tensor, memory: Tensor, src_mask: Tensor) -> tuple[Tensor, Tensor]:
    """alpha_tj = softmax_j(e_tj) over the real source positions (padding gets exactly zero), and
    the context c_t = sum_j alpha_tj h_j: (B, S) scores -> (B, D) context, (B, S) weights."""
    alpha = scores.masked_fill(~src_mask, float("-inf")).softmax(-1)
    return (alpha[:, None] @ memory)[:, 0], alpha


class RNN(Seq2SeqModel):
    """encode() once, then start_cache() + step() per position; decode_states() for teacher forcing."""

    def __init__(self, cfg: RNNConfig):
        super().__init__()
        self.cfg, D, L = cfg, cfg.d_model, cfg.n_layers
        self.bahdanau = cfg.attention == "bahdanau"
        cell = nn.GRU if cfg.cell == "gru" else nn.LSTM
        between = cfg.dropout if L > 1 else 0.0
        self.embed = nn.Embedding(cfg.vocab_size, D, padding_idx=PAD_ID)  # source, target, output
        self.drop = Dropout(cfg.dropout)
        # Bahdanau's encoder reads both ways, D/2 per direction, so each h_j has D dimensions.
        half = D // 2 if self.bahdanau else D
        self.encoder = cell(D, half, L, batch_first=True, bidirectional=self.bahdanau, dropout=between)
        self.decoder = cell(2 * D, D, L, batch_first=True, dropout=between)  # [y_(t-1); c_t or h~]
        if self.bahdanau:
            self.attn = AdditiveAttention(D)
            self.init_state = nn.Linear(half, L * D)  # s_0 = tanh(W <-h_1), one per layer
            self.output = nn.Linear(3 * D, D)  # g(s_t, y_(t-1), c_t)
        else:
            self.attn = MultiplicativeAttention(D, cfg.score)
            self.output = nn.Linear(2 * D, D, bias=False)  # h~_t = tanh(W_c [c_t; s_t])
        # The output layer is the embedding matrix (tied); `quantize` sets an int8 copy here.
        self.generator: nn.Module | None = None
        # As in the Transformer: N(0, 1/D) so the tied output layer starts with small logits
        # (PyTorch's N(0, 1) makes the first loss about twice the uniform one), and inputs
        # scaled back up by sqrt(D) (`embed_tokens`) so the recurrence reads unit-variance vectors.
        nn.init.normal_(self.embed.weight, std=D**-0.5)
        with torch.no_grad():
            self.embed.weight[PAD_ID].zero_()

    def embed_tokens(self, tokens: Tensor) -> Tensor:
        """(...) ids -> (..., D), scaled by sqrt(D) since the matrix is initialised for the output."""
        return self.drop(self.embed(tokens) * math.sqrt(self.cfg.d_model))

    def encode(self, src: Tensor, record: AttentionRecord | None = None) -> tuple[Tensor, Tensor]:
        """(B, S) ids -> memory h_j (B, S, D), src_mask (B, S). Packed, so padding never enters
        the recurrence (in either direction) and padded rows equal unpadded ones. A recurrent
        encoder has no attention to record."""
        src_mask = src != PAD_ID
        lengths = src_mask.sum(1).cpu()
        packed = nn.utils.rnn.pack_padded_sequence(
            self.embed_tokens(src), lengths, batch_first=True, enforce_sorted=False
        )
        out, _ = fp32(self.encoder, packed)
        memory, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=src.size(1))
        return memory, src_mask

    def decode_states(
        self, tgt_in: Tensor, memory: Tensor, src_mask: Tensor, record: AttentionRecord | None = None
    ) -> Tensor:
        """Every target position, one step after another (the recurrence is sequential), so that
        `decode_all` projects them all at once: (B, T) -> (B, T, D). The same step as decoding;
        `record` receives the alignments alpha_tj as one layer of one head (B, 1, T, S)."""
        cache = self.start_cache(memory, src_mask, tgt_in.size(1))
        steps = AttentionRecord() if record is not None else None
        outs = [self._step(tgt_in[:, t], cache, steps) for t in range(tgt_in.size(1))]
        if record is not None:
            record.cross.append(torch.cat(steps.cross, dim=2))  # T steps of (B, 1, 1, S)
        return torch.stack(outs, 1)  # T of (B, D) -> (B, T, D)

    def logits(self, out: Tensor) -> Tensor:
        """(..., D) -> (..., V) through the embedding matrix (tied), or its int8 copy."""
        out = self.drop(out)
        return F.linear(out, self.embed.weight) if self.generator is None else self.generator(out)

    def start_cache(self, memory: Tensor, src_mask: Tensor, max_len: int) -> RNNCache:
        """The attention keys (U h_j or W h_j) once per sentence, and the decoder's first state."""
        B, L, D = memory.size(0), self.cfg.n_layers, self.cfg.d_model
        if self.bahdanau:  # <-h_1: the backward state at the first position has read the sentence
            h = torch.tanh(self.init_state(memory[:, 0, D // 2 :])).view(B, L, D).transpose(0, 1)
            feed = None
        else:  # Luong starts from the encoder's last state (here its top layer's, for every layer)
            last = src_mask.sum(1) - 1
            h = memory[torch.arange(B, device=memory.device), last].expand(L, B, D)
            feed = memory.new_zeros(B, D)
        state: State = (h.contiguous(), torch.zeros_like(h)) if self.cfg.cell == "lstm" else h.contiguous()
        return RNNCache(memory, self.attn.keys(memory), src_mask, state, feed)

    def step(self, tokens: Tensor, cache: RNNCache, record: AttentionRecord | None = None) -> Tensor:
        """The next position for each row: (B,) last tokens -> (B, V) logits; the cache advances.
        `record` receives this step's alignment weights (B, 1, 1, S)."""
        return self.logits(self._step(tokens, cache, record))

    def _step(self, tokens: Tensor, cache: RNNCache, record: AttentionRecord | None) -> Tensor:
        """One position: (B,) previous tokens -> (B, D) output state; the cache advances."""
        y = self.embed_tokens(tokens)  # (B, D)
        if self.bahdanau:
            context, alpha = self._align(top(cache.state), cache)  # from s_(t-1)
            s = self._advance(torch.cat([y, context], -1), cache)
            out = torch.tanh(self.output(torch.cat([s, y, context], -1)))
        else:
            s = self._advance(torch.cat([y, cache.feed], -1), cache)
            context, alpha = self._align(s, cache)  # from s_t
            out = cache.feed = torch.tanh(self.output(torch.cat([context, s], -1)))
        if record is not None:
            record.cross.append(alpha[:, None, None, :])
        return out

    def _align(self, s: Tensor, cache: RNNCache) -> tuple[Tensor, Tensor]:
        return align(self.attn.scores(s, cache.keys), cache.memory, cache.src_mask)

    def _advance(self, x: Tensor, cache: RNNCache) -> Tensor:
        """One recurrent step on (B, 2D) input; returns the top layer's new state s_t (B, D)."""
        out, cache.state = fp32(self.decoder, x[:, None].float(), cache.state)
        return out[:, 0]


def fp32(rnn: nn.RNNBase, x, state: State | None = None):
    """Run a GRU/LSTM in fp32 even under bf16 autocast: oneDNN has no bf16 LSTM on every CPU,
    and the recurrence is where low precision accumulates; the linear layers keep bf16."""
    with torch.autocast(rnn.weight_ih_l0.device.type, enabled=False):
        return rnn(x, None if state is None else map_state(state, Tensor.float))


def top(state: State) -> Tensor:
    """The top layer's hidden state (B, D) of a GRU's h or an LSTM's (h, c)."""
    return (state[0] if isinstance(state, tuple) else state)[-1]
