"""Packed GEMMs for decoding on the CPU: every linear layer's weight reordered once, when a run is
loaded for decoding, into oneDNN's blocked layout, and multiplied there at every step.

Why: `F.linear` on the CPU calls MKL's sgemm, which on some CPUs (AMD's, with AVX512) runs its
AVX2 code, while oneDNN's fp32 kernel on weights reordered ahead of time runs about twice as fast
on the same shapes (docs/performance.md). CTranslate2
does the same on such CPUs (its SGEMM backend there is DNNL), packing at load time as it does with
MKL on Intel. Where MKL is already as fast, packing buys nothing, so `pack` is used only where a
timed GEMM says it pays (`packing_pays`, once per process, as `device.use_bf16` decides bf16).

What changes: the arithmetic is still fp32, in another order of summation, so outputs agree with
the plain path to float rounding (tests compare the two token for token). The tied output
projection gets a packed copy of the embedding matrix as `generator`, the embedding lookups keep the
matrix itself. Under autocast (`--bf16`) each layer falls back to `F.linear`, so bf16 decoding is
exactly what it was. The packed model is for decoding only: its weights are the same tensors, but
it carries packed copies beside them, and it is never trained or exported.
"""

import copy
import functools
import itertools
import os

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from seq2seq.device import speedup

MIN_SPEEDUP = 1.15  # below this a measured gain is within the noise of a shared machine
# oneDNN's cache of primitives and ideep's (PyTorch's layer over oneDNN, one per thread) of the
# same primitives: each keeps 1024 by default
CACHE_VARIABLES = ("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "LRU_CACHE_CAPACITY")
CACHE_CAPACITY = 8  # primitives each keeps here; docs/performance.md for the choice


def bound_primitive_caches() -> None:
    """oneDNN compiles a primitive for every GEMM shape it runs, with its own scratch memory (up to
    rows x outputs floats: 10 MB for 320 rows of an 8000-word projection), and two caches keep
    them. Decoding meets a new row count at nearly every batch (hypotheses finish, requests batch
    differently), so a long-lived process fills both: a server's resident memory grew by about 450
    MB in ten minutes (docs/serving.md, A soak); bounding one cache alone did not stop it. Both read
    their capacity from the environment once, at their first primitive, so this runs before the
    first reorder; a capacity the user set is kept."""
    for name in CACHE_VARIABLES:
        os.environ.setdefault(name, str(CACHE_CAPACITY))


class PackedLinear(nn.Module):
    """`nn.Linear` with its weight also held in oneDNN's layout: (..., in) -> (..., out), followed
    by a ReLU inside the same call when `relu` (oneDNN applies it as the GEMM writes its output)."""

    def __init__(self, weight: Tensor, bias: Tensor | None, relu: bool = False):
        super().__init__()
        self.weight, self.bias = weight, bias  # the plain tensors, for autocast and inspection
        self.relu = relu
        bound_primitive_caches()
        self.register_buffer(
            "packed", torch.ops.mkldnn._reorder_linear_weight(weight.detach()), persistent=False
        )

    def forward(self, x: Tensor) -> Tensor:
        if torch.is_autocast_enabled("cpu") or x.dtype != torch.float32:
            y = F.linear(x, self.weight, self.bias)
            return F.relu(y) if self.relu else y
        return torch.ops.mkldnn._linear_pointwise(
            x, self.packed, self.bias, "relu" if self.relu else "none", [], ""
        )


def packing_available(model: nn.Module) -> bool:
    """oneDNN's linear is there, and the model is fp32 on the CPU (int8 layers are not nn.Linear)."""
    parameter = next(model.parameters())
    return (
        parameter.device.type == "cpu"
        and parameter.dtype == torch.float32
        and torch.backends.mkldnn.is_available()
        and hasattr(torch.ops.mkldnn, "_linear_pointwise")
    )


def pack(model: nn.Module) -> nn.Module:
    """A copy of `model` whose linear layers (and tied output projection) run on packed weights;
    `model` itself is left as it was. The copy shares no tensor with it."""
    model = copy.deepcopy(model).eval()
    if getattr(model, "generator", "none") is None:  # tied: the projection reads the embedding
        model.generator = PackedLinear(model.embed.weight, None)
    for parent in list(model.modules()):
        children = [*parent.named_children(), (None, None)]
        for (name, child), (next_name, next_child) in itertools.pairwise(children):
            if type(child) is nn.Linear:
                # a Linear then a ReLU in a Sequential (a feed-forward block) become one call
                relu = isinstance(parent, nn.Sequential) and type(next_child) is nn.ReLU
                setattr(parent, name, PackedLinear(child.weight, child.bias, relu))
                if relu:
                    setattr(parent, next_name, nn.Identity())
    return model


def packed_if_faster(model: nn.Module) -> nn.Module:
    """`pack(model)` where packing is available and measured faster here; else `model`."""
    return pack(model) if packing_available(model) and packing_pays() else model


@functools.cache
def packing_pays() -> bool:
    return packing_speedup() >= MIN_SPEEDUP


def packing_speedup(rows: int = 64, d_model: int = 256, vocab: int = 8000) -> float:
    """How much faster a packed GEMM of an output projection's shape runs than `F.linear` on this
    CPU with its current threads (about 30 ms)."""
    with torch.inference_mode():
        x, weight = torch.randn(rows, d_model), torch.randn(vocab, d_model)
        layer = PackedLinear(weight, None)
        return speedup(lambda: F.linear(x, weight), lambda: layer(x))
