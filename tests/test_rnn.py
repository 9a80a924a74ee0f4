"""The RNN behind the same protocol: every variant decodes, batches, attends and learns like the
Transformer does, through the same search, training and checkpoint code."""

import json
import math
from dataclasses import replace

import pytest
import torch

from seq2seq.decoding.search import beam_search, greedy, pad
from seq2seq.models.protocol import AttentionRecord
from seq2seq.models.rnn import RNN, RNNConfig
from seq2seq.training.train import TrainConfig, train
from tests.cli_helpers import run_cli, run_process
from tests.conftest import write_multi30k
from tests.test_cli import TRAIN
from tests.test_train import val_exact_match, write_reversal_task

VARIANTS = {
    "bahdanau-gru": dict(attention="bahdanau", cell="gru"),
    "bahdanau-lstm": dict(attention="bahdanau", cell="lstm"),
    "luong-dot-gru": dict(attention="luong", score="dot", cell="gru"),
    "luong-general-lstm": dict(attention="luong", score="general", cell="lstm"),
}
SOURCES = [[5, 9, 12, 3], [7, 3], [11, 4, 6, 8, 20, 3], [30, 31, 3]]


def tiny_rnn(variant: str, seed: int = 0, **overrides) -> RNN:
    torch.manual_seed(seed)
    cfg = RNNConfig(vocab_size=40, d_model=32, n_layers=2, dropout=0.0, max_positions=64, **VARIANTS[variant])
    return RNN(replace(cfg, **overrides)).eval()


def sources():
    return pad(SOURCES)


def lens(n, value=10):
    return torch.full((n,), value)


@pytest.fixture(params=list(VARIANTS))
def variant(request):
    return request.param


def test_cached_steps_reproduce_the_teacher_forced_pass(variant):
    model = tiny_rnn(variant)
    src, tgt = sources(), torch.randint(4, 40, (4, 7), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        full = model(src, tgt)
        memory, src_mask = model.encode(src)
        cache = model.init_cache(memory, src_mask, tgt.size(1))
        steps = torch.stack([model.decode_step(tgt[:, t], cache) for t in range(tgt.size(1))], 1)
    torch.testing.assert_close(steps, full, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("beam", [1, 4])
def test_cached_equals_uncached_search(variant, beam):
    model = tiny_rnn(variant, seed=2)
    a = beam_search(model, sources(), beam, lens(4), nbest=beam, use_cache=True)
    b = beam_search(model, sources(), beam, lens(4), nbest=beam, use_cache=False)
    assert [[h.tokens for h in x] for x in a] == [[h.tokens for h in x] for x in b]
    assert [h.score for x in a for h in x] == pytest.approx([h.score for x in b for h in x], abs=1e-4)


@pytest.mark.parametrize("alpha", [0.0, 1.0])
def test_beam_one_equals_greedy(variant, alpha):
    model = tiny_rnn(variant, seed=3)
    g = greedy(model, sources(), lens(4), alpha=alpha)
    b = beam_search(model, sources(), 1, lens(4), alpha=alpha)
    assert [h.tokens for h in g] == [x[0].tokens for x in b]
    assert [h.score for h in g] == pytest.approx([x[0].score for x in b])


@pytest.mark.parametrize("beam", [1, 3])
def test_a_batch_equals_each_sentence_alone(variant, beam):
    """Padding changes nothing, through the bidirectional encoder too (packed sequences)."""
    model = tiny_rnn(variant, seed=4)
    batched = beam_search(model, sources(), beam, lens(4), nbest=beam)
    for i, ids in enumerate(SOURCES):
        alone = beam_search(model, pad([ids]), beam, lens(1), nbest=beam)[0]
        assert [h.tokens for h in alone] == [h.tokens for h in batched[i]]
        assert [h.score for h in alone] == pytest.approx([h.score for h in batched[i]], abs=1e-5)
    with torch.no_grad():  # and extra padding columns change no encoder state
        memory, _ = model.encode(sources())
        wider, _ = model.encode(torch.nn.functional.pad(sources(), (0, 3)))
    torch.testing.assert_close(wider[:, : memory.size(1)], memory, atol=1e-6, rtol=1e-6)


def test_alignment_weights_are_distributions_with_zero_on_padding(variant):
    model = tiny_rnn(variant, seed=5)
    src, tgt = sources(), torch.randint(4, 40, (4, 5), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        cross = model.attention(src, tgt)["cross"]  # (B, 1, 1, T, S)
    assert cross.shape == (4, 1, 1, 5, 6)
    torch.testing.assert_close(cross.sum(-1), torch.ones(4, 1, 1, 5))
    real = (src != 0)[:, None, None, None, :].expand_as(cross)
    assert (cross[~real] == 0).all() and (cross[real] > 0).all()
    with torch.no_grad():  # and they are the weights the cached steps used
        memory, src_mask = model.encode(src)
        cache, record = model.init_cache(memory, src_mask, 5), AttentionRecord()
        for t in range(5):
            model.decode_step(tgt[:, t], cache, record)
    torch.testing.assert_close(torch.cat(record.cross, dim=2)[:, None], cross)


def test_runs_under_bf16_autocast(variant):
    model = tiny_rnn(variant)
    with torch.no_grad(), torch.autocast("cpu", torch.bfloat16):
        assert model(sources(), torch.randint(4, 40, (4, 3))).float().isfinite().all()


@pytest.mark.parametrize("variant", ["bahdanau-gru", "luong-general-lstm"])
def test_a_tiny_rnn_learns_to_copy(tmp_path, variant):
    corpus = write_reversal_task(tmp_path / "data", n_train=2000, n_val=50, reverse=False)
    model_cfg = RNNConfig(d_model=64, n_layers=1, dropout=0.0, max_positions=32, **VARIANTS[variant])
    config = TrainConfig(
        corpus=corpus, src="src", tgt="tgt", vocab_size=16, max_tokens=256, lr=3e-3, warmup=30, epochs=8,
        device="cpu", bf16=False, seed=0,
    )  # fmt: skip
    train(tmp_path / "run", config, model_cfg)
    exact = val_exact_match(tmp_path / "run", tmp_path / "data")
    assert exact >= 0.9, f"exact match {exact:.0%}"


@pytest.mark.parametrize("options", [["--attention", "luong", "--score", "dot", "--cell", "lstm"], []])
def test_rnn_from_the_command_line(tmp_path, capsys, monkeypatch, options):
    """train, resume, translate (with its attention view) and evaluate an RNN run like any other."""
    data = write_multi30k(tmp_path / "corpus", {"train": 60, "val": 6, "test_2016_flickr": 4})
    run = tmp_path / "run"
    result = run_process([*TRAIN, "--arch", "rnn", *options, "--data-dir", data, "--run", run])
    assert result.code == 0, result.err
    config = json.loads((run / "config.json").read_text())["model"]
    assert config["arch"] == "rnn" and config["attention"] == ("luong" if options else "bahdanau")
    args = ["--run", run, "--max-len", "5"]
    result = run_cli(["translate", *args, "--show-attention", "a dog", ""], capsys, monkeypatch)
    assert result.code == 0 and len(result.out.splitlines()) == 2, result.err
    assert "cross-attention, layer 1 of 1, head 1" in result.err
    result = run_cli(["evaluate", "--run", run, "--data-dir", data, "--json"], capsys, monkeypatch)
    assert result.code == 0 and "bleu" in json.loads(result.out), result.err
    again = run_process([*TRAIN[:3], "--max-steps", "6", *TRAIN[5:], "--data-dir", data, "--run", run])
    assert again.code == 0 and "resuming from step 4" in again.out, again.err


@pytest.mark.parametrize(
    "args,message",
    [
        (["--attention", "luong"], "--attention is for --arch rnn"),
        (["--arch", "rnn", "--score", "dot"], "bahdanau attention is additive"),
        (["--arch", "rnn", "--attention", "luong", "--score", "cosine"], "dot or general, not 'cosine'"),
        (["--arch", "rnn", "--cell", "tanh"], "unknown cell 'tanh'"),
        (["--arch", "rnn", "--preset", "base"], "'base' is not one of tiny, small"),
        (["--arch", "cnn"], "'cnn' is not one of transformer, rnn"),
    ],
)
def test_options_the_architecture_does_not_have_are_refused(tmp_path, capsys, monkeypatch, args, message):
    result = run_cli(["train", *args, "--data-dir", tmp_path, "--run", tmp_path / "run"], capsys, monkeypatch)
    assert result.code == 2 and message in result.err, result.err
    assert len(result.err.strip().splitlines()) == 1 and not (tmp_path / "run").exists()


@pytest.mark.parametrize("preset", ["tiny", "small"])
def test_rnn_presets_match_the_transformers_size(preset):
    """Same-budget comparisons are fair only between models of about the same size."""
    from seq2seq.models.registry import build_model, preset_config

    size = {}
    for arch, options in (("transformer", {}), ("rnn", {}), ("rnn", dict(attention="luong", score="dot"))):
        model = build_model(preset_config(arch, preset, vocab_size=8000, **options))
        size[arch, options.get("attention")] = sum(p.numel() for p in model.parameters())
    transformer = size["transformer", None]
    assert all(0.6 * transformer < n <= 1.05 * transformer for n in size.values()), size


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_an_untrained_rnn_predicts_about_uniformly(variant):
    """The tied output layer starts with small logits: the first loss is near log(V), which keeps
    early training stable (a N(0, 1) embedding made it twice that)."""
    model = tiny_rnn(variant, d_model=64, vocab_size=2000)
    g = torch.Generator().manual_seed(0)
    src, tgt = torch.randint(4, 2000, (8, 12), generator=g), torch.randint(4, 2000, (8, 10), generator=g)
    with torch.no_grad():
        loss = torch.nn.functional.cross_entropy(model(src, tgt).flatten(0, 1), tgt.flatten())
    assert abs(loss.item() - math.log(2000)) < 0.2  # a N(0, 1) embedding gives 8.0 to 24
