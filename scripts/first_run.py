"""The README's first five minutes, run as written: the commands of its "A first translation"
block, one after the other in an empty folder, each timed, and what each printed last.

    SEQ2SEQ_DATA_DIR=/path/to/multi30k python -m scripts.first_run [--isa avx2]

With --isa avx2 the same commands run a second time, in a folder of their own, as on a CPU with
AVX2 and no AVX-512 (scripts/isa.py). Writes the figure `first-run` (docs/figures/first-run.json,
scripts/figures.py) unless `--dry-run`: a row a command, and the minutes from the first
command's start to the first translation in the note. The corpus comes from SEQ2SEQ_DATA_DIR as
the README says; the code measured must be committed (the figure names its commit).
"""

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

from scripts import common, figures

HEADING = "## A first translation in five minutes"


def readme_commands(text: str) -> list[str]:
    """The command lines of the first bash block under the README's first-run heading."""
    section = text[text.index(HEADING) :]
    block = section[section.index("```bash\n") + len("```bash\n") :]
    block = block[: block.index("```")]
    return [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]


def run(command: str, cwd: str, limits: dict[str, str] | None = None) -> tuple[float, str]:
    """Seconds a command took and the last line it printed (its BLEU line, if any); exits on its
    failure."""
    words = shlex.split(command)
    if words[0] == "seq2seq" and shutil.which("seq2seq") is None:
        words = [sys.executable, "-m", "seq2seq", *words[1:]]
    start = time.monotonic()
    env = {**os.environ, **(limits or {}), "COLUMNS": "200"}  # rich wraps at 80 where no terminal says
    proc = subprocess.run(words, cwd=cwd, capture_output=True, text=True, env=env)
    seconds = time.monotonic() - start
    if proc.returncode != 0:
        sys.exit(f"`{command}` failed: {proc.stderr.strip()[-500:]}")
    lines = [line.strip() for line in proc.stdout.splitlines() if any(c.isalnum() for c in line)]
    scores = [line for line in lines if "BLEU" in line]  # evaluate's table: its BLEU row
    return seconds, " ".join((scores or lines or [""])[-1].replace("│", " ").split())


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--dry-run", action="store_true", help="print the rows, write no figure")
    p.add_argument("--isa", choices=["avx2"], help="also run them as on a CPU of this ISA (scripts/isa.py)")
    args = p.parse_args(argv)
    if not os.environ.get("SEQ2SEQ_DATA_DIR"):
        p.error("set SEQ2SEQ_DATA_DIR to a Multi30k folder, as the README does")
    commit = "(dry run)" if args.dry_run else figures.clean_commit(figures.DEPENDS["first-run"])
    commands = readme_commands((common.REPO / "README.md").read_text(encoding="utf-8"))
    from scripts.isa import LIMITS

    ways = {"this CPU": None, **({f"as {args.isa.upper()}": LIMITS[args.isa]} if args.isa else {})}
    rows, said = [], []
    for way, limits in ways.items():
        elapsed, first_translation = 0.0, None
        with tempfile.TemporaryDirectory() as folder:
            for command in commands:
                seconds, last = run(command, folder, limits)
                elapsed += seconds
                if " translate " in f" {command} " and first_translation is None:
                    first_translation = elapsed
                rows.append([way, f"`{command}`", f"{seconds:.0f}", last.replace("|", "\\|")])
                print(f"{way}: {seconds:7.1f} s  {command}\n           {last}")
        said.append(f"{first_translation / 60:.1f} minutes ({way})")
    note = f"The first translation came {' and '.join(said)} after the first command began."
    if args.isa:
        note += f" As {args.isa.upper()}: every engine held to it (scripts/isa.py)."
    print(note)
    if args.dry_run:
        return
    columns = ["as run", "command", "seconds", "its last line of output"]
    command = "python -m scripts.first_run" + (f" --isa {args.isa}" if args.isa else "")
    figures.record("first-run", columns, rows, note, commit, command)


if __name__ == "__main__":
    main()
