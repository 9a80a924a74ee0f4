"""The training loss: label-smoothed cross-entropy over the vocabulary, summed over real tokens,
with its gradient computed in the forward pass, a block of rows at a time.

Why not `F.cross_entropy`: with label smoothing it runs a log_softmax, a gather and a sum, and in
the backward pass a zero-filled gradient, a scatter, an expanded smoothing gradient, their sum and
the log_softmax backward: about ten passes over the (tokens, V) logits, each through main memory,
a large share of a small model's CPU training step (docs/performance.md). The loss fixes its own
gradient up to the scalar that multiplies it, softmax - (1 - eps) * onehot - eps / V on real
tokens and 0 on padding (what Apex's fused xentropy kernel computes on GPUs), so here each block
of rows is read once from memory and worked on while it is in cache.
A GPU keeps PyTorch's loss: there each pass is a kernel at memory speed, and the fused loss was
the slower one (docs/results.md, "The training step").
"""

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.autograd.function import once_differentiable

from seq2seq.data.special import PAD_ID

ROWS = 128  # rows per block on a CPU: 128 x 8000 fp32 logits are 4 MB, within its last-level cache


def smoothed_cross_entropy(logits: Tensor, target: Tensor, smoothing: float) -> Tensor:
    """(N, V) logits, (N,) target ids (PAD_ID: padding, ignored) -> the summed loss, 0-d fp32;
    the same value and gradient as `F.cross_entropy(logits.float(), target, ignore_index=PAD_ID,
    label_smoothing=smoothing, reduction="sum")`. Without autograd (validation) it only scores."""
    if logits.device.type != "cpu":
        return F.cross_entropy(
            logits.float(), target, ignore_index=PAD_ID, label_smoothing=smoothing, reduction="sum"
        )
    if torch.is_grad_enabled() and logits.requires_grad:
        return SmoothedCrossEntropy.apply(logits, target, smoothing)
    return summed(logits, target, smoothing, grad=None)


def summed(logits: Tensor, target: Tensor, smoothing: float, grad: Tensor | None) -> Tensor:
    """The summed loss, a block of rows at a time; given `grad` (N, V), the loss's gradient is
    written there too, up to the scalar that will multiply it."""
    N, V = logits.shape
    # fp32 logits get their gradient written in place of the block; others (bf16), and scoring
    # without a gradient, go through one fp32 block, so the softmax is not rounded before it is
    # complete
    scratch = None
    if grad is None or grad.dtype != torch.float32:
        scratch = logits.new_empty((min(ROWS, N), V), dtype=torch.float32)
    total = torch.zeros((), dtype=torch.float32, device=logits.device)
    for start in range(0, N, ROWS):
        z, y = logits[start : start + ROWS].float(), target[start : start + ROWS]  # (n, V), (n,)
        block = scratch[: len(y)] if scratch is not None else grad[start : start + ROWS]
        # exp is computed once, into the block, and serves both the loss and the softmax
        # (`torch.logsumexp` would compute it a second time, and allocate)
        top = z.amax(dim=1, keepdim=True)  # (n, 1)
        torch.sub(z, top, out=block).exp_()
        mass = block.sum(dim=1, keepdim=True)  # (n, 1)
        lse = (top + mass.log()).squeeze(1)  # (n,)
        # -log p_j = lse - z_j, so (1 - eps) * -log p_y + eps / V * sum_j -log p_j is:
        per_row = lse - (1 - smoothing) * z.gather(1, y[:, None]).squeeze(1) - smoothing / V * z.sum(1)
        padding = (y == PAD_ID).nonzero().squeeze(1)  # (padded rows,)
        total += per_row.index_fill_(0, padding, 0.0).sum()
        if grad is None:
            continue
        block.mul_(mass.reciprocal_()).sub_(smoothing / V)  # softmax - eps / V
        block.scatter_add_(1, y[:, None], block.new_full((len(y), 1), smoothing - 1))
        block.index_fill_(0, padding, 0.0)
        if scratch is not None:
            grad[start : start + ROWS].copy_(block)
    return total


class SmoothedCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits: Tensor, target: Tensor, smoothing: float) -> Tensor:
        grad = torch.empty_like(logits)
        total = summed(logits, target, smoothing, grad)
        ctx.save_for_backward(grad)
        ctx.used = False
        return total

    @staticmethod
    @once_differentiable  # the gradient is computed, not traced: a second derivative would be wrong
    def backward(ctx, grad_output: Tensor) -> tuple[Tensor, None, None]:
        return *scaled_once(ctx, grad_output, "smoothed_cross_entropy"), None, None


def scaled_once(ctx, grad_output: Tensor, name: str) -> tuple[Tensor, ...]:
    """The gradients a forward pass computed and saved, scaled in place by `grad_output`: each is as
    large as the logits, so it serves one backward pass only, and a second is refused."""
    if ctx.used:
        raise RuntimeError(f"{name}'s graph can be backpropagated once")
    ctx.used = True
    return tuple(grad.mul_(grad_output) for grad in ctx.saved_tensors)
