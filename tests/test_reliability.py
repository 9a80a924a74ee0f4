"""What happens when users feed the translator anything and kill training at any moment."""

import random
import shutil
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


@pytest.fixture(scope="module")
def run(tiny_run):
    return tiny_run[0]


@pytest.mark.parametrize(
    "args,message",
    [
        (["--beam", "0"], "beam size must be at least 1"),
        (["--max-len", "-3"], "lengths must be positive"),
        (["--min-len", "-1"], "lengths must be positive"),
        (["--min-len", "9", "--max-len", "4"], "min-len 9 is above max-len 4"),
        (["--beam", "2", "--nbest", "3"], "nbest must be between 1 and the beam size 2"),
        (["--batch-size", "0"], "batch size must be at least 1"),
        (["--length-penalty", "300"], "length penalty must be between 0 and 10, got 300"),
        (["--length-penalty", "-1"], "length penalty must be between 0 and 10, got -1"),
        (["caf\udce9"], "argument 1 is not valid UTF-8"),  # the byte 0xe9, as Python passes it on
        (["--beam", "100000"], "beam size 100000 is above the vocabulary's"),
    ],
)
def test_bad_translate_options(run, cli, args, message):
    result = cli("translate", "--run", run, *args, "hello")
    assert result.code == 2 and message in result.err and result.err.count("\n") == 1


def test_score_refuses_an_overflowing_length_penalty(run, cli, tmp_path):
    (tmp_path / "f").write_text("a dog\n")
    result = cli("score", "--run", run, "--source", tmp_path / "f", "--target", tmp_path / "f",
                 "--length-penalty", "300")  # fmt: skip
    assert result.code == 2 and "length penalty must be between 0 and 10" in result.err


def test_bad_train_options_and_corpora(cli, tmp_path):
    data = write_multi30k(tmp_path / "corpus", {"train": 5, "val": 2})
    cases = [
        (["--preset", "huge"], "'huge' is not one of tiny, small, base"),
        (["--src", "en", "--tgt", "xx"], "no language 'xx'"),
        (["--data-dir", tmp_path / "missing"], "does not exist"),
        (["--subword-alpha", "1.5"], "Invalid value for '--subword-alpha'"),
        (["--subword-alpha", "nan"], "Invalid value for '--subword-alpha'"),
        (["--label-smoothing", "-0.1"], "Invalid value for '--label-smoothing'"),
        (["--weight-decay", "-0.1"], "Invalid value for '--weight-decay'"),
        (["--decay", "cosine"], "Invalid value for '--decay': 'cosine' is not one of rsqrt, none"),
    ]  # what follows "Invalid value" in a range error is Typer's wording, which changes between versions
    for args, message in cases:
        result = cli("train", "--data-dir", data, "--run", tmp_path / "run", *args)
        assert result.code == 2 and message in result.err and len(result.err.splitlines()) == 1, result.err
    (data / "train.en.gz").write_bytes(b"")
    result = cli("train", "--data-dir", data, "--run", tmp_path / "run")
    assert result.code == 2 and "train.en.gz is empty" in result.err, result.err


def test_corpus_whose_every_pair_is_filtered(cli, tmp_path):
    (tmp_path / "train.en").write_text("\n\n")
    (tmp_path / "train.fr").write_text("x\n\n")
    (tmp_path / "val.en").write_text("a\n")
    (tmp_path / "val.fr").write_text("b\n")
    result = cli("train", "--data-dir", tmp_path, "--run", tmp_path / "run")
    assert result.code == 2 and "every one of the 2 training pairs was filtered out" in result.err


@pytest.mark.parametrize(
    "damage,message",
    [
        (lambda run: (run / ckpt.BEST).write_bytes(b"\x00" * 50), "not a readable safetensors file"),
        (lambda run: (run / "config.json").write_text("[]"), "not a valid run config"),
        (lambda run: (run / ckpt.TOKENIZER).unlink(), "no tokenizer at"),
    ],
)
def test_broken_run_directory_from_the_cli(run, cli, tmp_path, damage, message):
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    damage(copy)
    for command in (
        ["translate", "hello"],
        ["evaluate", "--source", copy / "config.json", "--reference", copy / "config.json"],
    ):
        result = cli(command[0], "--run", copy, *command[1:])
        assert result.code == 2 and message in result.err and "Traceback" not in result.err


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


def test_out_of_gpu_memory_is_a_one_line_hint(run, cli, monkeypatch):
    """The CUDA path's error, raised where a GPU would raise it (no GPU needed to test the answer)."""
    import seq2seq.decoding.search as decode

    def out_of_memory(*args, **kwargs):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    monkeypatch.setattr(decode, "search", out_of_memory)
    result = cli("translate", "--run", run, "a dog runs")
    assert result.code == 2 and "out of GPU memory: lower --max-tokens (train) or --batch-size" in result.err
    assert len(result.err.splitlines()) == 1
