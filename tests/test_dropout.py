"""The cheap CPU dropout: its rate, its scale, its gradient, and that PyTorch's seed decides it."""

import pytest
import torch

from seq2seq.models.dropout import LEVELS, Dropout, dropout


@pytest.mark.parametrize("p", [0.1, 0.3])
def test_drops_at_the_rate_asked_and_keeps_the_expectation(p):
    torch.manual_seed(0)
    out = dropout(torch.ones(1000, 1000), p, training=True)
    dropped = (out == 0).float().mean().item()
    assert abs(dropped - p) < 0.002  # 1e6 draws: the standard error is 0.0003-0.0005
    assert out.unique().tolist() == [0.0, pytest.approx(LEVELS / (LEVELS - round(p * LEVELS)))]
    assert abs(out.mean().item() - 1.0) < 0.003


def test_the_gradient_flows_through_the_kept_elements_only():
    torch.manual_seed(1)
    x = torch.randn(64, 33, requires_grad=True)
    out = dropout(x, 0.2, training=True)
    out.sum().backward()
    torch.testing.assert_close(x.grad, out.detach() / x.detach())  # the mask times the scale


def test_the_torch_seed_decides_the_mask():
    x = torch.ones(50, 50)
    torch.manual_seed(2)
    first = dropout(x, 0.1, training=True)
    torch.manual_seed(2)
    again = dropout(x, 0.1, training=True)
    later = dropout(x, 0.1, training=True)
    assert torch.equal(first, again) and not torch.equal(first, later)


def test_off_when_not_training_or_p_zero():
    x = torch.randn(4, 5)
    assert dropout(x, 0.1, training=False) is x and dropout(x, 0.0, training=True) is x
    module = Dropout(0.5).eval()
    assert module(x) is x
    assert torch.equal(Dropout(1.0).train()(x), torch.zeros_like(x))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_a_gpu_keeps_pytorchs_dropout():
    """The NumPy masks are a CPU remedy; on CUDA the mask is PyTorch's, at its exact scale."""
    torch.manual_seed(3)
    out = dropout(torch.ones(1000, 1000, device="cuda"), 0.1, training=True)
    assert out.device.type == "cuda"
    assert abs((out == 0).float().mean().item() - 0.1) < 0.002
    assert out.unique().tolist() == [0.0, pytest.approx(1 / 0.9)]
