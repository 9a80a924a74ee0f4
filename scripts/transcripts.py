"""The pages' terminal transcripts, run as shown: each one a figure (`transcript-NAME`,
scripts/figures.py) whose text is what its commands printed, so that no number in a transcript
is typed by hand.

    SEQ2SEQ_DATA_DIR=/path/to/multi30k python -m scripts.transcripts \
        --run runs/multi30k-en-fr-1207a --tiny runs/quick [--only NAME ...]

The commands run in an empty folder where `runs/multi30k-en-fr` (the default run) is the run
given by --run and `serve-demo` the tiny run given by --tiny, so a page shows each command as a
user types it (`transcript-train` trains a run of its own there, the README's first run). A
step with a setup runs that first, unshown (the files a command reads). The code measured must be
committed (each figure names its commit).
"""

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scripts import figures

SCORED = "printf 'A dog runs on the beach.\\n%.0s' 1 2 3 > en.txt; seq2seq translate --nbest 3 "
SCORED += "'A dog runs on the beach.' | cut -d'|' -f4 | sed 's/^ //;s/ $//' > fr.txt"
TRANSCRIPTS = {  # name: [(the command shown, its unshown setup or "")]
    "transcript-train": [
        ("seq2seq train --preset tiny --max-minutes 4", ""),
        ('seq2seq translate "The cat sat on the mat."', ""),
    ],
    "transcript-attention": [('seq2seq translate --show-attention "A dog runs on the beach."', "")],
    "transcript-score": [
        ('seq2seq translate --nbest 3 "A dog runs on the beach."', ""),
        ("seq2seq score --source en.txt --target fr.txt", SCORED),
    ],
    "transcript-bootstrap": [
        ("seq2seq evaluate --baseline greedy.txt", "seq2seq evaluate --greedy --output greedy.txt"),
    ],
    "transcript-sampling": [
        (
            "seq2seq translate --sample --epsilon 0.02 --num-samples 4 --seed 1 "
            '"A little girl climbs into a wooden playhouse."',
            "",
        ),
    ],
    "transcript-trace": [
        ('seq2seq translate --beam-trace trace.jsonl "A little girl climbs into a wooden playhouse."', ""),
        ("head -c 330 trace.jsonl", ""),
    ],
    "transcript-serve": [
        (
            "curl -s localhost:8000/translate -H 'Content-Type: application/json' "
            '-d \'{"text": "A dog runs in the snow."}\'',
            "",
        ),
        (
            "curl -s localhost:8000/translate -H 'Content-Type: application/json' "
            '-d \'{"text": ["Two men are talking.", "A girl in a red coat."], "nbest": 2}\'',
            "",
        ),
        ('seq2seq translate --run serve-demo --nbest 2 "Two men are talking." "A girl in a red coat."', ""),
        (
            "curl -s localhost:8000/translate -H 'Content-Type: application/json' "
            '-d \'{"text": "A dog.", "beam": 0}\'',
            "",
        ),
    ],
}
FRESH = {"transcript-train"}  # trains its own run: no run of --run is put in its folder
SERVED = {"transcript-serve": "seq2seq serve --run serve-demo"}  # a server the steps talk to


def shell(command: str, cwd: str) -> str:
    """What `command` printed (stdout then stderr), the `seq2seq` of this interpreter."""
    env = {**os.environ, "COLUMNS": "100", "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    proc = subprocess.run(command, shell=True, cwd=cwd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        sys.exit(f"`{command}` failed: {proc.stderr.strip()[-500:]}")
    return proc.stdout + proc.stderr


def serving(command: str, cwd: str) -> tuple[subprocess.Popen, str]:
    """A server started by `command`, once it answers, and what it printed until then."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    server = subprocess.Popen(command, shell=True, cwd=cwd, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, start_new_session=True)  # fmt: skip
    said = []
    for line in server.stdout:
        said.append(re.sub(r"process \[\d+\]", "process [PID]", line))
        if "startup complete" in line:
            return server, "".join(said)
    sys.exit(f"`{command}` ended: {''.join(said)[-500:]}")


def transcript(name: str, workdir: str) -> str:
    text, server = "", None
    if name in SERVED:  # its start is not shown: the page says the command
        server, _ = serving(SERVED[name], workdir)
    try:
        for shown, setup in TRANSCRIPTS[name]:
            if setup:
                shell(setup, workdir)
            out = shell(shown, workdir)
            cut = " ...\n" if shown.startswith("head -c") else "\n"  # curl ends with no newline
            text += f"$ {shown}\n{out}" + ("" if out.endswith("\n") else cut)
    finally:
        if server is not None:
            os.killpg(server.pid, signal.SIGTERM)
            time.sleep(1)
    return text


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--run", type=Path, required=True, help="the run shown as runs/multi30k-en-fr")
    p.add_argument("--tiny", type=Path, required=True, help="the tiny run shown as serve-demo")
    p.add_argument("--only", nargs="*", choices=list(TRANSCRIPTS), help="these transcripts alone")
    p.add_argument("--dry-run", action="store_true", help="print them, write no figure")
    args = p.parse_args(argv)
    if not os.environ.get("SEQ2SEQ_DATA_DIR"):
        p.error("set SEQ2SEQ_DATA_DIR to a Multi30k folder")
    for name in args.only or TRANSCRIPTS:
        commit = "(dry run)" if args.dry_run else figures.clean_commit(figures.DEPENDS[name])
        with tempfile.TemporaryDirectory() as workdir:
            (Path(workdir) / "runs").mkdir()
            if name not in FRESH:
                (Path(workdir) / "runs" / "multi30k-en-fr").symlink_to(args.run.resolve())
            (Path(workdir) / "serve-demo").symlink_to(args.tiny.resolve())
            text = transcript(name, workdir)
        if args.dry_run:
            print(f"# {name}\n{text}")
            continue
        figures.record(name, [], [], "", commit, text=text)  # the command names the runs


if __name__ == "__main__":
    main()
