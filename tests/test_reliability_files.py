"""A run directory from someone else never makes `train` write outside it, a failed `train` leaves
nothing, and every file of a run gets a file's usual mode."""

import os
import shutil
import stat

import pytest
import torch

from seq2seq.errors import Seq2SeqError
from seq2seq.training import checkpoint as ckpt
from tests.conftest import caption_tokenizer, tiny_model, write_multi30k
from tests.helpers import train_args

WRITTEN = (ckpt.TOKENIZER, ckpt.CONFIG, ckpt.BEST, ckpt.LAST, ckpt.CURVES, ckpt.METRICS)


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
        ckpt.save_training_state(tmp_path / ckpt.LAST, model, optimizer, {"step": 0})
        if plots.available():
            row = {"step": 1, "train_loss": 1.0, "val_loss": 1.0, "val_bleu": 0.0, "val_chrf": 0.0}
            plots.learning_curves([row], tmp_path / ckpt.CURVES)
    finally:
        os.umask(mask)
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in tmp_path.iterdir()}
    assert modes and set(modes.values()) == {0o640}, {k: oct(v) for k, v in modes.items()}
