import pytest
import torch

from seq2seq.models.feed_forward import FeedForward, GatedFeedForward, outer_linears
from seq2seq.models.protocol import AttentionRecord
from seq2seq.models.registry import config_from_dict, preset_config
from seq2seq.models.transformer import PRESETS, Transformer, TransformerConfig
from tests.conftest import tiny_model


def random_batch(seed=1, B=3, S=7, T=6, V=40):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, V, (B, S), generator=g)
    src[0, S - 2 :] = 0  # one padded source
    tgt = torch.randint(4, V, (B, T), generator=g)
    return src, tgt


def test_recorded_attention_is_what_the_forward_pass_computes():
    """Asking for the weights takes the explicit path, which must give SDPA's output."""
    model = tiny_model()
    src, tgt = random_batch()
    with torch.no_grad():
        plain = model(src, tgt)
        memory, src_mask = model.encode(src, AttentionRecord())
        recorded = model.decode_all(tgt, memory, src_mask, AttentionRecord())
        weights = model.attention(src, tgt)
    torch.testing.assert_close(recorded, plain, atol=1e-5, rtol=1e-5)
    assert {k: tuple(w.shape) for k, w in weights.items()} == {
        "encoder": (3, 2, 4, 7, 7),
        "decoder": (3, 2, 4, 6, 6),
        "cross": (3, 2, 4, 6, 7),
    }
    assert weights["cross"][0, ..., -2:].abs().max() == 0  # padding gets no attention


def test_tied_embeddings_share_one_matrix():
    model = tiny_model()
    names = [n for n, _ in model.named_parameters()]
    assert "embed.weight" in names and not any("generator" in n for n in names)
    assert any("generator" in n for n, _ in tiny_model(tie_embeddings=False).named_parameters())


@pytest.mark.parametrize("preset", PRESETS)
def test_presets_build(preset):
    cfg = preset_config("transformer", preset, vocab_size=8000)
    assert cfg.d_model % cfg.n_heads == 0
    if preset == "small":  # the JoeyNMT peer's shape: 7.6M parameters with an 8000 vocab
        n = sum(p.numel() for p in Transformer(cfg).parameters())
        assert 7.5e6 < n < 7.7e6


def test_beams_share_their_sentence_cross_attention_and_step_as_if_each_had_a_copy():
    """A cache selected in runs of `beams` rows keeps one cross K/V per sentence; its steps (and
    their recorded weights) equal those of a cache that copied the K/V for every row."""
    model = tiny_model()
    src, _ = random_batch()
    rows = torch.tensor([0, 0, 0, 2, 2, 2])  # sentences 0 and 2, three beams each
    tokens = torch.tensor([5, 6, 7, 8, 9, 10])
    with torch.no_grad():
        memory, src_mask = model.encode(src)
        shared, copied = (model.start_cache(memory, src_mask, max_len=4) for _ in range(2))
        shared.select(rows, beams=3)
        copied.select(rows)
        assert shared.cross_kv[0][0].size(0) == 2 and copied.cross_kv[0][0].size(0) == 6
        for _ in range(2):
            records = AttentionRecord(), AttentionRecord()
            a = model.step(tokens, shared, records[0])
            b = model.step(tokens, copied, records[1])
            torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
            for x, y in zip(records[0].cross, records[1].cross, strict=True):
                torch.testing.assert_close(x, y, atol=1e-6, rtol=1e-5)
        shared.reorder(torch.tensor([1, 0, 2, 5, 3, 4]))  # within each sentence's run
        copied.reorder(torch.tensor([1, 0, 2, 5, 3, 4]))
        shared.select(torch.tensor([3, 4, 5]), beams=3)  # sentence 0 finished
        copied.select(torch.tensor([3, 4, 5]))
        torch.testing.assert_close(model.step(tokens[:3], shared), model.step(tokens[:3], copied))


def test_the_gated_block_passes_silu_of_the_gate_times_the_value():
    block = GatedFeedForward(d_model=8, d_ff=6, dropout=0.0)
    x = torch.randn(2, 3, 8, generator=torch.Generator().manual_seed(0))
    gate_w, value_w = block.gate_up.weight[:6], block.gate_up.weight[6:]
    gate_b, value_b = block.gate_up.bias[:6], block.gate_up.bias[6:]
    gate, value = x @ gate_w.T + gate_b, x @ value_w.T + value_b
    expected = (gate * torch.sigmoid(gate) * value) @ block.out.weight.T + block.out.bias
    torch.testing.assert_close(block(x), expected)
    assert outer_linears(block) == (block.gate_up, block.out)
    relu = FeedForward(d_model=8, d_ff=6, dropout=0.0)
    assert outer_linears(relu) == (relu[0], relu[3])


def test_swiglu_at_two_thirds_the_width_has_the_parameters_of_relu():
    """The equal-parameter comparison the option's help and docs name: the small preset's gated
    block at 680 against --ffn relu --ff 1024, the small preset before it."""
    gated = Transformer(preset_config("transformer", "small"))
    assert gated.cfg.ffn == "swiglu" and gated.cfg.d_ff == 680
    relu = Transformer(preset_config("transformer", "small", ffn="relu", d_ff=1024))
    count = lambda model: sum(p.numel() for p in model.parameters())  # noqa: E731
    assert abs(count(gated) / count(relu) - 1) < 0.01


def test_a_run_from_before_the_ffn_option_loads_as_the_relu_model_it_was():
    """Its config.json has no "ffn"; its weights are named ff.0 and ff.3, as they still are."""
    values = {k: v for k, v in vars(TransformerConfig(vocab_size=40)).items() if k not in ("ffn", "arch")}
    config = config_from_dict(values)
    assert config.ffn == "relu"
    assert {"encoder.0.ff.0.weight", "encoder.0.ff.3.weight"} <= set(Transformer(config).state_dict())
