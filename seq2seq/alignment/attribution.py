"""Attribution over the source embeddings: how much each source piece's embedding moves the
log-probability of each output piece.

    gradient x input:      a(t, s) = sum_d x_sd * d log p(y_t) / d x_sd
    integrated gradients:  a(t, s) = sum_d x_sd * mean_k d log p(y_t) / d x_sd at (k + 1/2)/K * x

from the all-zero embedding (Sundararajan et al. 2017, midpoint rule over K steps), so that
sum_s a(t, s) = log p(y_t | x) - log p(y_t | 0) up to the rule's error: the completeness the
method promises, and what its test checks.

The embedding is scaled where the model looks it up (`model.embed`), during `encode` only, so any
architecture of the protocol is attributed the same way and the target side is untouched. One
pass does every output piece and every step: the batch holds a row per (step, output position),
each row's objective is its own position's log-probability, and one gradient of their sum gives
each row the gradient of its own.

Shapes: K steps, T output pieces + EOS, S source pieces + EOS, D embedding width.
"""

import numpy as np
import torch

from seq2seq.data.special import BOS_ID, EOS_ID
from seq2seq.models.protocol import Seq2SeqModel


def attribution(model: Seq2SeqModel, src: list[int], tgt: list[int], steps: int | None = None) -> np.ndarray:
    """(T, S) attributions for the source ids `src` (EOS included) and the output ids `tgt` (no
    BOS or EOS); `steps` None: gradient x input, else integrated gradients over that many steps."""
    alphas = [1.0] if steps is None else [(k + 0.5) / steps for k in range(steps)]
    gradient, embedding = _gradients(model, src, tgt, alphas)  # (K, T, S, D), (S, D)
    return (gradient.mean(0) * embedding).sum(-1).numpy()  # (T, S)


def log_probabilities(model: Seq2SeqModel, src: list[int], tgt: list[int], alpha: float) -> np.ndarray:
    """(T,) log p(y_t) with the source embedding scaled by `alpha` (1: the model itself)."""
    with torch.no_grad():
        logp, _ = _forward(model, src, tgt, [alpha])
    return logp.numpy()


def _gradients(model, src, tgt, alphas):
    with torch.enable_grad():
        logp, scaled = _forward(model, src, tgt, alphas)
        (gradient,) = torch.autograd.grad(logp.sum(), scaled)  # (K*T, S, D)
    T = len(tgt) + 1
    embedding = model.embed.weight[torch.tensor(src)].detach().float()  # (S, D)
    return gradient.float().view(len(alphas), T, len(src), -1), embedding


def _forward(model, src, tgt, alphas):
    """(K*T,) each row's own log-probability, and the scaled embedding it was computed from."""
    model.eval()
    device = model.embed.weight.device
    T = len(tgt) + 1
    rows = len(alphas) * T
    alpha = torch.tensor(alphas, device=device).repeat_interleave(T)  # (K*T,)
    position = torch.arange(T, device=device).repeat(len(alphas))  # (K*T,)
    tgt_out = torch.tensor([*tgt, EOS_ID], device=device)
    captured = []

    def scale(module, inputs, out):  # (K*T, S, D): the lookup, scaled per row
        scaled = out * alpha[:, None, None].to(out.dtype)
        captured.append(scaled)
        return scaled

    handle = model.embed.register_forward_hook(scale)
    try:
        memory, src_mask = model.encode(torch.tensor([src], device=device).expand(rows, -1))
    finally:
        handle.remove()
    tgt_in = torch.tensor([[BOS_ID, *tgt]], device=device).expand(rows, -1)
    keep = torch.nn.functional.one_hot(position, T).bool()  # (K*T, T): each row's own position
    logp = model.decode_all(tgt_in, memory, src_mask, keep=keep).float().log_softmax(-1)  # (K*T, V)
    return logp.gather(1, tgt_out[position][:, None]).squeeze(1), captured[0]
