"""Where the CLI writes. Every file `translate` writes (the translations, the attention pictures, the
explorer page), and `evaluate --output`, goes through one output path: none may destroy an input,
the run, or another output; a FIFO, a device or a link is written through, never replaced by a
file, and a full device is one line, exit 2. What `translate` cannot honour it says: a --min-len
past the model's longest output."""

import os
import stat
import subprocess
import sys
import threading

import pytest

from seq2seq.stream import views as views_cli
from tests.helpers import evaluate_args

FLAGS = ["--output", "--attention-html", "--attention-png"]


RUN_SEED = 5  # the `run` fixture's weights (conftest.py)


def one_line_error(result, words: str) -> None:
    assert result.code == 2 and words in result.err, result.err
    assert len(result.err.strip().splitlines()) == 1 and "Traceback" not in result.err


def snapshot(folder) -> dict:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.mark.parametrize("spelling", ["same", "link"])
@pytest.mark.parametrize("flag", FLAGS)
def test_no_output_is_the_input(run, cli, tmp_path, flag, spelling):
    source = tmp_path / "in.txt"
    source.write_text("a dog runs\nthe cat sleeps\n")
    (tmp_path / "link.txt").symlink_to(source)
    target = source if spelling == "same" else tmp_path / "link.txt"
    result = cli("translate", "--run", run, "--input", source, flag, target)
    one_line_error(result, f"'{flag}': {target} is also an input")
    assert source.read_text() == "a dog runs\nthe cat sleeps\n"


@pytest.mark.parametrize("flag", FLAGS)
def test_no_output_is_the_file_stdin_reads(run, tmp_path, flag):
    source = tmp_path / "in.txt"
    source.write_text("a dog runs\n")
    with open(source, "rb") as stdin:
        proc = subprocess.run(
            [sys.executable, "-m", "seq2seq", "translate", "--run", str(run), flag, str(source)],
            stdin=stdin,
            capture_output=True,
            timeout=120,
        )
    assert proc.returncode == 2 and b"is also an input (standard input)" in proc.stderr, proc.stderr
    assert source.read_text() == "a dog runs\n"


@pytest.mark.parametrize("name", ["model.safetensors", "config.json", "new.html"])
@pytest.mark.parametrize("flag", FLAGS)
def test_no_output_lies_inside_the_run(run, cli, tmp_path, flag, name):
    before = snapshot(run)
    (tmp_path / "into-run").symlink_to(run)  # a link to the run's folder is the run all the same
    for target in (run / name, tmp_path / "into-run" / name):
        result = cli("translate", "--run", run, "a dog runs", flag, target)
        one_line_error(result, "lies inside the run directory")
    assert snapshot(run) == before


@pytest.mark.parametrize("pair", [("--output", "--attention-html"), ("--attention-png", "--output")])
def test_two_outputs_are_never_one_file(run, cli, tmp_path, pair):
    (tmp_path / "o.txt").write_text("mine\n")
    (tmp_path / "alias.txt").symlink_to(tmp_path / "o.txt")
    for first, second in ("o.txt", "o.txt"), ("o.txt", "alias.txt"), ("new.txt", "new.txt"):
        args = [pair[0], tmp_path / first, pair[1], tmp_path / second]
        result = cli("translate", "--run", run, "a dog runs", *args)
        one_line_error(result, "is the file of both; give each its own")
        assert f"'{pair[1]}', '{pair[0]}'" in result.err or f"'{pair[0]}', '{pair[1]}'" in result.err
        assert (tmp_path / "o.txt").read_text() == "mine\n"
    assert not (tmp_path / "new.txt").exists()


def test_a_numbered_picture_is_never_another_output(run, cli, tmp_path):
    (tmp_path / "a-2.png").write_text("mine\n")
    result = cli(
        "translate", "--run", run, "a dog", "the cat", "--output", tmp_path / "a-2.png", "--attention-png",
        tmp_path / "a.png",
    )  # fmt: skip
    assert (
        result.code == 2
        and "'--attention-png', '--output'" in result.err
        and "the file of both" in result.err
    )
    assert (tmp_path / "a-2.png").read_text() == "mine\n"


class FifoReader(threading.Thread):
    """Reads a FIFO to its end in the background, as `cat FIFO` would."""

    def __init__(self, path):
        super().__init__(daemon=True)
        self.path, self.data = path, None
        self.start()

    def run(self):
        with open(self.path, "rb") as f:
            self.data = f.read()


MAGIC = {"--output": b"", "--attention-html": b"<!doctype html>", "--attention-png": b"\x89PNG"}


@pytest.mark.parametrize("flag", FLAGS)
def test_a_fifo_is_written_through(run, cli, tmp_path, flag):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    reader = FifoReader(fifo)
    result = cli("translate", "--run", run, "a dog runs", flag, fifo)
    reader.join(timeout=20)
    assert result.code == 0, result.err
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)  # still the FIFO
    assert reader.data is not None and reader.data.startswith(MAGIC[flag]) and len(reader.data) > 10
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo"]


@pytest.mark.parametrize("flag", FLAGS)
def test_a_device_stays_a_device(run, cli, tmp_path, flag):
    null = tmp_path / "null"  # a private /dev/null: a regression replaces it, never the system's
    try:
        os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        open(null, "wb").close()
    except OSError:
        pytest.skip("cannot make a device node here")
    result = cli("translate", "--run", run, "a dog runs", flag, null)
    assert result.code == 0, result.err
    assert stat.S_ISCHR(os.stat(null).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null"]


@pytest.mark.parametrize("flag", FLAGS)
def test_a_link_writes_the_file_it_names(run, cli, tmp_path, flag):
    (tmp_path / "real").write_text("old\n")
    (tmp_path / "link").symlink_to("real")
    result = cli("translate", "--run", run, "a dog runs", flag, tmp_path / "link")
    assert result.code == 0, result.err
    assert (tmp_path / "link").is_symlink()
    data = (tmp_path / "real").read_bytes()
    assert data != b"old\n" and data.startswith(MAGIC[flag])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "real"]


def test_a_page_past_its_size_gets_one_notice(run, cli, tmp_path, monkeypatch):
    page, lines = tmp_path / "page.html", ["a dog runs", "the cat sleeps", "a man"]
    result = cli("translate", "--run", run, *lines, "--attention-html", page)
    assert result.code == 0 and "MB" not in result.err, result.err
    monkeypatch.setattr(views_cli, "PAGE_MB", 1e-6)  # one byte: passed by the first line
    result = cli("translate", "--run", run, *lines, "--attention-html", page)
    assert result.code == 0, result.err
    notices = [line for line in result.err.splitlines() if "passes 1e-06 MB" in line]
    assert len(notices) == 1 and notices[0].endswith(
        "at line 1: a browser may be slow to open it; give fewer lines to keep it smaller"
    ), result.err
    assert page.read_text(encoding="utf-8").count('"line": ') == 3


def test_a_min_len_above_the_models_limit_is_said(run, cli):
    result = cli("translate", "--run", run, "--greedy", "--min-len", "500", "a dog")
    limit = 63  # tiny_model's max_positions - 1
    assert result.code == 0, result.err
    assert f"min-len 500 is above the model's longest output ({limit} pieces)" in result.err
    assert result.err.count("\n") == 1
    quiet = cli("translate", "--run", run, "--greedy", "--min-len", "3", "a dog")
    assert quiet.code == 0 and quiet.err == ""


# --- `translate --output` and `evaluate --output` -------------------------------------------------


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
