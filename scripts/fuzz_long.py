"""A long run of the fuzzed readers (tests/test_fuzz_readers.py): each target for --minutes, as
rounds of hypothesis with fresh random seeds (the suite's bounded run is derandomized: the same
examples every time), and the executions counted from hypothesis' statistics.

    python -m scripts.fuzz_long --minutes 30                  # every target, one after another
    python -m scripts.fuzz_long --minutes 30 --target test_metrics_of_any_bytes

Each round is one pytest process (SEQ2SEQ_FUZZ_SCALE times the suite's examples, a new seed); a
failing round prints its output and the target stops there, its failure kept in hypothesis'
example database (.hypothesis/) so the next run of the test replays it; a round that crashes the
process (which hypothesis cannot report) leaves the last file its target wrote for a reader. One
table row a target: rounds, examples run, failures.
"""

import argparse
import ast
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scripts.common import REPO, cpu

MODULE = REPO / "tests" / "test_fuzz_readers.py"


def targets() -> list[str]:
    """The module's generated tests: those decorated with hypothesis' @given."""
    tree = ast.parse(MODULE.read_text(encoding="utf-8"))
    return [
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
        and any(isinstance(d, ast.Call) and getattr(d.func, "id", "") == "given" for d in node.decorator_list)
    ]


def fuzz_round(target: str, scale: int, seed: int) -> tuple[int, bool, str]:
    """One pytest process over `target`: the examples it ran, whether it passed, its output."""
    env = {**os.environ, "SEQ2SEQ_FUZZ_SCALE": str(scale), "SEQ2SEQ_FUZZ_RANDOM": "1", "OMP_NUM_THREADS": "1"}
    env["SEQ2SEQ_FUZZ_LAST"] = str(last_input(target, seed))
    command = [sys.executable, "-m", "pytest", f"{MODULE}::{target}", "-q", "-o", "addopts="]
    command += ["-p", "no:xdist", "-p", "no:cacheprovider", "--hypothesis-show-statistics", "--timeout=0"]
    command.append(f"--hypothesis-seed={seed}")
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
    out = done.stdout + done.stderr
    examples = sum(int(n) for n in re.findall(r"(\d+) passing examples", out))
    examples += sum(int(n) for n in re.findall(r"(\d+) failing examples", out))
    return examples, done.returncode == 0, out


def last_input(target: str, seed: int) -> Path:
    """Where a round's target copies each file it is about to read: after a crash, the input."""
    return Path(tempfile.gettempdir()) / f"fuzz-{target}-{seed}.last"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--minutes", type=float, default=30.0, help="a target's time")
    p.add_argument("--target", action="append", help="one target (repeatable); default: all")
    p.add_argument("--scale", type=int, default=50, help="times the suite's examples in a round")
    p.add_argument("--seed", type=int, default=0, help="draws the rounds' seeds")
    args = p.parse_args()
    print(f"CPU: {cpu()}, {os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f}", flush=True)
    print("\n| target | minutes | rounds | examples | failures |\n|---|---:|---:|---:|---:|", flush=True)
    draw = random.Random(args.seed)
    for target in args.target or targets():
        start, rounds, examples, failures = time.time(), 0, 0, 0
        while time.time() - start < 60 * args.minutes and not failures:
            seed = draw.randrange(1 << 32)
            ran, passed, out = fuzz_round(target, args.scale, seed)
            rounds, examples, failures = rounds + 1, examples + ran, failures + (not passed)
            if not passed:  # the whole output kept: a crash's innermost frames come first in it
                kept = Path(tempfile.gettempdir()) / f"fuzz-{target}-{seed}.log"
                kept.write_text(out, encoding="utf-8")
                last = last_input(target, seed)
                print(
                    f"{out[-6000:]}\n(the whole output: {kept}; the last file read: {last})", file=sys.stderr
                )
            else:
                last_input(target, seed).unlink(missing_ok=True)
        minutes = (time.time() - start) / 60
        print(f"| {target} | {minutes:.1f} | {rounds} | {examples:,} | {failures} |", flush=True)


if __name__ == "__main__":
    main()
