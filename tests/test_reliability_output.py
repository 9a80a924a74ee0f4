"""Where the CLI writes: a device or a FIFO is written to, never replaced by a file; the input is
never the output; a reader that leaves is no error; what the CLI cannot honour it says."""

import os
import stat
import subprocess
import sys
import threading

import pytest

from tests.conftest import tiny_model, write_run
from tests.helpers import evaluate_args


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return write_run(tmp_path_factory.mktemp("output-run"), lambda v: tiny_model(vocab_size=v, seed=3))


def full_device(tmp_path):
    """A device whose every write fails with ENOSPC: a private copy of /dev/full where we may
    make one, so a regression replaces that copy and never the system's /dev/full."""
    path = tmp_path / "full"
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 7))
        with open(path, "wb"):
            return path
    except OSError:
        path.unlink(missing_ok=True)
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    return "/dev/full"


class FifoReader(threading.Thread):
    """Reads a FIFO to its end in the background, as `cat FIFO` would."""

    def __init__(self, path):
        super().__init__(daemon=True)
        self.path, self.data = path, None
        self.start()

    def run(self):
        with open(self.path, "rb") as f:
            self.data = f.read()


@pytest.mark.parametrize("command", ["translate", "evaluate"])
def test_a_fifo_output_is_written_to_not_replaced(run, cli, tmp_path, command):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    reader = FifoReader(fifo)
    if command == "translate":
        args = ["translate", "--run", run, "a dog runs", "the cat sleeps"]
    else:
        args = [*evaluate_args(run, tmp_path), "--greedy"]
    result = cli(*args, "--output", fifo)
    reader.join(timeout=20)
    assert result.code == 0, result.err
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)  # still the FIFO
    assert reader.data is not None and reader.data.count(b"\n") == 2
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "src.txt") == ["fifo"]


@pytest.mark.parametrize("command", ["translate", "evaluate"])
def test_a_full_device_is_reported_in_one_line(run, cli, tmp_path, command):
    full = full_device(tmp_path)
    args = ["translate", "--run", run, "a dog"] if command == "translate" else evaluate_args(run, tmp_path)
    result = cli(*args, "--output", full)
    assert result.code == 2 and "No space left on device" in result.err, result.err
    assert len(result.err.strip().splitlines()) == 1 and "Traceback" not in result.err
    assert stat.S_ISCHR(os.stat(full).st_mode)  # still the device
    assert not [p for p in tmp_path.iterdir() if "partial" in p.name or p.name.endswith(".tmp")]


def test_output_through_a_link_writes_the_file_it_names(run, cli, tmp_path):
    (tmp_path / "real.txt").write_text("old\n")
    (tmp_path / "link.txt").symlink_to("real.txt")
    result = cli("translate", "--run", run, "a dog runs", "--output", tmp_path / "link.txt")
    assert result.code == 0, result.err
    assert (tmp_path / "link.txt").is_symlink()  # the user's link is kept
    assert (tmp_path / "real.txt").read_text() != "old\n"
    assert (tmp_path / "real.txt").read_text().count("\n") == 1


@pytest.mark.parametrize("spelling", ["same", "link", "dots"])
@pytest.mark.parametrize("command", ["translate", "evaluate"])
def test_the_output_is_never_the_input(run, cli, tmp_path, command, spelling):
    if command == "translate":
        source = tmp_path / "in.txt"
        source.write_text("a dog runs\nthe cat sleeps\n")
        args = ["translate", "--run", run, "--input", source]
    else:
        args, source = evaluate_args(run, tmp_path), tmp_path / "src.txt"
    (tmp_path / "link.txt").symlink_to(source)
    output = {
        "same": source,
        "link": tmp_path / "link.txt",
        "dots": tmp_path / ".." / tmp_path.name / source.name,
    }
    before = source.read_bytes()
    result = cli(*args, "--output", output[spelling])
    assert result.code == 2 and "is also an input" in result.err, result.err
    assert len(result.err.strip().splitlines()) == 1
    assert source.read_bytes() == before


def test_the_output_is_never_the_file_stdin_reads(run, tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("a dog runs\n")
    with open(source, "rb") as stdin:
        proc = subprocess.run(
            [sys.executable, "-m", "seq2seq", "translate", "--run", str(run), "--output", str(source)],
            stdin=stdin,
            capture_output=True,
            timeout=120,
        )
    assert proc.returncode == 2 and b"is also an input (standard input)" in proc.stderr, proc.stderr
    assert source.read_text() == "a dog runs\n"


def test_a_min_len_above_the_models_limit_is_said(run, cli):
    result = cli("translate", "--run", run, "--greedy", "--min-len", "500", "a dog")
    limit = 63  # tiny_model's max_positions - 1
    assert result.code == 0, result.err
    assert f"min-len 500 is above the model's longest output ({limit} pieces)" in result.err
    assert result.err.count("\n") == 1
    quiet = cli("translate", "--run", run, "--greedy", "--min-len", "3", "a dog")
    assert quiet.code == 0 and quiet.err == ""


@pytest.mark.parametrize(
    "args",
    [
        ["evaluate", "--greedy"],
        ["evaluate", "--greedy", "--json"],
        ["tokenize", "a dog runs"],
    ],
    ids=["evaluate", "evaluate-json", "tokenize"],
)
def test_a_reader_that_left_is_no_error(run, tmp_path, args):
    """`seq2seq evaluate ... | true`: exit 0 and nothing on stderr, as `translate | head` does."""
    if args[0] == "evaluate":
        args = [*evaluate_args(run, tmp_path), *args[1:]]
    else:
        args = [args[0], "--run", run, *args[1:]]
    read, write = os.pipe()
    os.close(read)  # the reader has gone before the first line
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "seq2seq", *map(str, args)],
            stdout=write,
            stderr=subprocess.PIPE,
            timeout=120,
        )
    finally:
        os.close(write)
    assert proc.returncode == 0 and proc.stderr == b"", proc.stderr.decode()
