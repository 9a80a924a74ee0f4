"""R-Drop (`train --r-drop`): each batch twice through the model, the two passes' symmetric KL in
the loss. Its KL on a CPU is computed a block at a time with its own gradient, so it is checked
against autograd's; the loss is checked against the paper's formula on the model's own two passes."""

import pytest
import torch

from seq2seq.data.batch import Batch, collate
from seq2seq.data.special import PAD_ID
from seq2seq.models.registry import ARCHITECTURES, build_model, preset_config
from seq2seq.training.loss import kl_sum, smoothed_cross_entropy, symmetric_kl
from seq2seq.training.step import summed_loss, twice

SOURCES = [[5, 9, 12], [7], [11, 4, 6, 8, 20]]
TARGETS = [[8, 9, 10], [30], [12, 13, 14, 15, 16]]


def batch() -> Batch:
    return collate(SOURCES, TARGETS, max_len=64)  # ragged: padding on both sides


def model(arch: str, dropout: float):
    torch.manual_seed(0)
    return build_model(
        preset_config(arch, "tiny", d_model=32, vocab_size=40, dropout=dropout, max_positions=64)
    )


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_the_blockwise_kl_has_autograd_s_value_and_gradients(dtype):
    torch.manual_seed(1)
    first, second = (
        torch.randn(70, 300).to(dtype).requires_grad_() for _ in range(2)
    )  # 70: a ragged last block
    ours = symmetric_kl(first, second)
    ours.backward(torch.tensor(3.0))
    ours_grads = first.grad.clone(), second.grad.clone()
    first.grad = second.grad = None
    reference = kl_sum(first.double(), second.double())
    reference.backward(torch.tensor(3.0, dtype=torch.float64))
    tolerance = 1e-5 if dtype == torch.float32 else 1e-2
    torch.testing.assert_close(ours.double(), reference, rtol=1e-5, atol=1e-4)
    for got, want in zip(ours_grads, (first.grad, second.grad), strict=True):
        assert got.dtype == dtype
        torch.testing.assert_close(got.double(), want.double(), rtol=tolerance, atol=tolerance)
    with torch.no_grad():  # scoring alone: the same value
        torch.testing.assert_close(symmetric_kl(first, second), ours)


def test_under_bf16_autocast_the_kl_is_the_one_computed_without_it():
    """The training step runs the loss under autocast; the KL's sums stay fp32 inside it."""
    torch.manual_seed(2)
    first, second = (torch.randn(40, 500).bfloat16().requires_grad_() for _ in range(2))
    plain = symmetric_kl(first, second)
    plain.backward()
    grads = first.grad.clone(), second.grad.clone()
    first.grad = second.grad = None
    with torch.autocast("cpu", dtype=torch.bfloat16):
        autocast = symmetric_kl(first, second)
    autocast.backward()
    assert autocast.dtype == torch.float32 and torch.equal(autocast, plain)
    assert torch.equal(first.grad, grads[0]) and torch.equal(second.grad, grads[1])


def test_the_kl_of_a_distribution_with_itself_is_zero_and_so_is_its_gradient():
    logits = torch.randn(5, 40, requires_grad=True)
    same = logits.detach().clone().requires_grad_()
    kl = symmetric_kl(logits, same)
    kl.backward()
    assert kl.item() == pytest.approx(0.0, abs=1e-5)
    assert logits.grad.abs().max() < 1e-6 and same.grad.abs().max() < 1e-6


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_without_dropout_the_two_passes_agree_and_the_loss_is_the_plain_one(arch):
    """Identical passes: KL 0, their mean cross-entropy is the one pass's, and so is its gradient."""
    plain, doubled = model(arch, 0.0).train(), model(arch, 0.0).train()
    b = batch()
    summed_loss(plain, b, 0.1).backward()
    summed_loss(doubled, b, 0.1, r_drop=5.0).backward()
    for p, q in zip(plain.parameters(), doubled.parameters(), strict=True):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_with_dropout_the_loss_is_the_mean_cross_entropy_plus_alpha_over_two_times_the_kl(arch):
    """The paper's loss halved: (CE1 + CE2) / 2 + alpha / 2 * (KL12 + KL21) / 2, on the model's own two
    passes (the same dropout masks, drawn again from the same seed); the KL is not 0 under dropout."""
    m, b = model(arch, 0.3).train(), batch()
    torch.manual_seed(7)
    loss = summed_loss(m, b, 0.1, r_drop=4.0)
    torch.manual_seed(7)
    real = b.tgt_out != PAD_ID
    logits = m(twice(b.src), twice(b.tgt_in), twice(real))  # (2N, V)
    first, second = logits.chunk(2)
    target = b.tgt_out[real]
    mean_ce = (smoothed_cross_entropy(first, target, 0.1) + smoothed_cross_entropy(second, target, 0.1)) / 2
    kl = kl_sum(first.double(), second.double())
    assert kl > 1e-3
    torch.testing.assert_close(loss.double(), mean_ce.double() + 2.0 * kl, rtol=1e-5, atol=1e-4)


def test_validation_is_one_pass():
    """In eval mode (validation, scoring) R-Drop changes nothing: one pass, its cross-entropy."""
    m, b = model("transformer", 0.3).eval(), batch()
    with torch.no_grad():
        torch.testing.assert_close(summed_loss(m, b, 0.1, r_drop=5.0), summed_loss(m, b, 0.1))
