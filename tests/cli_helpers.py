"""Run the CLI in-process (fast) or as a real subprocess (for signals), capturing what it prints."""

import io
import subprocess
import sys
from dataclasses import dataclass

from seq2seq.cli import app as cli


@dataclass
class Result:
    code: int
    out: str
    err: str


def run_cli(args: list[str], capsys, monkeypatch, stdin: bytes = b"") -> Result:
    monkeypatch.setattr(sys, "argv", ["seq2seq", *map(str, args)])
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8"))
    capsys.readouterr()
    try:
        cli.main()
        code = 0
    except SystemExit as e:
        code = e.code
    captured = capsys.readouterr()
    return Result(code, captured.out, captured.err)


def run_process(args: list[str], stdin: bytes = b"", timeout: float = 120) -> Result:
    proc = subprocess.run(
        [sys.executable, "-m", "seq2seq", *map(str, args)], input=stdin, capture_output=True, timeout=timeout
    )
    return Result(proc.returncode, proc.stdout.decode(), proc.stderr.decode())
