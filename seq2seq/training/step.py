"""One optimizer step, in one process or data-parallel across several.

The loss of a step is the label-smoothed cross-entropy summed over every real target token of the
step's batches and divided by their count: with N processes each holds one batch, so each
scales its summed loss by N / (the step's tokens over all processes) before DistributedDataParallel
averages the gradients. The update is then the one a single process would make on the union of
the N batches, whatever their sizes (fairseq normalises the same way).
"""

import inspect
import math

import torch
from torch import nn

from seq2seq.data.batch import Batch, blank_source_pieces, blank_target_inputs
from seq2seq.data.special import PAD_ID
from seq2seq.training.distributed import World
from seq2seq.training.loss import smoothed_cross_entropy, symmetric_kl


def summed_loss(model: nn.Module, batch: Batch, label_smoothing: float, r_drop: float = 0.0) -> torch.Tensor:
    """Cross-entropy summed over real target tokens: the model projects those alone to the
    vocabulary, not the padding (3.5% of an epoch's target cells on Multi30k en->fr).

    With `r_drop` (R-Drop, Liang et al. 2021) in training, the batch goes through the model twice
    in one forward, each copy under its own dropout masks, and the loss per token is the two
    passes' mean cross-entropy plus r_drop / 2 times their symmetric KL: the paper's loss
    (NLL1 + NLL2 + alpha (KL12 + KL21) / 2) halved, as fairseq's normalisation by the doubled batch's
    tokens halves it, so `r_drop` is the paper's alpha and the learning rate means what it did.
    The two predictions of one pair are pulled together, so what the model learns holds under any
    of its dropout's sub-networks; a step costs about two."""
    real = batch.tgt_out != PAD_ID  # (B, T)
    target = batch.tgt_out[real]  # (N,)
    if r_drop <= 0 or not model.training:
        logits = model(batch.src, batch.tgt_in, real)  # (N, V)
        return smoothed_cross_entropy(logits, target, label_smoothing)
    logits = model(twice(batch.src), twice(batch.tgt_in), twice(real))  # (2N, V): rows of copy 1, then 2
    first, second = logits.chunk(2)  # (N, V) each, the same tokens in the same order
    mean_ce = smoothed_cross_entropy(logits, twice(target), label_smoothing) / 2
    return mean_ce + r_drop / 2 * symmetric_kl(first, second)


def twice(t: torch.Tensor) -> torch.Tensor:
    """(B, ...) -> (2B, ...): the batch, then the same batch again."""
    return torch.cat([t, t])


def data_parallel(model: nn.Module, world: World) -> nn.Module:
    """What the training forward runs through: the model itself in one process, else DDP around it
    (its buffers are constant tables, so they need no broadcast each step)."""
    if world.size == 1:
        return model
    ddp = nn.parallel.DistributedDataParallel
    device_ids = [world.device.index] if world.device.type == "cuda" else None
    newer = "forward_sync_buffers" in inspect.signature(ddp).parameters  # torch renamed the option
    no_sync = {"forward_sync_buffers" if newer else "broadcast_buffers": False}
    return ddp(model, device_ids=device_ids, gradient_as_bucket_view=True, **no_sync)


class NonFiniteLoss(Exception):
    """The step's loss is inf or nan; raised before any weight changes."""


class TrainStep:
    def __init__(
        self,
        model: nn.Module,
        optimizer,
        world: World,
        autocast,
        clip_norm: float,
        smoothing: float,
        source_word_dropout: float = 0.0,
        target_word_dropout: float = 0.0,
        r_drop: float = 0.0,
    ):
        self.model, self.optimizer, self.world, self.autocast = model, optimizer, world, autocast
        self.clip_norm, self.smoothing, self.r_drop = clip_norm, smoothing, r_drop
        self.source_word_dropout, self.target_word_dropout = source_word_dropout, target_word_dropout

    def __call__(self, batch: Batch, lr: float, weight: float = 1.0) -> tuple[float, int]:
        """Train on `batch` (weight 0: this process has none this step, see rank_batch); returns
        the step's mean loss per token and its token count, over all processes."""
        self.model.train()
        batch = blank_source_pieces(batch, self.source_word_dropout)
        batch = blank_target_inputs(batch, self.target_word_dropout)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        with self.autocast:
            loss_sum = self.summed_loss(batch)
        if self.world.size == 1:
            loss = loss_sum / batch.n_tokens
            value, n_tokens = loss.item(), batch.n_tokens
        else:
            total, n_tokens = self.world.sum([loss_sum.item() * weight, batch.n_tokens * weight])
            loss = loss_sum * (weight * self.world.size) / n_tokens
            value = total / n_tokens
        if not math.isfinite(value):  # the same on every process: they share `total`
            raise NonFiniteLoss(value)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.clip_norm)
        self.optimizer.step()
        return value, int(n_tokens)

    def summed_loss(self, batch: Batch) -> torch.Tensor:
        """The step's loss, summed over its real target tokens (a benchmark swaps it for another)."""
        return summed_loss(self.model, batch, self.smoothing, self.r_drop)
