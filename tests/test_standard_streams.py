"""Standard input and output as the shell hands them over: stdin closed, stdout on a full disk, to a
reader that has left, or with an ASCII encoding. Text reaches stdout as UTF-8 whatever its encoding,
a reader that leaves is no error, and what is an error is one line, exit 2, never a traceback."""

import os
import subprocess
import sys

import pytest

from tests.conftest import write_multi30k
from tests.helpers import evaluate_args

RUN_SEED = 3  # the `run` fixture's weights (conftest.py)


def cli_process(args, **kwargs):
    streams = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE} | kwargs
    return subprocess.run([sys.executable, "-m", "seq2seq", *map(str, args)], timeout=120, **streams)


def test_translate_with_standard_input_closed_is_one_line(tiny_run):
    result = cli_process(["translate", "--run", tiny_run[0]], stdin=subprocess.DEVNULL, close_fds=True)
    closed = subprocess.run(
        f"{sys.executable} -m seq2seq translate --run {tiny_run[0]} <&-", shell=True, capture_output=True
    )
    assert result.returncode == 0  # an empty stdin is no error: nothing in, nothing out
    assert closed.returncode == 2 and b"standard input is closed" in closed.stderr, closed.stderr
    assert len(closed.stderr.splitlines()) == 1


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize(
    "args",
    [["--help"], ["tokenize", "--run", "RUN", "café"], ["evaluate", "--run", "RUN", "--data-dir", "DATA"]],
    ids=["help", "tokenize", "evaluate"],
)
def test_a_full_disk_on_standard_output_is_one_line(args, tiny_run):
    run, data = tiny_run
    args = [{"RUN": run, "DATA": data}.get(a, a) for a in args]
    if args[0] == "evaluate":
        write_multi30k(data, {"test_2016_flickr": 4})
    with open("/dev/full", "w") as full:
        result = cli_process(args, stdout=full)
    assert result.returncode == 2 and b"No space left on device" in result.stderr, result.stderr
    assert len(result.stderr.splitlines()) == 1


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


def test_text_reaches_an_ascii_standard_output_as_utf8(tiny_run):
    result = cli_process(
        ["tokenize", "--run", tiny_run[0], "café"], env={**os.environ, "PYTHONIOENCODING": "ascii"}
    )
    assert result.returncode == 0 and "text:   café" in result.stdout.decode("utf-8"), result.stderr


def test_output_is_utf8_whatever_the_stdout_encoding(monkeypatch):
    import io

    from seq2seq.files.writing import write_lines

    raw = io.BytesIO()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(raw, encoding="ascii"))
    write_lines(["café ☕", "naïve"], None)
    assert raw.getvalue() == "café ☕\nnaïve\n".encode()
