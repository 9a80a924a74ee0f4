"""The fused training loss against PyTorch's cross-entropy: the same value and the same gradient,
for every kind of row (padding, a block boundary, a short last block) and both precisions."""

import pytest
import torch
import torch.nn.functional as F

from seq2seq.data.special import PAD_ID
from seq2seq.training import loss as loss_module
from seq2seq.training.loss import smoothed_cross_entropy

DEVICES = [
    "cpu",
    pytest.param(
        "cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
    ),
]


def logits_and_target(n: int, v: int, dtype: torch.dtype, seed: int = 0, device: str = "cpu"):
    g = torch.Generator().manual_seed(seed)
    logits = (torch.randn(n, v, generator=g) * 4).to(device, dtype).requires_grad_()
    target = torch.randint(4, v, (n,), generator=g).to(device)
    target[::5] = PAD_ID  # every fifth row is padding
    return logits, target


@pytest.mark.parametrize("smoothing", [0.0, 0.1, 0.3])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("rows", [7, 64])  # blocks of 7 rows: many, with a short last one
@pytest.mark.parametrize("device", DEVICES)  # a GPU takes PyTorch's loss: the same contract
def test_loss_and_gradient_equal_pytorchs_cross_entropy(monkeypatch, smoothing, dtype, rows, device):
    monkeypatch.setattr(loss_module, "ROWS", rows)
    ours, target = logits_and_target(50, 40, dtype, device=device)
    reference = ours.detach().clone().requires_grad_()
    expected = F.cross_entropy(
        reference.float(), target, ignore_index=PAD_ID, label_smoothing=smoothing, reduction="sum"
    )
    got = smoothed_cross_entropy(ours, target, smoothing)
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-4)
    (expected / 37).backward()  # as a step scales it: by the batch's token count
    (got / 37).backward()
    assert ours.grad.dtype == dtype
    tolerance = {"rtol": 1e-5, "atol": 1e-7} if dtype == torch.float32 else {"rtol": 1e-2, "atol": 1e-5}
    torch.testing.assert_close(ours.grad, reference.grad, **tolerance)
    assert ours.grad[::5].abs().max() == 0  # padding rows learn nothing


def test_without_autograd_it_only_scores(monkeypatch):
    """Validation computes no (tokens, V) gradient it would throw away."""
    logits, target = logits_and_target(30, 20, torch.float32)
    expected = F.cross_entropy(logits.detach(), target, ignore_index=PAD_ID, reduction="sum")
    monkeypatch.setattr(loss_module.SmoothedCrossEntropy, "forward", None)  # would fail if called
    with torch.no_grad():
        torch.testing.assert_close(smoothed_cross_entropy(logits, target, 0.0), expected)
    torch.testing.assert_close(smoothed_cross_entropy(logits.detach(), target, 0.0), expected)


def test_a_second_derivative_is_refused_rather_than_wrong():
    logits, target = logits_and_target(10, 20, torch.float32)
    (grad,) = torch.autograd.grad(smoothed_cross_entropy(logits, target, 0.1), logits, create_graph=True)
    with pytest.raises(RuntimeError):
        grad.sum().backward()


def test_a_second_backward_pass_is_refused_rather_than_wrong():
    logits, target = logits_and_target(10, 20, torch.float32)
    loss = smoothed_cross_entropy(logits, target, 0.1)
    loss.backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="once"):
        loss.backward()
