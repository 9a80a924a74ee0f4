"""Reliability, round three (issue 29, items 4 to 7): a resumed run is the same run after a stop as
after a kill, metrics.jsonl survives a failed append and a torn line, weight files cannot lie about
their dtype, and a run directory, trainer state or corpus altered in any way is one line, exit 2,
never a traceback."""

import json
import shutil
from dataclasses import replace

import pytest
import torch
from safetensors.torch import load_file, save_file

from seq2seq.errors import Seq2SeqError
from seq2seq.training import checkpoint as ckpt
from seq2seq.training.config import TrainConfig
from seq2seq.training.train import train
from tests.cli_helpers import run_cli
from tests.helpers import REVERSE_MODEL, TRAIN, assert_same_training_state, write_reversal_task

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


# --- one line, exit 2, for everything a run directory, a state or a corpus can hold --------------


def altered_copy(tiny_run, tmp_path, change):
    run, data = tiny_run
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    change(copy)
    return copy, data


def edit_config(section, key, value):
    def change(run):
        sections = json.loads((run / ckpt.CONFIG).read_text())
        sections[section][key] = value
        (run / ckpt.CONFIG).write_text(json.dumps(sections))

    return change


def edits(*changes):
    return lambda run: [change(run) for change in changes]


def deep_nesting(run):
    (run / ckpt.CONFIG).write_text("[" * 100_000 + "]" * 100_000)


def edit_tensors(path_name, change_tensors):
    def change(run):
        metadata = ckpt.read_metadata(run / path_name)
        tensors = load_file(run / path_name)
        change_tensors(tensors, metadata)
        save_file(tensors, str(run / path_name), metadata=metadata)

    return change


def lying_dtype(tensors, metadata):
    tensors["embed.weight"] = tensors["embed.weight"].to(torch.int32)


def nan_weights(tensors, metadata):
    tensors["embed.weight"][3, 0] = float("nan")


def state_json(key, value):
    def change(tensors, metadata):
        state = json.loads(metadata["trainer_state"])
        state[key] = value
        metadata["trainer_state"] = json.dumps(state)

    return change


def no_param_groups(tensors, metadata):
    optimizer = json.loads(metadata["optimizer"])
    optimizer["param_groups"] = []
    metadata["optimizer"] = json.dumps(optimizer)


def bad_rng(tensors, metadata):
    tensors["rng.cpu"] = torch.zeros(3, dtype=torch.float32)


def bad_moment_shape(tensors, metadata):
    name = next(k for k in tensors if k.endswith(".exp_avg"))
    tensors[name] = torch.zeros(2, 2)


TRANSLATE, RESUME = ["translate", "a dog"], [*TRAIN[:3], "--max-steps", "6", *TRAIN[5:]]
ALTERED = {  # what is changed -> (the change, the command that reads it, a word of the message)
    "d_model a string": (edit_config("model", "d_model", "128"), TRANSLATE, "d_model must be an integer"),
    "d_model negative": (edit_config("model", "d_model", -128), TRANSLATE, "d_model must be between"),
    "n_heads 0": (edit_config("model", "n_heads", 0), TRANSLATE, "n_heads must be between"),
    "n_heads 3": (edit_config("model", "n_heads", 3), TRANSLATE, "multiple of n_heads"),
    "dropout NaN": (edit_config("model", "dropout", float("nan")), TRANSLATE, "dropout must be finite"),
    "max_positions 1e12": (edit_config("model", "max_positions", 10**12), TRANSLATE, "max_positions"),
    "vocab_size a string": (edit_config("model", "vocab_size", "8000"), TRANSLATE, "vocab_size must be"),
    "nested 100k deep": (deep_nesting, TRANSLATE, "not a valid run config"),
    "train lr a string": (edit_config("train", "lr", "fast"), RESUME, "lr must be a number"),
    "train epochs -1": (edit_config("train", "max_tokens", -1), RESUME, "max_tokens must be between"),
    "train late_dropout 1.5": (
        edit_config("train", "late_dropout", 1.5),
        RESUME,
        "late_dropout must be between",
    ),
    "train r_drop on": (edit_config("train", "r_drop", 1.0), RESUME, "is a run of an older recipe"),
    "weights int32": (edit_tensors(ckpt.BEST, lying_dtype), TRANSLATE, "torch.int32, not torch.float32"),
    "weights NaN": (edit_tensors(ckpt.BEST, nan_weights), TRANSLATE, "NaN or infinite"),
    "state step a string": (edit_tensors(ckpt.LAST, state_json("step", "4")), RESUME, "step is not a number"),
    "state step negative": (edit_tensors(ckpt.LAST, state_json("step", -4)), RESUME, "step is negative"),
    "state batch a float": (
        edit_tensors(ckpt.LAST, state_json("batch", 2.5)),
        RESUME,
        "batch is not a number",
    ),
    "state unknown key": (edit_tensors(ckpt.LAST, state_json("mood", 1)), RESUME, "does not know"),
    "optimizer groups": (edit_tensors(ckpt.LAST, no_param_groups), RESUME, "does not fit this model"),
    "rng state": (edit_tensors(ckpt.LAST, bad_rng), RESUME, "does not fit this model"),
    "moment shapes": (edit_tensors(ckpt.LAST, bad_moment_shape), RESUME, "does not fit this model"),
}


@pytest.mark.parametrize("what", ALTERED)
def test_an_altered_run_directory_is_one_line(what, tiny_run, tmp_path, capsys, monkeypatch):
    """In this process (a subprocess each costs seconds): any exception but the CLI's exit fails."""
    change, command, message = ALTERED[what]
    run, data = altered_copy(tiny_run, tmp_path, change)
    args = [*command, "--run", run, *(["--data-dir", data] if command is RESUME else [])]
    result = run_cli(args, capsys, monkeypatch)
    assert result.code == 2 and message in result.err, result.err
    assert len(result.err.strip().splitlines()) == 1 and "Traceback" not in result.err
