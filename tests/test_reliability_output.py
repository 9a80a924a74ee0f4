"""Where the CLI writes: a device or a FIFO is written to, never replaced by a file; the input is
never the output; a reader that leaves is no error; what the CLI cannot honour it says."""

import os
import subprocess
import sys

import pytest

from tests.conftest import tiny_model, write_run
from tests.helpers import evaluate_args


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return write_run(tmp_path_factory.mktemp("output-run"), lambda v: tiny_model(vocab_size=v, seed=3))


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
