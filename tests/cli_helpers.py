"""Run the CLI in-process (fast) or as a real subprocess (for signals), capturing what it prints;
and torchrun jobs of it, with this checkout on the path."""

import io
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

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


REPO = Path(__file__).resolve().parent.parent


def in_this_checkout() -> dict:
    paths = [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]  # the caller's paths too
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


def torchrun(*args: str, cwd: Path, nproc: int = 2) -> subprocess.Popen:
    """Start `torchrun --standalone --nproc-per-node N ARGS`, through `python -m` so that it is this
    interpreter's torch; one thread per process, as the machine has few cores."""
    env = {**in_this_checkout(), "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}"]
    return subprocess.Popen(
        [*command, *args], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
