"""A run directory as the CLI finds it, perhaps received from someone else: links in it are replaced,
never followed (its lock included), its files get a file's usual mode, a failed `train` leaves no
folder behind, and a config, weights or trainer state broken or altered in any way is one line,
exit 2, never a traceback."""

import json
import os
import shutil
import stat

import pytest
import torch
from safetensors.torch import load_file, save_file

from seq2seq.errors import Seq2SeqError
from seq2seq.runs import files as ckpt
from seq2seq.training import checkpoint
from tests.cli_helpers import run_cli
from tests.conftest import caption_tokenizer, tiny_model, write_multi30k
from tests.helpers import TRAIN, train_args

WRITTEN = (ckpt.TOKENIZER, ckpt.CONFIG, ckpt.BEST, ckpt.LAST, ckpt.CURVES, ckpt.METRICS)


RUN_TRAINED = True  # conftest's `run` is the CLI-trained tiny run


def snapshot(folder) -> dict:
    """Every entry under `folder`: a file's bytes, a link's target, a folder's name."""
    out = {}
    for p in sorted(folder.rglob("*")):
        key = str(p.relative_to(folder))
        out[key] = os.readlink(p) if p.is_symlink() else p.read_bytes() if p.is_file() else "dir"
    return out


def test_open_no_follow_refuses_a_link(tmp_path):
    from seq2seq.atomic import open_no_follow

    (tmp_path / "outside").write_text("precious")
    (tmp_path / "link").symlink_to(tmp_path / "outside")
    (tmp_path / "dangling").symlink_to(tmp_path / "nothing")
    for name in ("link", "dangling"):
        with pytest.raises(Seq2SeqError, match=f"{name} is a symbolic link"):
            open_no_follow(tmp_path / name, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    assert (tmp_path / "outside").read_text() == "precious" and not (tmp_path / "nothing").exists()
    fd = open_no_follow(tmp_path / "new", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    os.write(fd, b"row\n")
    os.close(fd)
    assert (tmp_path / "new").read_bytes() == b"row\n"


@pytest.mark.parametrize("command", ["train", "tokenize"])
@pytest.mark.parametrize("target", ["existing", "dangling"])
def test_a_lock_that_is_a_link_is_refused(cli, tmp_path, command, target):
    data = write_multi30k(tmp_path / "corpus", {"train": 20, "val": 4})
    outside, run = tmp_path / "outside", tmp_path / "run"
    if target == "existing":
        outside.write_text("precious")
    run.mkdir()
    (run / ".lock").symlink_to(outside)
    args = train_args(data, run) if command == "train" else ["tokenize", "--data-dir", data, "--run", run]
    result = cli(*args)
    assert result.code == 2 and "run/.lock is a symbolic link" in result.err, result.err
    assert len(result.err.strip().splitlines()) == 1
    if target == "existing":
        assert outside.read_text() == "precious"
    else:
        assert not outside.exists()
    assert sorted(p.name for p in run.iterdir()) == [".lock"]


def test_links_in_a_received_run_are_replaced_never_followed(cli, tmp_path):
    """Each file `train` writes, and the tokenized/ folder, as a link to something outside the
    run: first dangling links in a new run, then links to copies of the run's own files."""
    data = write_multi30k(tmp_path / "corpus", {"train": 60, "val": 6})
    run, outside = tmp_path / "run", tmp_path / "outside"
    run.mkdir()
    (outside / "tokenized" / "train-theirs").mkdir(parents=True)
    (outside / "tokenized" / "train-theirs" / "report.json").write_text("precious")
    for name in WRITTEN:
        (run / name).symlink_to(outside / name)  # nothing there yet
    (run / "tokenized").symlink_to(outside / "tokenized")
    (run / ".stale.tmp").mkdir()  # a folder named like a temporary: not ours to delete
    before = snapshot(outside)
    result = cli(*train_args(data, run))
    assert result.code == 0, result.err
    assert snapshot(outside) == before
    for name in (*WRITTEN, "tokenized"):
        assert not (run / name).is_symlink(), name

    moved = tmp_path / "moved"  # now the links name real files: the run's own, moved out
    moved.mkdir()
    for name in (*WRITTEN, "tokenized"):
        shutil.move(run / name, moved / name)
        (run / name).symlink_to(moved / name)
    before = snapshot(moved)
    result = cli(*train_args(data, run, steps=6))
    assert result.code == 0 and "resuming from step 4" in result.out, result.err
    assert snapshot(moved) == before
    for name in (ckpt.CONFIG, ckpt.LAST, ckpt.CURVES, ckpt.METRICS, "tokenized"):  # rewritten, in the run
        assert not (run / name).is_symlink() and (run / name).exists(), name
    rows = [row["step"] for row in ckpt.read_metrics(run)]
    assert rows[0] == 4 and rows[-1] == 6  # the rows read through the link, and the new one


@pytest.mark.parametrize("made", ["new", "nested", "existing"])
def test_a_failed_train_leaves_no_empty_run_directory(cli, tmp_path, made):
    run = {"new": tmp_path / "run", "nested": tmp_path / "a" / "b" / "run", "existing": tmp_path / "run"}[
        made
    ]
    if made == "existing":
        run.mkdir()
    result = cli(*train_args(tmp_path / "no-corpus", run))
    assert result.code == 2 and "does not exist" in result.err, result.err
    assert run.is_dir() == (made == "existing")  # a folder the user made stays
    if made != "existing":
        assert list(tmp_path.iterdir()) == []  # and the folders made for it go


def test_every_run_file_gets_a_files_usual_mode(tmp_path):
    """0666 and 0777 less the umask, as for any file the user makes: the weights no more private
    than config.json (mkstemp and safetensors make 0600)."""
    from seq2seq.training.config import TrainConfig
    from seq2seq.views import plots

    mask = os.umask(0o027)
    try:
        tokenizer = caption_tokenizer(tmp_path / ckpt.TOKENIZER)
        model = tiny_model(vocab_size=tokenizer.vocab_size)
        ckpt.save_config(tmp_path, ckpt.config_sections(model.cfg, TrainConfig(), tokenizer))
        ckpt.save_weights(model, tmp_path / ckpt.BEST)
        optimizer = torch.optim.AdamW(model.parameters())
        checkpoint.save_training_state(tmp_path / ckpt.LAST, model, optimizer, {"step": 0})
        if plots.available():
            row = {"step": 1, "train_loss": 1.0, "val_loss": 1.0, "val_bleu": 0.0, "val_chrf": 0.0}
            plots.learning_curves([row], tmp_path / ckpt.CURVES)
    finally:
        os.umask(mask)
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in tmp_path.iterdir()}
    assert modes and set(modes.values()) == {0o640}, {k: oct(v) for k, v in modes.items()}


# --- one line, exit 2, for everything a run directory or a trainer state can hold -----------------


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
