"""Pegasus and Marian with a gated (SwiGLU) feed-forward block: the Hugging Face classes of a run
trained with `--ffn swiglu`, which no class in transformers has.

`seq2seq export --to huggingface` copies this file into the exported folder and names the class it
uses in config.json's `auto_map`, so that `AutoModelForSeq2SeqLM.from_pretrained(folder,
trust_remote_code=True)` builds it. It must therefore import torch and transformers only, never
seq2seq: the folder is meant to load where seq2seq is not installed.

Their layers compute fc2(dropout(activation_fn(fc1(x)))). Ours compute out(dropout(silu(gate(x)) *
value(x))) with gate and value one fused (D, 2F) projection. So each layer's fc1 becomes that fused
(D -> 2F) projection and its activation takes the first half through SiLU times the second half;
fc2 is our output projection. Everything else is the parent class, unchanged.
"""

import torch.nn.functional as F
from torch import Tensor, nn
from transformers import MarianMTModel, PegasusForConditionalGeneration


class SwiGLU(nn.Module):
    """(..., 2F) -> (..., F): silu(gate) * value, the gate in the first half as seq2seq fuses it."""

    def forward(self, x: Tensor) -> Tensor:
        gate, value = x.chunk(2, dim=-1)
        return F.silu(gate) * value


def gate_feed_forwards(model: nn.Module, config) -> None:
    """Make every encoder and decoder layer's feed-forward block gated, in place: fc1 (D -> 2F)."""
    stacks = ((model.model.encoder, config.encoder_ffn_dim), (model.model.decoder, config.decoder_ffn_dim))
    for stack, ffn_dim in stacks:
        for layer in stack.layers:
            layer.fc1 = nn.Linear(config.d_model, 2 * ffn_dim)
            layer.activation_fn = SwiGLU()


class GatedPegasusForConditionalGeneration(PegasusForConditionalGeneration):
    """Pre-LN runs: Pegasus whose feed-forward blocks are SwiGLU."""

    def post_init(self):
        """The parent's __init__ ends here: gate the blocks first, so that the initialisation that
        follows (a model built `from_config` to train) reaches the new fc1 as every other layer."""
        gate_feed_forwards(self, self.config)
        super().post_init()


class GatedMarianMTModel(MarianMTModel):
    """Post-LN runs: Marian whose feed-forward blocks are SwiGLU."""

    def post_init(self):
        """As GatedPegasusForConditionalGeneration.post_init."""
        gate_feed_forwards(self, self.config)
        super().post_init()
