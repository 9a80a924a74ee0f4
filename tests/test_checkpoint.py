import json
import pickle
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import pytest
import torch

from seq2seq.data.tokenizer import train_tokenizer
from seq2seq.errors import Seq2SeqError
from seq2seq.runs import files as ckpt
from seq2seq.runs.load import load_run
from seq2seq.training import checkpoint
from tests.conftest import EN, FR, tiny_model
from tests.helpers import SENTENCES

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def run_dir(tmp_path):
    """A complete run directory holding a tiny random model."""
    run = tmp_path / "run"
    texts = [f"{t} {i}" for i in range(30) for t in EN + FR]
    tokenizer = train_tokenizer(texts, run / ckpt.TOKENIZER, 60, sentences=SENTENCES)
    model = tiny_model(vocab_size=tokenizer.vocab_size)
    ckpt.save_config(run, {"model": asdict(model.cfg), "train": {}})
    ckpt.save_weights(model, run / ckpt.BEST)
    return run


def test_save_load_gives_identical_logits(run_dir):
    model, _ = load_run(run_dir)
    original = tiny_model(vocab_size=model.cfg.vocab_size)
    src, tgt = torch.tensor([[5, 6, 7, 3]]), torch.tensor([[2, 8, 9]])
    with torch.no_grad():
        assert torch.equal(model(src, tgt), original(src, tgt))


def test_a_run_from_before_the_rnn_loads_as_a_transformer(run_dir):
    """config.json files written before `arch` existed have no such field."""
    sections = json.loads((run_dir / "config.json").read_text())
    assert sections["model"].pop("arch") == "transformer"
    (run_dir / "config.json").write_text(json.dumps(sections))
    model, _ = load_run(run_dir)
    assert type(model).__name__ == "Transformer"


@pytest.mark.parametrize(
    "change,message",
    [
        ({"arch": "lstm-only"}, "unknown architecture 'lstm-only'"),
        ({"arch": "rnn"}, "does not match this version's RNNConfig"),
    ],
)
def test_a_foreign_architecture_is_a_clean_error(run_dir, change, message):
    sections = json.loads((run_dir / "config.json").read_text())
    sections["model"].update(change)
    (run_dir / "config.json").write_text(json.dumps(sections))
    with pytest.raises(Seq2SeqError, match=message):
        load_run(run_dir)


def test_training_state_round_trip(tmp_path):
    model = tiny_model()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model(torch.tensor([[5, 3]]), torch.tensor([[2, 6]])).sum().backward()
    optimizer.step()
    torch.manual_seed(123)
    checkpoint.save_training_state(tmp_path / "last.safetensors", model, optimizer, {"step": 7})
    expected_draw = torch.rand(3)

    other = tiny_model(seed=9)
    other_optimizer = torch.optim.AdamW(other.parameters(), lr=1e-3)
    state = checkpoint.load_training_state(tmp_path / "last.safetensors", other, other_optimizer)
    assert state == {"step": 7}
    assert torch.equal(torch.rand(3), expected_draw)  # the RNG continues where it was saved
    for a, b in zip(model.parameters(), other.parameters(), strict=True):
        assert torch.equal(a, b)
    saved, loaded = optimizer.state_dict(), other_optimizer.state_dict()
    for idx, values in saved["state"].items():
        for name, value in values.items():
            assert torch.equal(value, loaded["state"][idx][name])


def test_a_run_saved_by_the_unfused_adamw_resumes_into_the_fused_one(tmp_path):
    """Runs saved before training used the fused AdamW resume with it, and take the same step."""
    from seq2seq.training.train import adamw

    def one_step(model, optimizer):
        model(torch.tensor([[5, 3]]), torch.tensor([[2, 6]])).sum().backward()
        optimizer.step()
        optimizer.zero_grad()

    model = tiny_model()
    old = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.98), eps=1e-9, fused=False)
    one_step(model, old)
    checkpoint.save_training_state(tmp_path / "last.safetensors", model, old, {"step": 1})
    resumed = tiny_model(seed=9)
    fused = adamw(resumed, lr=1e-3)
    assert fused.defaults["fused"]
    checkpoint.load_training_state(tmp_path / "last.safetensors", resumed, fused)
    one_step(model, old)
    one_step(resumed, fused)
    for a, b in zip(model.parameters(), resumed.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "damage,message",
    [
        (lambda run: (run / "config.json").unlink(), "config.json is missing"),
        (lambda run: (run / "config.json").write_text("{not json"), "not a valid run config"),
        (lambda run: (run / "config.json").write_text('{"model": {"d_model": 3}}'), "not a valid run config"),
        (lambda run: (run / "config.json").write_text("[1, 2]"), "no 'model' section"),
        (lambda run: (run / "config.json").write_text('{"train": {}}'), "no 'model' section"),
        (lambda run: (run / ckpt.BEST).unlink(), "model.safetensors is missing"),
        (
            lambda run: (run / ckpt.BEST).write_bytes((run / ckpt.BEST).read_bytes()[:1000]),
            "not a readable safetensors file",
        ),
        (lambda run: (run / ckpt.TOKENIZER).unlink(), "no tokenizer at"),
    ],
)
def test_broken_run_directory_is_a_clean_error(run_dir, damage, message):
    damage(run_dir)
    with pytest.raises(Seq2SeqError, match=message):
        load_run(run_dir)


def test_missing_run_directory(tmp_path):
    with pytest.raises(Seq2SeqError, match="does not exist"):
        load_run(tmp_path / "nope")


def test_vocab_size_mismatch_between_tokenizer_and_model(run_dir):
    sections = json.loads((run_dir / "config.json").read_text())
    sections["model"]["vocab_size"] += 5
    (run_dir / "config.json").write_text(json.dumps(sections))
    with pytest.raises(Seq2SeqError, match=r"tokenizer has .* pieces but the model expects"):
        load_run(run_dir)


def test_weights_of_another_shape(run_dir):
    sections = json.loads((run_dir / "config.json").read_text())
    sections["model"]["d_ff"] = 128
    (run_dir / "config.json").write_text(json.dumps(sections))
    with pytest.raises(Seq2SeqError, match=r"does not fit the model in config\.json"):
        load_run(run_dir)


class Payload:
    """Unpickling this would create a marker file: proof that code ran."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_pickle_payload_is_refused_not_executed(run_dir, tmp_path):
    marker = tmp_path / "pwned"
    payload = pickle.dumps(Payload(str(marker)))
    (run_dir / ckpt.BEST).write_bytes(payload)
    with pytest.raises(Seq2SeqError, match="not a readable safetensors file"):
        load_run(run_dir)
    (run_dir / ckpt.LAST).write_bytes(payload)
    model = tiny_model()
    with pytest.raises(Seq2SeqError, match="not a readable safetensors file"):
        checkpoint.load_training_state(run_dir / ckpt.LAST, model, torch.optim.AdamW(model.parameters()))
    assert not marker.exists()


def test_failed_write_leaves_previous_checkpoint_intact(run_dir, monkeypatch):
    before = (run_dir / ckpt.BEST).read_bytes()

    def explode(tensors, filename, metadata=None):
        with open(filename, "wb") as f:
            f.write(b"half a file")
        raise OSError("disk full")

    monkeypatch.setattr(ckpt, "save_file", explode)
    with pytest.raises(Seq2SeqError, match=r"save .*safetensors \(disk full\); the previous"):
        ckpt.save_weights(tiny_model(seed=3, vocab_size=60), run_dir / ckpt.BEST)
    assert (run_dir / ckpt.BEST).read_bytes() == before
    assert sorted(p.name for p in run_dir.iterdir()) == [
        "config.json",
        "model.safetensors",
        "tokenizer.model",
    ]


@pytest.mark.parametrize(
    "train,message",
    [(None, "has no 'train' section"), ({"lr": 0.1, "colour": "blue"}, "does not know: colour")],
)
def test_a_train_section_missing_or_foreign_is_one_line(run_dir, train, message, capsys, monkeypatch):
    from seq2seq.training.resume import stored_train_config
    from tests.cli_helpers import run_cli

    sections = json.loads((run_dir / "config.json").read_text())
    sections.pop("train")
    if train is not None:
        sections["train"] = train
    (run_dir / "config.json").write_text(json.dumps(sections))
    with pytest.raises(Seq2SeqError, match=message):
        stored_train_config(run_dir)
    result = run_cli(["evaluate", "--run", run_dir], capsys, monkeypatch)  # it needs the languages alone
    said = message if train is None else "the 'train' section has no corpus"
    assert result.code == 2 and said in result.err and len(result.err.splitlines()) == 1


WRITER = """
import sys, time
from pathlib import Path
from seq2seq.runs import files as ckpt
from seq2seq.training import checkpoint
from tests.conftest import tiny_model
models = [tiny_model(seed=1), tiny_model(seed=2)]
path, end, i = Path(sys.argv[1]), time.monotonic() + float(sys.argv[2]), 0
while time.monotonic() < end:
    i += 1
    ckpt.save_weights(models[i % 2], path, val_bleu=[1.5, 12.25][i % 2])  # headers of two lengths
"""


def test_weights_read_while_a_run_saves_them_are_one_file_or_the_other(tmp_path):
    """A run replaces model.safetensors (a rename) whenever it validates better, while `translate`
    may be reading it: each read must get one whole file, never one file's header with another's
    data (safe_open opens the path twice: here that raised a RuntimeError or read weights under the
    other file's metadata)."""
    path, seconds = tmp_path / ckpt.BEST, 3.0
    ckpt.save_weights(tiny_model(seed=1), path, val_bleu=1.5)
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(seconds)], cwd=ROOT)
    expected = {1.5: tiny_model(seed=1).state_dict(), 12.25: tiny_model(seed=2).state_dict()}
    reads, scores = 0, set()
    try:
        while writer.poll() is None:
            tensors, metadata = ckpt.read_tensors(path)
            score = float(metadata["val_bleu"])
            assert all(
                torch.equal(v, expected[score][k]) for k, v in tensors.items()
            )  # header and data agree
            scores.add(score)
            reads += 1
    finally:
        writer.wait()
    assert writer.returncode == 0 and reads > 50 and scores == {1.5, 12.25}


@pytest.mark.parametrize(
    "damage",
    [
        lambda d: (2**63).to_bytes(8, "little") + d[8:],  # a length no read can honour
        lambda d: (2**50).to_bytes(8, "little") + d[8:],  # nor allocate
        lambda d: (200_000).to_bytes(8, "little") + b"[" * 100_000 + b"]" * 100_000,  # nested too deeply
        lambda d: d.replace(b'"12.25"', b"[12.25]"),  # metadata that is not strings, lengths kept
        lambda d: d[:-4],  # tensor data cut short
        lambda d: d + b"\0" * 8,  # more than the header declares
        lambda d: d[:5],
        lambda d: b"",
    ],
    ids=["length-2^63", "length-2^50", "nested", "metadata-list", "cut-short", "trailing", "tiny", "empty"],
)
def test_a_damaged_weights_file_has_no_best_score_and_does_not_load(run_dir, damage):
    path = run_dir / ckpt.BEST
    ckpt.save_weights(tiny_model(seed=1), path, val_bleu=12.25)
    assert ckpt.best_score(run_dir) == 12.25
    path.write_bytes(damage(path.read_bytes()))
    assert ckpt.best_score(run_dir) is None
    with pytest.raises(Seq2SeqError, match="not a readable safetensors file"):
        ckpt.load_weights(tiny_model(seed=1), path)
