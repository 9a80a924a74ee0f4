"""The figures the README and the docs quote: each one a file under docs/figures/, written by the
script that measured it and stamped with the code it measured; the pages' tables are rendered
from those files between markers, so a figure typed by hand cannot disagree with its evidence.

    python -m scripts.figures --check    # figures whose code changed since they were measured,
                                         # and page blocks that differ from their figure files
    python -m scripts.figures --render   # write every page's blocks from the figure files

A page holds a figure as

    <!-- figure: NAME -->
    (the table and its stamp, written by --render)
    <!-- /figure -->

A figure file holds the table (columns and rows, as text), a note, the command that measured it
and its stamp: the commit, the date, the CPU, torch and the fingerprint, a SHA-256 over the git
blob ids of the files the figure depends on (`DEPENDS`) at that commit. `--check` computes the
same over today's working tree: a figure whose files changed is listed as stale.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from scripts.common import REPO

FIGURES_DIR = REPO / "docs" / "figures"
PAGES = ("README.md", "docs/*.md")
# the files whose content a measurement runs or reads
SUFFIXES = (".py", ".html", ".js", ".css", ".json", ".jsonl")

# What loading a run and searching with it runs: the figures of decoding, serving, trust, documents.
DECODING = (
    "seq2seq/runs",
    "seq2seq/models",
    "seq2seq/decoding",
    "seq2seq/data",
    "seq2seq/device.py",
    "seq2seq/allocator.py",
)
# What a training run and its scores run: the model, the data, the loop, the search, the scoring.
TRAINING = (*DECODING, "seq2seq/training", "seq2seq/evaluate.py", "scripts/reproduce_results.py")
AGAINST_ENGINE = (
    *DECODING,
    "seq2seq/evaluate.py",
    "seq2seq/export/ctranslate2.py",
    "seq2seq/export/folder.py",
    "scripts/bench_decode.py",
    "scripts/against_ctranslate2.py",
    "scripts/engine_worker.py",
    "scripts/common.py",
)
DEPENDS = {
    "quality-en-fr": TRAINING,
    "train-throughput": TRAINING,
    "first-run": (*TRAINING, "seq2seq/cli", "scripts/first_run.py", "scripts/isa.py"),
    "serve-load": (  # the server's batching of one-line clients against the batched library call
        *DECODING,
        "seq2seq/serve",
        "seq2seq/cli/serve.py",
        "scripts/bench_serve.py",
    ),
    "terminology": (  # constrained beam search against the plain beam and the append control
        *DECODING,
        "seq2seq/evaluate.py",
        "scripts/bench_constraints.py",
        "scripts/term_metrics.py",
        "scripts/common.py",
    ),
    "alignment": (  # every alignment method on the shipped gold set, eflomal beside
        *DECODING,
        "seq2seq/alignment",
        "scripts/alignment_table.py",
        "scripts/common.py",
    ),
    "alignment-test2017": (  # the same on the second gold set, nothing chosen on it
        *DECODING,
        "seq2seq/alignment",
        "scripts/alignment_table.py",
        "scripts/common.py",
    ),
    "case": (  # ALL-CAPS and Title-Case lines through translate's lines, and the search alone
        *DECODING,
        "seq2seq/request",
        "seq2seq/paired.py",
        "seq2seq/documents",
        "seq2seq/stream",
        "seq2seq/files",
        "scripts/bench_case.py",
        "scripts/common.py",
    ),
    "documents": (  # paragraphs through the documents' code, against their sentences as lines
        *DECODING,
        "seq2seq/documents",
        "seq2seq/alignment",
        "scripts/bench_documents.py",
        "scripts/bench_splitters.py",
        "scripts/common.py",
    ),
    "round-trip": ("seq2seq/documents", "scripts/round_trip.py", "scripts/common.py"),  # real files
    "document-scaling": ("seq2seq/documents", "scripts/round_trip.py", "scripts/common.py"),
    "document-memory": (  # a tagged page's peak memory against its text alone
        *DECODING,
        "seq2seq/documents",
        "seq2seq/alignment",
        "seq2seq/request",
        "scripts/bench_document_memory.py",
        "scripts/common.py",
    ),
    "markup": (  # tags placed through each source of links, against the gold set's spans
        *DECODING,
        "seq2seq/alignment",
        "seq2seq/documents/markup.py",
        "seq2seq/documents/placing.py",
        "seq2seq/documents/translate.py",  # the rule tags are placed by
        "scripts/bench_markup.py",
        "scripts/common.py",
    ),
    "splitters": (  # how often a paragraph is cut back into its sentences, by each splitting
        "seq2seq/documents/sentences.py",
        "scripts/bench_splitters.py",
        "scripts/common.py",
    ),
    "trust": (  # the error signals of a teacher-forced pass, against a benchmark of made errors
        *DECODING,
        "seq2seq/trust",
        "seq2seq/stream",  # translate --confidence's lines, whose cost it measures
        "seq2seq/files",
        "seq2seq/alignment/words.py",
        "scripts/bench_trust.py",
        "scripts/common.py",
    ),
    "trust-natural": (  # the flags on the annotated natural errors, and on correct lines
        *DECODING,
        "seq2seq/trust",
        "seq2seq/request",
        "seq2seq/alignment/words.py",
        "data/trust",
        "scripts/bench_trust_natural.py",
        "scripts/bench_trust.py",
        "scripts/common.py",
    ),
    "decode-vs-ctranslate2": AGAINST_ENGINE,  # our search, and the engine on the weights export writes
    "decode-vs-ctranslate2-avx2": (*AGAINST_ENGINE, "scripts/isa.py"),  # both engines held to AVX2
}
# The pages' transcripts: what a command line prints, run through the CLI (scripts/transcripts.py).
SHOWN = (
    *DECODING,
    "seq2seq/cli",
    "seq2seq/request",
    "seq2seq/stream",
    "seq2seq/files",
    "scripts/transcripts.py",
)
DEPENDS |= {
    "transcript-train": (*SHOWN, *TRAINING),
    "transcript-attention": (*SHOWN, "seq2seq/views"),
    "transcript-score": SHOWN,
    "transcript-bootstrap": (*SHOWN, "seq2seq/evaluate.py", "seq2seq/paired.py"),
    "transcript-sampling": SHOWN,
    "transcript-trace": SHOWN,
    "transcript-serve": (*SHOWN, "seq2seq/serve"),
}
CPU_CODE = re.compile(r", family \d+ model \d+")  # kept in the file; a page names the CPU and its flags
BLOCK = re.compile(r"(<!-- figure: ([\w-]+) -->\n)(.*?)(<!-- /figure -->)", re.S)


@dataclass
class Figure:
    """One figure file's content."""

    name: str
    columns: list[str]
    rows: list[list[str]]
    command: str
    commit: str
    date: str
    cpu: str
    torch: str
    fingerprint: str
    note: str = ""
    text: str = ""  # a transcript: what commands printed (scripts/transcripts.py), in place of a table

    def markdown(self) -> str:
        """The table (or the transcript), its note and its stamp, as a page shows them."""
        if self.text:
            lines = ["```text", self.text.rstrip("\n"), "```"]
        else:
            lines = ["| " + " | ".join(self.columns) + " |", "|" + "---|" * len(self.columns)]
            lines += ["| " + " | ".join(row) + " |" for row in self.rows]
        if self.note:
            lines += ["", self.note]
        lines += [
            "",
            f"*Measured by `{self.command}` at commit {self.commit}, {self.date}; "
            f"{CPU_CODE.sub('', self.cpu)}; torch {self.torch}.*",
        ]
        return "\n".join(lines) + "\n"


def git(*args: str, root: Path = REPO) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout


def blob_id(data: bytes) -> str:
    """The id git gives a file of this content (`git hash-object`)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def fingerprint(paths: tuple[str, ...], commit: str | None = None, root: Path = REPO) -> str:
    """SHA-256 over (path, blob id) of every file under `paths` with a measured suffix: at
    `commit`, or in the working tree when None. The two agree on a clean checkout."""
    if commit is not None:
        listing = git("ls-tree", "-r", commit, "--", *paths, root=root).splitlines()
        blobs = {line.split("\t", 1)[1]: line.split()[2] for line in listing}
    else:
        blobs = {}
        for path in paths:
            here = root / path
            files = [here] if here.is_file() else sorted(p for p in here.rglob("*") if p.is_file())
            for file in files:
                if "__pycache__" not in file.parts:
                    blobs[file.relative_to(root).as_posix()] = blob_id(file.read_bytes())
    measured = sorted((p, b) for p, b in blobs.items() if p.endswith(SUFFIXES))
    return hashlib.sha256("".join(f"{p} {b}\n" for p, b in measured).encode()).hexdigest()


def clean_commit(paths: tuple[str, ...], root: Path = REPO) -> str:
    """HEAD's short id, refusing a working tree whose `paths` differ from it: a stamp must name
    code that exists."""
    changed = git("status", "--porcelain", "--ignored", "--", *paths, root=root).splitlines()
    if any(line.endswith(SUFFIXES) for line in changed):  # an ignored module runs too
        raise SystemExit(f"uncommitted changes under {', '.join(paths)}: commit before measuring")
    return git("rev-parse", "--short", "HEAD", root=root).strip()


def write(figure: Figure, folder: Path = FIGURES_DIR) -> Path:
    """Keep a figure's file (replacing the one of that name)."""
    from seq2seq.atomic import write_atomic

    if figure.name not in DEPENDS:
        raise ValueError(f"{figure.name!r} is no figure of DEPENDS")
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{figure.name}.json"
    write_atomic(target, (json.dumps(figure.__dict__, indent=1, ensure_ascii=False) + "\n").encode())
    return target


def stamped(
    name: str, columns, rows, command: str, commit: str, note: str = "", text: str = "", **stamp
) -> Figure:
    """A figure of `name` measured at `commit` (a clean one: `clean_commit`), its fingerprint that
    commit's; `stamp` gives date, cpu and torch."""
    return Figure(
        name,
        list(columns),
        [list(r) for r in rows],
        command,
        commit,
        fingerprint=fingerprint(DEPENDS[name], commit),
        note=note,
        text=text,
        **stamp,
    )


def record(
    name: str, columns, rows, note: str, commit: str, command: str | None = None, text: str = ""
) -> Path:
    """Write the figure `name` a script has just measured here and now, at `commit` (its
    `clean_commit`): stamped with today's date, this CPU and torch, and the command that ran it
    (default: `python -m scripts.<the script> <its arguments>`); returns the file."""
    import datetime
    import shlex

    import torch

    from scripts.common import cpu

    if command is None:
        command = f"python -m scripts.{Path(sys.argv[0]).stem} " + shlex.join(sys.argv[1:])
    stamp = {"date": datetime.date.today().isoformat(), "cpu": cpu(), "torch": torch.__version__}
    path = write(stamped(name, columns, rows, command.strip(), commit, note, text, **stamp))
    print(f"wrote {path.relative_to(REPO)}")
    return path


def read(name: str, folder: Path = FIGURES_DIR) -> Figure:
    return Figure(**json.loads((folder / f"{name}.json").read_text(encoding="utf-8")))


def pages(root: Path = REPO) -> list[Path]:
    return sorted({p for pattern in PAGES for p in root.glob(pattern)})


def render(text: str, folder: Path = FIGURES_DIR) -> str:
    """A page's text with every figure block written from its figure file."""
    return BLOCK.sub(lambda m: m[1] + "\n" + read(m[2], folder).markdown() + "\n" + m[4], text)


def problems(root: Path = REPO, folder: Path = FIGURES_DIR) -> list[str]:
    """What --check reports: stale figures, blocks naming no figure file, pages out of date."""
    found = []
    for file in sorted(folder.glob("*.json")):
        figure = read(file.stem, folder)
        if figure.name not in DEPENDS:
            found.append(f"{file.name}: no such figure in scripts/figures.py DEPENDS")
        elif fingerprint(DEPENDS[figure.name], root=root) != figure.fingerprint:
            found.append(f"{figure.name}: stale, the code it measured changed since commit {figure.commit}")
    for page in pages(root):
        text, where = page.read_text(encoding="utf-8"), page.relative_to(root)
        missing = [name for _, name, _, _ in BLOCK.findall(text) if not (folder / f"{name}.json").is_file()]
        found += [f"{where}: the block {name!r} has no figure file" for name in missing]
        if not missing and render(text, folder) != text:
            found.append(f"{where}: out of date (python -m scripts.figures --render)")
    return found


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--check", action="store_true", help="list stale figures and pages out of date")
    what.add_argument("--render", action="store_true", help="write the pages' figure blocks")
    args = p.parse_args(argv)
    if args.render:
        for page in pages():
            text = page.read_text(encoding="utf-8")
            rendered = render(text)
            if rendered != text:
                from seq2seq.atomic import write_atomic

                write_atomic(page, rendered.encode("utf-8"))
                print(f"rendered {page.relative_to(REPO)}")
        return
    found = problems()
    for line in found:
        print(line)
    if found:
        sys.exit(1)
    print(f"{len(list(FIGURES_DIR.glob('*.json')))} figures, all measured on today's code")


if __name__ == "__main__":
    main()
