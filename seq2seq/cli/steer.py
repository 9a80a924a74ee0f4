"""What `translate` steers the search with and what it records of it: the prefixes (--prefix,
--prefix-file) and the beam's record (--beam-trace, JSON lines)."""

import json
from pathlib import Path

import typer

from seq2seq.cli.io import line_groups
from seq2seq.cli.outputs import write_file


def prefix_lines(prefix: str | None, prefix_file: Path | None) -> list[str] | None:
    """--prefix-file's lines (read whole: their count is checked against the input's before any
    line is translated), or None; --prefix is one text for every line, applied per group."""
    if prefix is not None and prefix_file is not None:
        raise typer.BadParameter("give --prefix or --prefix-file, not both", param_hint="--prefix")
    return None if prefix_file is None else whole(prefix_file)


def whole(path: Path | None) -> list[str]:
    """Every line of a file (None: standard input), read through `line_groups`' checks."""
    return [line for group in line_groups(path, 1 << 16) for line in group]


def check_count(prefixes: list[str], lines: int, prefix_file: Path) -> None:
    if len(prefixes) != lines:
        raise typer.BadParameter(
            f"{prefix_file} has {len(prefixes)} lines but the input has {lines}; give one prefix a line",
            param_hint="--prefix-file",
        )


class TraceFile:
    """--beam-trace FILE: one JSON object a line of input ({"line", "source", "prefix", "nodes"}:
    trace.py's nodes, each with its piece), kept as text and written whole at the end."""

    def __init__(self, path: Path | None):
        self.path, self.lines = path, []

    def add(self, tokenizer, first: int, lines: list[str], prefixes: list[str] | None, traces) -> None:
        from seq2seq.decoding.trace import with_pieces

        if self.path is None:
            return
        for i, (source, nodes) in enumerate(zip(lines, traces, strict=True)):
            with_pieces(tokenizer, nodes)
            prefix = "" if prefixes is None else prefixes[i]
            record = {"line": first + i, "source": source, "prefix": prefix, "nodes": nodes}
            self.lines.append(json.dumps(record, ensure_ascii=False))

    def finish(self) -> None:
        if self.path is not None:
            write_file("".join(line + "\n" for line in self.lines).encode("utf-8"), self.path)
