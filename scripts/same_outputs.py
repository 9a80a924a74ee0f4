"""Two commits side by side on one run and one test set: `translate`, `evaluate --json`, `align` and
the server's `/translate` must give byte-identical outputs, and each takes about the same time.
Each commit is checked out into its own worktree and run from it (PYTHONPATH), the two alternated
A B A B; a row per surface: whether every output was identical, and the seconds of each commit.

    python -m scripts.same_outputs --old 271b472 --new HEAD --run runs/multi30k-en-fr-1206b \
        --data-dir ../shared/corpora/multi30k

`evaluate --json` carries the seconds it took: that field is left out of the comparison (its
hypotheses, written with --output, are compared whole). The server answers 1,000 lines in
requests of 50 (its limit is 256 lines and 131,072 units of work a request).
"""

import argparse
import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from scripts.common import REPO, cpu
from seq2seq.data.corpus import load_pairs

CHUNK = 50  # lines a /translate request


def worktree(commit: str, root: Path) -> tuple[Path, str]:
    """`commit` checked out under `root`, and its full id."""
    sha = subprocess.check_output(["git", "-C", str(REPO), "rev-parse", commit], text=True).strip()
    path = root / sha[:12]
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(path), sha], check=True,
                   capture_output=True)  # fmt: skip
    return path, sha


def command(tree: Path, args: list[str], out: Path) -> tuple[float, str]:
    """Run `seq2seq ARGS` from `tree`; the seconds, and the digest of what it wrote (stdout, or the
    files its outputs name under `out`)."""
    env = os.environ | {"PYTHONPATH": str(tree)}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "seq2seq", *args], cwd=tree, env=env, capture_output=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{tree.name}: seq2seq {' '.join(args)} failed:\n{done.stderr.decode()[-2000:]}")
    stdout = done.stdout
    if args[0] == "evaluate":  # the time it took is the one field that must differ
        report = json.loads(stdout)
        report.pop("seconds")
        stdout = json.dumps(report, sort_keys=True).encode()
    digest = hashlib.sha256(stdout)
    for path in sorted(out.glob("*")):
        digest.update(path.read_bytes())
        path.unlink()
    return seconds, digest.hexdigest()


def served(tree: Path, run: Path, lines: list[str]) -> tuple[float, str]:
    """Start `seq2seq serve` from `tree`, post the lines in requests of CHUNK, stop it; the seconds
    the requests took and the digest of the answers."""
    env = os.environ | {"PYTHONPATH": str(tree), "PYTHONUNBUFFERED": "1"}
    server = subprocess.Popen(
        [sys.executable, "-m", "seq2seq", "serve", "--run", str(run), "--port", "0", "--threads", "1"],
        cwd=tree, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        banner = server.stdout.readline()
        url = banner.split(" at ")[1].split()[0]
        digest, start = hashlib.sha256(), time.perf_counter()
        for i in range(0, len(lines), CHUNK):
            body = json.dumps({"text": lines[i : i + CHUNK]}).encode()
            request = urllib.request.Request(f"{url}/translate", body, {"Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=600) as answer:
                digest.update(answer.read())
        return time.perf_counter() - start, digest.hexdigest()
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(60)


def surfaces(run: Path, data_dir: str, files: Path, out: Path) -> dict[str, list[str]]:
    source, reference = files / "source.txt", files / "reference.txt"
    return {
        "translate": ["translate", "--run", str(run), "--input", str(source), "--output", str(out / "t")],
        "evaluate --json": [
            "evaluate", "--run", str(run), "--data-dir", data_dir, "--json", "--output", str(out / "e"),
        ],
        "align": ["align", "--run", str(run), "--source", str(source), "--target", str(reference)],
    }  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--old", required=True)
    p.add_argument("--new", default="HEAD")
    p.add_argument("--run", type=Path, required=True)
    p.add_argument("--data-dir", required=True)
    p.add_argument("--rounds", type=int, default=2, help="A B rounds of each surface")
    args = p.parse_args(argv)
    run = args.run.resolve()
    from seq2seq.runs.recipe import stored_languages

    corpus, src, tgt = stored_languages(run)
    pairs = load_pairs(corpus, "test_2016_flickr", src, tgt, args.data_dir)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (old, old_sha), (new, new_sha) = worktree(args.old, root), worktree(args.new, root)
        files, out = root / "files", root / "out"
        files.mkdir()
        out.mkdir()
        (files / "source.txt").write_text("".join(s + "\n" for s, _ in pairs), encoding="utf-8")
        (files / "reference.txt").write_text("".join(t + "\n" for _, t in pairs), encoding="utf-8")
        print(f"{run.name}, test_2016_flickr ({len(pairs)} lines); old {old_sha[:7]}, new {new_sha[:7]}")
        print(f"{cpu()}, {os.cpu_count()} cores")
        print(f"{'surface':18s} identical  old s   new s   new/old")
        rows = {**surfaces(run, args.data_dir, files, out), "server /translate": None}
        try:
            for name, given in rows.items():
                times, digests = {old: [], new: []}, set()
                for _ in range(args.rounds):
                    for tree in (old, new):
                        seconds, digest = (
                            served(tree, run, [s for s, _ in pairs])
                            if given is None
                            else command(tree, given, out)
                        )
                        times[tree].append(seconds)
                        digests.add(digest)
                a, b = min(times[old]), min(times[new])
                print(
                    f"{name:18s} {'yes' if len(digests) == 1 else 'NO':9s} {a:6.1f}  {b:6.1f}   {b / a:.3f}"
                )
        finally:
            for tree in (old, new):
                subprocess.run(
                    ["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)], check=False
                )


if __name__ == "__main__":
    main()
