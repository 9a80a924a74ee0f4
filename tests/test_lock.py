"""One writer per run directory: a second `train` or `tokenize` is refused naming the holder,
readers keep working, a killed holder leaves no stale lock, and an unwritable run is found first."""

import errno
import os
import subprocess
import sys

import pytest

from seq2seq.runs import files as ckpt
from seq2seq.runs.lock import run_lock
from tests.conftest import tiny_model, write_run

TINY = [
    "--preset",
    "tiny",
    "--max-steps",
    "2",
    "--max-tokens",
    "256",
    "--vocab-size",
    "60",
    "--device",
    "cpu",
]
HOLD = (
    "from seq2seq.runs.lock import run_lock\n"
    "with run_lock({run!r}):\n    print('locked', flush=True)\n    input()"
)


@pytest.mark.parametrize("command", [["train", *TINY], ["tokenize", "--vocab-size", "60"]])
def test_a_second_writer_is_refused_naming_the_holder(cli, corpus_dir, tmp_path, command):
    run = tmp_path / "run"
    with run_lock(run):
        result = cli(*command, "--data-dir", corpus_dir, "--run", run)
        assert sorted(p.name for p in run.iterdir()) == [".lock"]  # nothing written, nothing removed
    assert result.code == 2
    assert f"is being written by another seq2seq (pid {os.getpid()})" in result.err
    assert len(result.err.splitlines()) == 1
    assert not run.exists()  # the holder made it and wrote nothing: it leaves nothing either


def test_readers_work_while_a_writer_holds_the_run(cli, tmp_path):
    run = write_run(tmp_path / "run", lambda v: tiny_model(vocab_size=v))
    with run_lock(run):
        result = cli("translate", "--run", run, "--greedy", "a dog runs")
    assert result.code == 0 and len(result.out.splitlines()) == 1


def test_a_killed_holder_leaves_no_stale_lock(tmp_path):
    run = tmp_path / "run"
    code = HOLD.format(run=str(run))
    holder = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert holder.stdout.readline() == b"locked\n"
    holder.kill()  # SIGKILL: no cleanup runs
    holder.wait()
    with run_lock(run):
        assert (run / ".lock").read_text() == f"{os.getpid()}\n"


def test_a_run_directory_that_cannot_be_written_is_found_before_the_corpus(cli, tmp_path):
    (tmp_path / "file").write_text("not a folder")
    result = cli("train", *TINY, "--data-dir", tmp_path / "no-corpus", "--run", tmp_path / "file" / "run")
    assert result.code == 2 and "cannot write in" in result.err and "Not a directory" in result.err


def test_a_full_disk_while_saving_is_one_line_and_keeps_the_run(cli, corpus_dir, tmp_path, monkeypatch):
    def full(tensors, filename, metadata=None):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(ckpt, "save_file", full)
    result = cli("train", *TINY, "--data-dir", corpus_dir, "--run", tmp_path / "run")
    assert result.code == 2 and "No space left on device" in result.err
    assert len(result.err.strip().splitlines()) == 1
    assert not list((tmp_path / "run").glob(".*.tmp"))
