"""The per-step choices of beam search that need no model: which continuations survive, and in
which rows of the batch they go. Shapes: n sentences, k hypotheses each, V vocabulary.
"""

import torch
import torch.nn.functional as F
from torch import Tensor


def best_continuations(scores: Tensor, logprobs: Tensor, width: int) -> tuple[Tensor, Tensor, Tensor]:
    """The `width` best (score, parent, token) over all k x V extensions of each sentence's k
    hypotheses, best first. scores (n, k), logprobs (n*k, V) -> three (n, width) tensors.

    Each hypothesis' own top `width` are taken first: anything in the joint top `width` is in its
    row's top `width`, so the joint choice is exact and runs over k x width scores, not k x V.
    """
    (n, k), V = scores.shape, logprobs.size(-1)
    c = min(width, V)
    row_scores, row_tokens = logprobs.topk(c, dim=1)  # (n*k, c)
    candidates = (scores[:, :, None] + row_scores.view(n, k, c)).view(n, k * c)
    if k * c < width:  # a vocabulary smaller than the beam: pad with impossible candidates
        candidates = F.pad(candidates, (0, width - k * c), value=float("-inf"))
    top_scores, idx = candidates.topk(width, dim=1)
    idx = idx.clamp(max=k * c - 1)
    return top_scores, idx // c, row_tokens.view(n, k * c).gather(1, idx)


def parent_slots(parent: Tensor) -> Tensor:
    """An order for each sentence's K new hypotheses that leaves as many as it can in their parent's
    row: a parent's first child takes the parent's row, its other children the rows of parents that
    have none. parent (n, K) -> (n, K): row r gets hypothesis slots[:, r].

    The order of a beam's hypotheses is free (only ties could see it), and it decides how much of
    the self-attention cache a reorder moves: in natural (score) order about half the rows change
    parent at each step; in this order only the extra children of a parent do (a quarter, on
    Multi30k at beam 5), and each of them copies a row that stays where it is."""
    n, K = parent.shape
    rows = torch.arange(K, device=parent.device)
    child_of = parent[:, :, None] == rows  # (n, K hypotheses, K rows)
    first = (child_of & (child_of.cumsum(1) == 1)).any(2)  # (n, K): the first child of its parent
    childless = torch.sort(child_of.any(1).to(torch.uint8), dim=1, stable=True).indices  # those first
    extra = ((~first).cumsum(1) - 1).clamp(min=0)  # (n, K): which childless row an extra child takes
    row = torch.where(first, parent, childless.gather(1, extra))  # (n, K): each hypothesis' row
    return torch.empty_like(row).scatter_(1, row, rows.expand(n, K))
