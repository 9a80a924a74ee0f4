"""translate from a pipe (streamed), a terminal (a prompt) and into a file (whole, or kept as
.partial after a failure); a reader that leaves ends it quietly."""

import os
import pty
import select
import signal
import subprocess
import sys

import pytest
from rich.console import Console

from seq2seq.cli import display as cli_display
from seq2seq.decoding.search import DecodeOptions, translate
from seq2seq.errors import Seq2SeqError
from seq2seq.files.reading import line_groups
from seq2seq.runs.load import load_run
from tests.cli_helpers import run_cli, run_process
from tests.conftest import EN

GREEDY = ["--greedy", "--max-len", "6", "--device", "cpu"]


RUN_SEED = 11  # the `run` fixture's weights (conftest.py)


@pytest.fixture(scope="module")
def expected(run):
    """What the model says for each caption, translated in-process."""
    model, tokenizer = load_run(run)
    result = translate(model, tokenizer, EN, DecodeOptions(beam=1, max_len=6))
    return {e: (t + "\n").encode() for e, t in zip(EN, result.best, strict=True)}


def spawn(args: list, stdin=subprocess.PIPE) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "seq2seq", *map(str, args)],
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def read_line(proc: subprocess.Popen, timeout: float = 60) -> bytes:
    """A line of the process' stdout, or a failure if none comes in time."""
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    assert ready, f"no output within {timeout} s"
    return proc.stdout.readline()


def test_a_pipe_gets_each_translation_before_it_sends_the_next_line(run, expected):
    proc = spawn(["translate", "--run", run, *GREEDY])
    for sentence in EN[:3]:
        proc.stdin.write(f"{sentence}\n".encode())
        proc.stdin.flush()
        assert read_line(proc) == expected[sentence]  # the input is still open
    proc.stdin.close()
    assert proc.stdout.read() == b"" and proc.wait(60) == 0


def test_a_terminal_gets_a_prompt_and_an_empty_line_ends_it(run, expected):
    terminal, stdin = pty.openpty()
    proc = spawn(["translate", "--run", run, *GREEDY], stdin=stdin)
    os.close(stdin)
    for sentence in EN[:2]:
        os.write(terminal, f"{sentence}\n".encode())
        assert read_line(proc) == expected[sentence]
    os.write(terminal, b"\n")
    assert proc.wait(60) == 0
    assert proc.stdout.read() == b"" and proc.stderr.read() == b"> > > "
    os.close(terminal)


def test_ctrl_c_leaves_a_live_session_without_a_traceback(run, expected):
    terminal, stdin = pty.openpty()
    proc = spawn(["translate", "--run", run, *GREEDY], stdin=stdin)
    os.close(stdin)
    os.write(terminal, f"{EN[0]}\n".encode())
    assert read_line(proc) == expected[EN[0]]
    proc.send_signal(signal.SIGINT)
    assert proc.wait(60) == 0
    assert b"Traceback" not in proc.stderr.read()
    os.close(terminal)


def test_a_reader_that_leaves_ends_translate_quietly(run):
    proc = spawn(["translate", "--run", run, *GREEDY])
    proc.stdin.write(b"a dog runs\n")
    proc.stdin.flush()
    read_line(proc)
    proc.stdout.close()  # `| head -1`
    proc.stdin.write(b"two men sit\n" * 50)
    proc.stdin.close()
    assert proc.wait(60) == 0
    assert proc.stderr.read() == b""


def test_an_output_file_appears_whole_and_a_failure_keeps_the_finished_lines(run, expected, tmp_path):
    good = tmp_path / "good.txt"
    good.write_text("".join(f"{e}\n" for e in EN))
    out = tmp_path / "out.txt"
    proc = run_process(["translate", "--run", run, *GREEDY, "--input", good, "--output", out])
    assert proc.code == 0 and out.read_bytes() == b"".join(expected[e] for e in EN)
    assert not list(tmp_path.glob("out.txt*.partial"))

    bad = tmp_path / "bad.txt"  # groups of 8 lines with --batch-size 1; line 11 is not UTF-8
    bad.write_bytes("".join(f"{EN[i % 6]}\n" for i in range(10)).encode() + b"caf\xe9\n")
    out.unlink()
    args = ["translate", "--run", run, *GREEDY, "--batch-size", "1", "--input", bad, "--output", out]
    proc = run_process(args)
    assert proc.code == 2 and "line 11 is not valid UTF-8" in proc.err and "kept in" in proc.err
    assert not out.exists()
    (partial,) = tmp_path.glob("out.txt.*.partial")
    assert str(partial) in proc.err
    kept = partial.read_bytes()
    assert kept == b"".join(expected[EN[i % 6]] for i in range(8))


def test_a_progress_bar_counts_the_lines_into_an_output_file(run, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(cli_display, "err", Console(file=sys.stderr, force_terminal=True, width=100))
    (tmp_path / "in.txt").write_text("a dog runs\nthe sun\n\n")
    args = ["translate", "--run", run, *GREEDY, "--input", tmp_path / "in.txt", "--output", tmp_path / "o"]
    result = run_cli(args, capsys, monkeypatch)
    assert result.code == 0 and "3/3" in result.err and "lines" in result.err
    assert len((tmp_path / "o").read_text().splitlines()) == 3


def test_line_groups_split_on_newlines_only_and_name_a_bad_line(tmp_path):
    f = tmp_path / "lines"
    f.write_bytes(b"one\r\ntwo\rstill two\n\nfour")
    assert list(line_groups(f, 2)) == [["one", "two\rstill two"], ["", "four"]]
    f.write_bytes(b"ok\nok\nok\n\xff\n")
    with pytest.raises(Seq2SeqError, match="line 4 is not valid UTF-8"):
        list(line_groups(f, 2))


def test_a_group_ends_when_more_input_would_mean_waiting(monkeypatch):
    read, write = os.pipe()
    with open(read) as stdin:
        monkeypatch.setattr(sys, "stdin", stdin)
        groups = line_groups(None, 100)
        os.write(write, b"a\nb\n")
        assert next(groups) == ["a", "b"]
        os.write(write, b"c")
        os.close(write)
        assert next(groups) == ["c"]
        assert next(groups, None) is None
