"""Training stopped at any moment, by SIGKILL, SIGINT or SIGTERM, a stop request or a failed metrics
append, leaves a run that loads and that the same command resumes: a resumed run is the run that was
never stopped, and metrics.jsonl survives a failed append and a torn last line. A loss that stops
being finite ends training with the last checkpoint kept, and a run stopped before its first step
is not called complete."""

import random
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import replace

import pytest
import torch
from safetensors.torch import load_file

from seq2seq.errors import Seq2SeqError
from seq2seq.models.registry import build_model
from seq2seq.models.transformer import Transformer
from seq2seq.runs import files as ckpt
from seq2seq.runs.load import load_run
from seq2seq.training import checkpoint
from seq2seq.training.config import TrainConfig
from seq2seq.training.loop import Loop
from seq2seq.training.train import train
from tests.cli_helpers import run_process
from tests.conftest import saved_step, write_multi30k
from tests.helpers import REVERSE_MODEL, TRAIN, assert_same_training_state, record_steps, write_reversal_task


def start_training(data, run, max_steps=100000, *more):
    args = [*TRAIN[:3], "--max-steps", str(max_steps), *TRAIN[5:], *more, "--data-dir", data, "--run", run]
    return subprocess.Popen(
        [sys.executable, "-m", "seq2seq", *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


def assert_loadable(run):
    """The last checkpoint, if any, loads completely; so do the best weights, once a validation has
    written them (with --save-every-minutes 0 the state is saved after every step, before that)."""
    if not (run / ckpt.LAST).exists():
        return 0
    if (run / ckpt.BEST).exists():
        load_run(run, weights=ckpt.BEST)
    model = build_model(ckpt.model_config(ckpt.load_config(run)))
    state = checkpoint.load_training_state(run / ckpt.LAST, model, torch.optim.AdamW(model.parameters()))
    return state["step"]


def wait_for(path, seconds=120, newer_than=-1):
    """Until `path` exists with a modification time after `newer_than` (ns)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists() and path.stat().st_mtime_ns > newer_than:
            return
        time.sleep(0.05)
    raise AssertionError(f"{path} was not written within {seconds} s")


def test_sigkill_at_random_moments_never_corrupts_the_run(tmp_path):
    """Each run saves after every step and is killed at a random moment after it has written a
    checkpoint of its own (not during start-up), so kills land mid-step, mid-validation, mid-write."""
    data = write_multi30k(tmp_path / "corpus", {"train": 40, "val": 4})
    run, rng, steps = tmp_path / "run", random.Random(7), []
    for _ in range(3):
        before = (run / ckpt.LAST).stat().st_mtime_ns if (run / ckpt.LAST).exists() else -1
        proc = start_training(data, run, 100000, "--save-every-minutes", "0")
        wait_for(run / ckpt.LAST, newer_than=before)
        # a run resumed at an epoch's end first validates and saves the same step: wait for a new one
        deadline = time.monotonic() + 120
        while saved_step(run) <= (steps[-1] if steps else 0) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(rng.uniform(0.0, 1.0))
        proc.kill()
        proc.wait()
        steps.append(assert_loadable(run))
    assert steps == sorted(steps) and steps[0] > 0 and len(set(steps)) == 3, steps  # each one trained
    result = run_process(
        [*TRAIN[:3], "--max-steps", str(steps[-1] + 3), *TRAIN[5:], "--data-dir", data, "--run", run]
    )
    assert result.code == 0, result.err
    assert f"resuming from step {steps[-1]}" in result.out
    assert not list(run.glob(".*.tmp"))


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_sigint_and_sigterm_save_the_current_step(tmp_path, signum):
    data = write_multi30k(tmp_path / "corpus", {"train": 200, "val": 4})
    run = tmp_path / "run"
    proc = start_training(data, run)
    wait_for(run / ckpt.METRICS)
    time.sleep(0.5)
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err.decode()
    step = assert_loadable(run)
    assert f"interrupted at step {step}" in out.decode() and step > 0


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
def test_a_stopped_then_resumed_run_is_the_uninterrupted_run(reversal, where, monkeypatch):
    """SIGTERM or Ctrl-C (the handler's flag), then the same command: the weights, the optimizer
    and every validation row equal the run that was never stopped (the stop validated nothing that
    could count toward patience or best weights, the averaged weights' row included, which a stop
    landing right after an epoch's validation must not write either)."""
    root, config, model = reversal
    straight = validations(root / "straight")
    per_epoch = straight[0][0]
    assert per_epoch >= 3 and len(straight) == 4  # 3 epochs, then the mean of their weights
    run, steps = start_from_tokenizer(root, f"stopped {where}"), []
    stop_at = per_epoch + 2 if where == "mid-epoch" else per_epoch  # asked before the next step
    with monkeypatch.context() as patched:
        patched.setattr(Loop, "_train_step", record_steps(Loop._train_step, steps))
        first = train(run, config, model, should_stop=lambda: len(steps) >= stop_at)
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


def test_non_finite_loss_stops_and_keeps_last_checkpoint(tmp_path, monkeypatch):
    data = write_multi30k(tmp_path / "corpus", {"train": 40, "val": 4})
    config = TrainConfig(vocab_size=60, max_tokens=256, max_steps=2, warmup=2, device="cpu")
    from tests.helpers import REVERSE_MODEL

    train(tmp_path / "run", config, REVERSE_MODEL, data_dir=str(data))
    before = (tmp_path / "run" / ckpt.LAST).read_bytes()
    monkeypatch.setattr(
        Transformer,
        "forward",
        lambda self, src, tgt, keep, record=None: torch.full(
            (int(keep.sum()), self.cfg.vocab_size), float("nan")
        ),
    )
    with pytest.raises(Exception, match="loss became nan at step 3"):
        train(
            tmp_path / "run",
            TrainConfig(**{**config.__dict__, "max_steps": 5}),
            REVERSE_MODEL,
            data_dir=str(data),
        )
    assert (tmp_path / "run" / ckpt.LAST).read_bytes() == before


@pytest.mark.parametrize(
    "stop,message",
    [
        ("max minutes", "time limit was spent before a step could run"),
        ("interrupted", "before a step could run"),
    ],
)
def test_a_run_stopped_before_its_first_step_is_not_called_complete(stop, message, capsys, tmp_path):
    from seq2seq.cli.display import training_done

    training_done(tmp_path, {"step": 0, "stop": stop})
    said = capsys.readouterr().out
    assert message in said and "complete" not in said
