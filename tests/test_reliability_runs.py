"""Reliability, round three (issue 29, items 4 to 7): a resumed run is the same run after a stop as
after a kill, metrics.jsonl survives a failed append and a torn line, weight files cannot lie about
their dtype, and a run directory, trainer state or corpus altered in any way is one line, exit 2,
never a traceback."""

import shutil
from dataclasses import replace

import pytest
import torch
from safetensors.torch import load_file

from seq2seq.errors import Seq2SeqError
from seq2seq.training import checkpoint as ckpt
from seq2seq.training.config import TrainConfig
from seq2seq.training.train import train
from tests.helpers import REVERSE_MODEL, assert_same_training_state, write_reversal_task

VALIDATION = ("step", "epoch", "batch", "val_loss", "val_bleu", "val_chrf", "best")  # not the timings


def validations(run) -> list[tuple]:
    return [tuple(row[k] for k in VALIDATION) for row in ckpt.read_metrics(run)]


@pytest.fixture(scope="module")
def reversal(tmp_path_factory):
    root = tmp_path_factory.mktemp("reversal")
    corpus = write_reversal_task(root / "data", n_train=300, n_val=10)
    config = TrainConfig(
        corpus=corpus, src="src", tgt="tgt", vocab_size=32, max_tokens=512, warmup=5, epochs=3,
        device="cpu", bf16=False,
    )  # fmt: skip
    model = replace(REVERSE_MODEL, d_model=32, d_ff=64, dropout=0.1)
    train(root / "straight", config, model)
    return root, config, model


def start_from_tokenizer(root, name):
    (root / name).mkdir()
    shutil.copy(root / "straight" / ckpt.TOKENIZER, root / name / ckpt.TOKENIZER)
    return root / name


@pytest.mark.parametrize("where", ["mid-epoch", "just after a validation"])
def test_a_stopped_then_resumed_run_is_the_uninterrupted_run(reversal, where):
    """SIGTERM or Ctrl-C (the handler's flag), then the same command: the weights, the optimizer
    and every validation row equal the run that was never stopped (the stop validated nothing that
    could count toward patience or best weights, the averaged weights' row included: a stop that
    lands right after an epoch's validation once wrote that row, seen with torchrun on 16 cores)."""
    root, config, model = reversal
    straight = validations(root / "straight")
    per_epoch = straight[0][0]
    assert per_epoch >= 3 and len(straight) == 4  # 3 epochs, then the mean of their weights
    run, asked = start_from_tokenizer(root, f"stopped {where}"), []
    stop_at = per_epoch + 2 if where == "mid-epoch" else per_epoch  # the check before the next step
    first = train(run, config, model, should_stop=lambda: asked.append(1) or len(asked) > stop_at)
    assert first == {"step": stop_at, "stop": "interrupted"}
    assert validations(run) == straight[:1]  # the stop itself validated nothing
    second = train(run, config, model)
    assert second["stop"] == "epochs"
    assert_same_training_state(root / "straight", run)
    assert validations(run) == validations(root / "straight")
    best, straight_best = load_file(run / ckpt.BEST), load_file(root / "straight" / ckpt.BEST)
    assert all(torch.equal(best[name], straight_best[name]) for name in straight_best)


def test_a_failed_metrics_append_is_redone_by_the_rerun(reversal, monkeypatch):
    root, config, model = reversal
    run = start_from_tokenizer(root, "append")

    def full_disk(run_dir, row):
        raise Seq2SeqError(f"cannot save {run_dir / ckpt.METRICS} (No space left on device)")

    monkeypatch.setattr(ckpt, "append_metrics", full_disk)
    with pytest.raises(Seq2SeqError, match="No space left"):
        train(run, config, model)
    monkeypatch.undo()
    train(run, config, model)
    assert validations(run) == validations(root / "straight")


def test_a_torn_last_metrics_line_is_dropped_not_fatal(reversal):
    root, config, model = reversal
    run, asked = start_from_tokenizer(root, "torn"), []
    per_epoch = validations(root / "straight")[0][0]
    # stopped after the first epoch's validation (the same budget: a smaller one would cool the
    # learning rate down sooner, and train another run)
    train(run, config, model, should_stop=lambda: asked.append(1) or len(asked) > per_epoch)
    with open(run / ckpt.METRICS, "a") as f:
        f.write('{"step": 99, "val_lo')  # a kill or a full disk in the middle of a row
    train(run, config, model)
    assert validations(run) == validations(root / "straight")
    (run / ckpt.METRICS).write_text('{"step": 1}\nnot json\n{"step": 2}\n')
    with pytest.raises(Seq2SeqError, match="line 2 is not a JSON row"):
        ckpt.read_metrics(run)
