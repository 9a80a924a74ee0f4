"""Dropout whose random mask is cheap on a CPU.

Why: on a CPU PyTorch draws a dropout mask one element at a time from one Mersenne Twister on one
thread (`bernoulli_`, 5-11 ns an element): on a 2-core AVX2 CPU the 32 masks of a `small`
training step were about 15% of it. Here the mask's bits come from NumPy's SFC64, 64 bits a draw
cut into four 16-bit numbers (about 2 ns a draw, 0.7x PCG64's), seeded from PyTorch's generator,
so `torch.manual_seed` and a checkpoint's saved RNG state decide every mask as before. An element
is dropped when its number falls below p * 65536, so p is rounded to a multiple of 1/65536 (0.1 ->
0.100006), and the kept values are scaled by 1 / (1 - that p), keeping the expectation exact.
The comparison writes the mask in x's type directly: a bool mask converted afterwards took 6x as
long (4.4 against 0.75 ms for a (3072, 1024) mask, the feed-forward's, on that CPU).
On a GPU, whose generator is fast, it is `F.dropout`.

Attention's dropout on a GPU is SDPA's own, from a kernel that takes p as an argument, never
cuDNN's (`attention_kernels`).
"""

from contextlib import AbstractContextManager, nullcontext

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.nn.attention import SDPBackend, sdpa_kernel

LEVELS = 1 << 16  # the mask's resolution: one 16-bit number per element


def dropout(x: Tensor, p: float, training: bool) -> Tensor:
    """Zero each element of `x` with probability p (to 1/65536) and scale the rest by 1 / (1 - p)."""
    if not training or p == 0.0:
        return x
    if x.device.type != "cpu" or p >= 1.0:
        return F.dropout(x, p, training=True)
    cut = round(p * LEVELS)
    numbers = random_int16(x.numel()).view(x.shape)  # uniform on [-32768, 32767]
    keep = torch.ge(numbers, cut - LEVELS // 2, out=torch.empty_like(x))  # 1.0 kept, 0.0 dropped
    return x * keep.mul_(LEVELS / (LEVELS - cut))


def random_int16(n: int) -> Tensor:
    """n uniform 16-bit integers, drawn from an SFC64 stream that PyTorch's generator seeds."""
    seed = int(torch.randint(0, 2**62, (1,)))
    words = np.random.SFC64(seed).random_raw((n + 3) // 4)  # (ceil(n / 4),) uint64
    return torch.from_numpy(words.view(np.int16)[:n])


# every SDPA kernel but cuDNN's, in PyTorch's order of preference
NOT_CUDNN = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]


def attention_kernels(device: torch.device, p: float) -> AbstractContextManager:
    """Where SDPA runs an attention with dropout p: on CUDA with p > 0, anywhere but cuDNN.
    cuDNN's attention builds an execution graph for each dropout probability it sees and caches
    it (1.7 s for a forward and backward on an H100, torch 2.11): late dropout's ramp gives every
    step a new p, and training there ran at 1/100 of its speed from the ramp's first step
    (scripts/bench_attention_dropout.py). The other kernels take p as an argument, at no cost."""
    return sdpa_kernel(NOT_CUDNN) if device.type == "cuda" and p > 0.0 else nullcontext()


class Dropout(nn.Dropout):
    """`nn.Dropout` with the cheap mask, calling no operator at all when not training: a decode step
    passes through a dozen of them, each otherwise an operator call that returns its input."""

    def forward(self, x: Tensor) -> Tensor:
        return dropout(x, self.p, self.training)
