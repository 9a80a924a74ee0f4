"""The Transformer's position-wise feed-forward block, in one of three kinds.

`relu` is the 2017 paper's: Linear -> ReLU -> Linear. `silu` is the same block through SiLU
(swish), what OPUS-MT's Marian models use (`seq2seq import` brings them in). `swiglu` is the
gated block of Shazeer (2020, "GLU Variants Improve Transformer"): one projection, through SiLU,
decides unit by unit how much of a second projection passes. Narang et al. (2021, "Do
Transformer Modifications Transfer Across Implementations and Applications?") found the GLU
variants among the few changes that helped translation as well as language modelling. A gated
block has three matrices where ReLU's has two, so at equal parameters its hidden width is 2/3 of
ReLU's: the small preset's gated block is 680 wide where a ReLU block of the same parameters is
1024 (`--ffn relu --ff 1024`), 7.6M parameters either way.
"""

import torch.nn.functional as F
from torch import Tensor, nn

from seq2seq.models.dropout import Dropout


class FeedForward(nn.Sequential):
    """Linear -> ReLU -> dropout -> Linear. A Sequential, so that its weights keep the names
    (ff.0, ff.3) every run has saved and the exports read, and packed decoding fuses the ReLU."""

    activation = nn.ReLU

    def __init__(self, d_model: int, d_ff: int, dropout: float):
        linears = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)
        super().__init__(linears[0], self.activation(), Dropout(dropout), linears[1])


class SiLUFeedForward(FeedForward):
    """Linear -> SiLU -> dropout -> Linear, under the same names."""

    activation = nn.SiLU


class GatedFeedForward(nn.Module):
    """SwiGLU: out(dropout(silu(gate(x)) * up(x))), with gate and up one (D, 2F) projection, so
    the pair costs one matrix product."""

    def __init__(self, d_model: int, d_ff: int, dropout: float):
        super().__init__()
        self.gate_up = nn.Linear(d_model, 2 * d_ff)  # rows [0, F) the gate, [F, 2F) the value
        self.drop = Dropout(dropout)
        self.out = nn.Linear(d_ff, d_model)

    def forward(self, x: Tensor) -> Tensor:
        gate, up = self.gate_up(x).chunk(2, dim=-1)  # (..., D) -> (..., F) each
        return self.out(self.drop(F.silu(gate) * up))  # (..., D)


def outer_linears(ff: nn.Module) -> tuple[nn.Linear, nn.Linear]:
    """The block's input and output projections, of either kind (the input fused for SwiGLU): what
    a benchmark of the block's matrix products times."""
    return (ff.gate_up, ff.out) if isinstance(ff, GatedFeedForward) else (ff[0], ff[3])


# a config's `ffn` -> its block
BLOCKS = {"relu": FeedForward, "silu": SiLUFeedForward, "swiglu": GatedFeedForward}
FFNS = tuple(BLOCKS)


def feed_forward(kind: str, d_model: int, d_ff: int, dropout: float) -> nn.Module:
    """The block `kind` (one of FFNS) names, d_model -> d_ff -> d_model."""
    return BLOCKS[kind](d_model, d_ff, dropout)
