"""The Transformer's fixed parts: the sine/cosine position table and the initial weights."""

import math

import torch
from torch import Tensor, nn


def sinusoids(length: int, d_model: int) -> Tensor:
    """The fixed sine/cosine position table of Vaswani et al.: (length, D)."""
    position = torch.arange(length, dtype=torch.float32)[:, None]
    freq = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
    table = torch.zeros(length, d_model)
    table[:, 0::2] = torch.sin(position * freq)
    table[:, 1::2] = torch.cos(position * freq)
    return table


def init_weights(module: nn.Module) -> None:
    """Xavier for projections, N(0, D^-1/2) for the tied embedding so logits start small."""
    if isinstance(module, nn.Linear):
        nn.init.xavier_uniform_(module.weight)
        nn.init.zeros_(module.bias)
    elif isinstance(module, nn.Embedding):
        nn.init.normal_(module.weight, std=module.embedding_dim**-0.5)
        with torch.no_grad():
            module.weight[module.padding_idx].zero_()
