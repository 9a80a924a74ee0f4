"""The RNN behind the same protocol (whose equivalences `test_protocol.py` checks for every
variant): it learns, trains and translates from the command line like the Transformer, and its
options are its own."""

import json
import math

import pytest
import torch

from seq2seq.models.rnn import RNNConfig
from seq2seq.training.config import TrainConfig
from seq2seq.training.train import train
from tests.cli_helpers import run_cli, run_process
from tests.conftest import write_multi30k
from tests.helpers import RNN_VARIANTS, TRAIN, rnn_variant, val_exact_match, write_reversal_task


@pytest.mark.parametrize("variant", ["bahdanau-gru", "luong-general-lstm"])
def test_a_tiny_rnn_learns_to_copy(tmp_path, variant):
    corpus = write_reversal_task(tmp_path / "data", n_train=2000, n_val=50, reverse=False)
    model_cfg = RNNConfig(d_model=64, n_layers=1, dropout=0.0, max_positions=32, **RNN_VARIANTS[variant])
    config = TrainConfig(
        corpus=corpus, src="src", tgt="tgt", vocab_size=16, max_tokens=256, lr=3e-3, warmup=30, epochs=8,
        device="cpu", bf16=False, seed=0,
        guided_alignment=None,  # seeded throughout: eflomal's links (auto, from 1,000 pairs) are not
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
        (["--attention", "luong"], "--attention is not an option of --arch transformer"),
        (["--layers", "2"], "--layers is not an option of --arch transformer"),
        (["--arch", "rnn", "--heads", "2", "--ff", "8"], "--heads, --ff are not options of --arch rnn"),
        (["--arch", "rnn", "--no-norm-first"], "--no-norm-first is not an option of --arch rnn"),
        (["--arch", "rnn", "--ffn", "swiglu"], "--ffn is not an option of --arch rnn"),
        (["--ffn", "gelu"], "ffn must be one of relu, silu, swiglu, not 'gelu'"),
        (["--d-model", "100", "--heads", "3"], "d_model 100 must be even and a multiple of n_heads 3"),
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


@pytest.mark.parametrize("variant", list(RNN_VARIANTS))
def test_an_untrained_rnn_predicts_about_uniformly(variant):
    """The tied output layer starts with small logits: the first loss is near log(V), which keeps
    early training stable (a N(0, 1) embedding made it twice that)."""
    model = rnn_variant(variant, d_model=64, vocab_size=2000)
    g = torch.Generator().manual_seed(0)
    src, tgt = torch.randint(4, 2000, (8, 12), generator=g), torch.randint(4, 2000, (8, 10), generator=g)
    with torch.no_grad():
        loss = torch.nn.functional.cross_entropy(model(src, tgt).flatten(0, 1), tgt.flatten())
    assert abs(loss.item() - math.log(2000)) < 0.2  # a N(0, 1) embedding gives 8.0 to 24
