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

from seq2seq.data.batch import Batch
from seq2seq.data.special import PAD_ID
from seq2seq.models.protocol import AttentionRecord
from seq2seq.training.distributed import World
from seq2seq.training.guided import Guide
from seq2seq.training.loss import smoothed_cross_entropy


def summed_loss(model: nn.Module, batch: Batch, label_smoothing: float) -> torch.Tensor:
    """Cross-entropy summed over real target tokens: the model projects those alone to the
    vocabulary, not the padding (3.5% of an epoch's target cells on Multi30k en->fr)."""
    return guided_loss(model, batch, label_smoothing, None)[0]


def guided_loss(model: nn.Module, batch: Batch, label_smoothing: float, guide: Guide | None):
    """(the summed cross-entropy, the loss to train on): with a guide and a batch that carries
    alignment targets, the second adds the guided alignment term."""
    real = batch.tgt_out != PAD_ID  # (B, T)
    record = AttentionRecord() if guide is not None and batch.alignment is not None else None
    logits = model(batch.src, batch.tgt_in, real, record)  # (N, V)
    translation = smoothed_cross_entropy(logits, batch.tgt_out[real], label_smoothing)
    if record is None:
        return translation, translation
    return translation, translation + guide.loss(record.cross, batch.alignment)


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
        guide: Guide | None = None,
    ):
        self.model, self.optimizer, self.world, self.autocast = model, optimizer, world, autocast
        self.clip_norm, self.smoothing, self.guide = clip_norm, smoothing, guide

    def __call__(self, batch: Batch, lr: float, weight: float = 1.0) -> tuple[float, int]:
        """Train on `batch` (weight 0: this process has none this step, see rank_batch); returns
        the step's mean translation loss per token (a guided alignment term trains, but is not in
        it) and its token count, over all processes."""
        self.model.train()
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        with self.autocast:
            translation, loss_sum = guided_loss(self.model, batch, self.smoothing, self.guide)
        if self.world.size == 1:
            loss = loss_sum / batch.n_tokens
            value, n_tokens = translation.item() / batch.n_tokens, batch.n_tokens
        else:
            total, n_tokens = self.world.sum([translation.item() * weight, batch.n_tokens * weight])
            loss = loss_sum * (weight * self.world.size) / n_tokens
            value = total / n_tokens
        if not math.isfinite(value):  # the same on every process: they share `total`
            raise NonFiniteLoss(value)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.clip_norm)
        self.optimizer.step()
        return value, int(n_tokens)
