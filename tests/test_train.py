import random
from dataclasses import replace

import pytest
import torch
from safetensors.torch import load_file

from seq2seq.checkpoint import BEST, CURVES, LAST, load_run, read_metrics
from seq2seq.decode import DecodeOptions, translate
from seq2seq.rnn import RNNConfig
from seq2seq.train import TrainConfig, lr_schedule, train
from seq2seq.transformer import TransformerConfig

REVERSE_MODEL = TransformerConfig(
    d_model=64, n_heads=4, n_encoder_layers=2, n_decoder_layers=2, d_ff=256, dropout=0.0, max_positions=32
)


def write_reversal_task(folder, n_train=3000, n_val=100, seed=0, reverse=True):
    """src: 3-7 random digits; tgt: the same digits reversed (or copied, with reverse=False).
    Written as `{split}.tsv` files."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for split, n in (("train", n_train), ("val", n_val)):
        lines = []
        for _ in range(n):
            digits = [str(rng.randrange(10)) for _ in range(rng.randint(3, 7))]
            tgt = reversed(digits) if reverse else digits
            lines.append(f"{' '.join(digits)}\t{' '.join(tgt)}\n")
        (folder / f"{split}.tsv").write_text("".join(lines))
    return str(folder / "{split}.tsv")


def val_exact_match(run_dir, data_dir) -> float:
    """Share of the task's validation sources that the run's best model translates exactly."""
    model, tokenizer = load_run(run_dir)
    val = (data_dir / "val.tsv").read_text().splitlines()
    sources, targets = zip(*(line.split("\t") for line in val), strict=True)
    outputs = translate(model, tokenizer, list(sources), DecodeOptions(beam=1)).best
    return sum(o == t for o, t in zip(outputs, targets, strict=True)) / len(targets)


def test_lr_schedule_warms_up_then_decays():
    assert lr_schedule(1, 1e-3, 100) == pytest.approx(1e-5)
    assert lr_schedule(100, 1e-3, 100) == pytest.approx(1e-3)
    assert lr_schedule(400, 1e-3, 100) == pytest.approx(5e-4)


def test_tiny_model_learns_to_reverse_digits(tmp_path):
    corpus = write_reversal_task(tmp_path / "data")
    config = TrainConfig(
        corpus=corpus,
        src="src",
        tgt="tgt",
        vocab_size=32,
        max_tokens=1024,
        lr=2e-3,
        warmup=100,
        label_smoothing=0.0,
        epochs=30,
        patience=30,
        device="cpu",
        bf16=False,  # fp32: the test is about learning, and tiny shapes gain nothing from bf16
    )
    final = train(tmp_path / "run", config, REVERSE_MODEL)
    exact = val_exact_match(tmp_path / "run", tmp_path / "data")
    assert exact >= 0.95, f"exact match {exact:.2%}, final {final}"
    bleus = [row["val_bleu"] for row in read_metrics(tmp_path / "run")]
    assert bleus[-1] > bleus[0]


@pytest.mark.parametrize(
    "model_cfg",  # dropout on: the RNG state must resume too
    [
        replace(REVERSE_MODEL, d_model=32, d_ff=64, dropout=0.1),
        RNNConfig(d_model=32, n_layers=2, dropout=0.1, max_positions=32, cell="lstm"),
    ],
    ids=["transformer", "rnn"],
)
def test_resumed_training_equals_uninterrupted(tmp_path, model_cfg):
    corpus = write_reversal_task(tmp_path / "data", n_train=400, n_val=10)
    config = TrainConfig(
        corpus=corpus, src="src", tgt="tgt", vocab_size=32, max_tokens=512, warmup=5, device="cpu", bf16=False
    )
    train(tmp_path / "straight", replace(config, max_steps=12), model_cfg)
    (tmp_path / "resumed").mkdir()
    (tmp_path / "resumed" / "tokenizer.model").write_bytes(
        (tmp_path / "straight" / "tokenizer.model").read_bytes()
    )
    first = train(tmp_path / "resumed", replace(config, max_steps=5), model_cfg)
    assert first["step"] == 5 and first["stop"] == "max steps"
    second = train(tmp_path / "resumed", replace(config, max_steps=12), model_cfg)
    assert second["step"] == 12
    a, b = load_file(tmp_path / "straight" / LAST), load_file(tmp_path / "resumed" / LAST)
    for name in a:
        if name.startswith(("model.", "optim.")):
            assert torch.equal(a[name], b[name]), name
    steps = [row["step"] for row in read_metrics(tmp_path / "resumed")]
    assert steps[0] == 5 and steps[-1] == 12 and (tmp_path / "resumed" / BEST).is_file()


def test_rerun_of_a_finished_run_trains_no_further(tmp_path):
    corpus = write_reversal_task(tmp_path / "data", n_train=100, n_val=5)
    config = TrainConfig(
        corpus=corpus, src="src", tgt="tgt", vocab_size=32, max_tokens=512, max_steps=3, device="cpu"
    )
    small = replace(REVERSE_MODEL, d_model=32, d_ff=64)
    train(tmp_path / "run", config, small)
    again = train(tmp_path / "run", config, small)
    assert again["stop"] == "max steps" and again["step"] == 3


def test_each_validation_redraws_the_learning_curves(tmp_path):
    pytest.importorskip("matplotlib")
    from matplotlib.image import imread

    corpus = write_reversal_task(tmp_path / "data", n_train=100, n_val=5)
    config = TrainConfig(
        corpus=corpus, src="src", tgt="tgt", vocab_size=32, max_tokens=512, epochs=2, device="cpu"
    )
    train(tmp_path / "run", config, replace(REVERSE_MODEL, d_model=32, d_ff=64))
    assert len(read_metrics(tmp_path / "run")) == 2
    assert imread(tmp_path / "run" / CURVES).ndim == 3
