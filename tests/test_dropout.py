"""The cheap CPU dropout: its rate, its scale, its gradient, and that PyTorch's seed decides it."""

import pytest
import torch

from seq2seq.models.dropout import LEVELS, Dropout, attention_kernels, dropout
from seq2seq.models.transformer import Transformer, TransformerConfig


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


CUDA, CPU = torch.device("cuda"), torch.device("cpu")


def test_attention_with_dropout_on_cuda_leaves_cudnn_out():
    """cuDNN's attention builds a graph per dropout p, and late dropout gives each step a new p."""
    assert torch.backends.cuda.cudnn_sdp_enabled()
    with attention_kernels(CUDA, 0.1):
        assert not torch.backends.cuda.cudnn_sdp_enabled()
        assert torch.backends.cuda.flash_sdp_enabled() and torch.backends.cuda.mem_efficient_sdp_enabled()
    assert torch.backends.cuda.cudnn_sdp_enabled()
    for device, p in [(CUDA, 0.0), (CPU, 0.1)]:  # no dropout, or not a GPU: PyTorch's own choice
        with attention_kernels(device, p):
            assert torch.backends.cuda.cudnn_sdp_enabled()


def test_a_kernel_the_user_turned_off_stays_off():
    torch.backends.cuda.enable_flash_sdp(False)
    try:
        with attention_kernels(CUDA, 0.1):
            assert not torch.backends.cuda.flash_sdp_enabled() and not torch.backends.cuda.cudnn_sdp_enabled()
            assert torch.backends.cuda.mem_efficient_sdp_enabled()
        assert not torch.backends.cuda.flash_sdp_enabled()
    finally:
        torch.backends.cuda.enable_flash_sdp(True)


def test_the_transformer_asks_for_its_attention_kernels_with_its_dropout(monkeypatch):
    """Every SDPA call goes through `attention_kernels`, with the p it passes to SDPA."""
    import seq2seq.models.transformer as transformer

    asked = []
    monkeypatch.setattr(
        transformer, "attention_kernels", lambda device, p: asked.append(p) or attention_kernels(device, p)
    )
    model = Transformer(TransformerConfig(vocab_size=40, d_model=32, n_heads=4, d_ff=64, dropout=0.0)).train()
    src, tgt = torch.randint(4, 40, (2, 5)), torch.randint(4, 40, (2, 6))
    model(src, tgt)
    assert asked == [0.0] * 9  # 3 encoder, 3 decoder self and 3 cross attentions
    model.set_dropout(0.25)  # on a CPU a training attention with dropout takes the cheap mask instead
    model.eval()(src, tgt)
    assert asked == [0.0] * 18


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_a_gpu_trains_with_a_new_attention_dropout_every_step(monkeypatch):
    """Late dropout's ramp on CUDA: each step a new p, and no SDPA call with dropout may reach cuDNN."""
    sdpa, calls = torch.nn.functional.scaled_dot_product_attention, []

    def checked(*args, dropout_p=0.0, **kwargs):
        calls.append((dropout_p, torch.backends.cuda.cudnn_sdp_enabled()))
        return sdpa(*args, dropout_p=dropout_p, **kwargs)

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", checked)
    torch.manual_seed(0)
    model = Transformer(TransformerConfig(vocab_size=40, d_model=32, n_heads=4, d_ff=64)).to(CUDA).train()
    src, tgt = torch.randint(4, 40, (4, 7), device=CUDA), torch.randint(4, 40, (4, 8), device=CUDA)
    src[::2, 5:] = 0  # padding, so attention has a mask
    for step in range(5):
        model.set_dropout(0.1 + 0.01 * step)
        with torch.autocast("cuda", torch.bfloat16):
            loss = model(src, tgt).float().logsumexp(-1).mean()
        loss.backward()
        assert torch.isfinite(loss)
    assert [p for p, _ in calls] == [pytest.approx(0.1 + 0.01 * step) for step in range(5) for _ in range(9)]
    assert not any(cudnn for _, cudnn in calls)
    assert torch.backends.cuda.cudnn_sdp_enabled()  # given back after each call
