"""Dropout whose random mask is cheap on a CPU.

Why: on a CPU PyTorch draws a dropout mask one element at a time from one Mersenne Twister on one
thread (`bernoulli_`, several ns an element), a sizeable share of a small model's training step
(docs/performance.md). Here the mask's bits come from NumPy's SFC64, 64 bits a draw
cut into four 16-bit numbers (about 2 ns a draw, 0.7x PCG64's), seeded from PyTorch's generator,
so `torch.manual_seed` and a checkpoint's saved RNG state decide every mask as before. An element
is dropped when its number falls below p * 65536, so p is rounded to a multiple of 1/65536 (0.1 ->
0.100006), and the kept values are scaled by 1 / (1 - that p), keeping the expectation exact.
The comparison writes the mask in x's type directly: a bool mask converted afterwards is another
pass over memory, several times the cost.
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


def attention_kernels(device: torch.device, p: float) -> AbstractContextManager:
    """Where SDPA may run an attention with dropout p: on CUDA with p > 0, in the kernels enabled
    now other than cuDNN's. cuDNN's attention builds an execution graph for each dropout
    probability it meets and caches it, and late dropout's ramp gives every step a new p, so each
    step would build a graph anew (docs/performance.md, "On a GPU"). Flash, memory-efficient and
    math attention take p as an argument."""
    if device.type != "cuda" or p == 0.0:
        return nullcontext()
    enabled = {
        SDPBackend.FLASH_ATTENTION: torch.backends.cuda.flash_sdp_enabled(),
        SDPBackend.EFFICIENT_ATTENTION: torch.backends.cuda.mem_efficient_sdp_enabled(),
        SDPBackend.MATH: torch.backends.cuda.math_sdp_enabled(),
    }
    return sdpa_kernel([kernel for kernel, on in enabled.items() if on] or [SDPBackend.MATH])


class Dropout(nn.Dropout):
    """`nn.Dropout` with the cheap mask, calling no operator at all when not training: a decode step
    passes through a dozen of them, each otherwise an operator call that returns its input."""

    def forward(self, x: Tensor) -> Tensor:
        return dropout(x, self.p, self.training)
