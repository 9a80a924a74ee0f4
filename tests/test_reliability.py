"""What happens when users feed the translator anything and kill training at any moment."""

import random
import signal
import subprocess
import sys
import time

import pytest
import torch

from seq2seq.models.registry import build_model
from seq2seq.models.transformer import Transformer
from seq2seq.training import checkpoint as ckpt
from seq2seq.training.config import TrainConfig
from seq2seq.training.train import train
from tests.cli_helpers import run_process
from tests.conftest import saved_step, write_multi30k
from tests.helpers import TRAIN


def test_non_finite_loss_stops_and_keeps_last_checkpoint(tmp_path, monkeypatch):
    data = write_multi30k(tmp_path / "corpus", {"train": 40, "val": 4})
    config = TrainConfig(vocab_size=60, max_tokens=256, max_steps=2, warmup=2, device="cpu")
    from tests.helpers import REVERSE_MODEL

    train(tmp_path / "run", config, REVERSE_MODEL, data_dir=str(data))
    before = (tmp_path / "run" / ckpt.LAST).read_bytes()
    monkeypatch.setattr(
        Transformer,
        "forward",
        lambda self, src, tgt, keep: torch.full((int(keep.sum()), self.cfg.vocab_size), float("nan")),
    )
    with pytest.raises(Exception, match="loss became nan at step 3"):
        train(
            tmp_path / "run",
            TrainConfig(**{**config.__dict__, "max_steps": 5}),
            REVERSE_MODEL,
            data_dir=str(data),
        )
    assert (tmp_path / "run" / ckpt.LAST).read_bytes() == before


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
        ckpt.load_run(run, weights=ckpt.BEST)
    model = build_model(ckpt.model_config(ckpt.load_config(run)))
    state = ckpt.load_training_state(run / ckpt.LAST, model, torch.optim.AdamW(model.parameters()))
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


@pytest.mark.parametrize(
    "stop,message",
    [("max minutes", "budget was spent before a step could run"), ("interrupted", "before a step could run")],
)
def test_a_run_stopped_before_its_first_step_is_not_called_complete(stop, message, capsys, tmp_path):
    from seq2seq.cli.display import training_done

    training_done(tmp_path, {"step": 0, "stop": stop})
    said = capsys.readouterr().out
    assert message in said and "complete" not in said
