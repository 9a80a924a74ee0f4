"""Lines in: files or standard input, UTF-8 and checked, one at a time or in groups."""

import io
import os
import select
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from seq2seq.errors import Seq2SeqError


class ReaderLeft(Exception):
    """Standard output's reader has gone (`| head`). Not an OSError, which click would turn into
    exit 1 before our handler saw it."""


LINE_BREAKS = str.maketrans({c: " " for c in "\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"})


def one_line(text: str) -> str:
    """Keep the one-line-out-per-line-in promise even if a translation holds a line separator."""
    return text.translate(LINE_BREAKS)


def read_lines(path: Path | None) -> list[str]:
    """Lines of a UTF-8 file or of stdin, split on newlines only; invalid UTF-8 names the line."""
    return [line for group in line_groups(path, sys.maxsize) for line in group]


def read_pairs(source: Path, target: Path) -> tuple[list[str], list[str]]:
    """The lines of two files that pair up, line for line; one line naming both counts if not."""
    sources, targets = read_lines(source), read_lines(target)
    if len(sources) != len(targets):
        raise Seq2SeqError(f"{source} has {len(sources)} lines but {target} has {len(targets)}")
    return sources, targets


def line_groups(path: Path | None, most: int) -> Iterator[list[str]]:
    """Lines of a file or stdin in groups of at most `most`, each as soon as it is complete: a group
    ends early when more input would mean waiting, so a program that feeds a pipe line by line gets
    each answer before it sends the next, and a long file is worked on while it is still read."""
    name = str(path) if path else "standard input"
    with _open(path, name) as stream:
        lines: list[bytes] = []
        tail, number = b"", 0
        while True:
            data = _read_some(stream, name)
            *complete, tail = (tail + data).split(b"\n")
            lines += complete
            if not data and tail:  # the last line has no newline: it is still a line
                lines.append(tail)
            while len(lines) >= most or (lines and not (data and _more_ready(stream))):
                group, lines = lines[:most], lines[most:]
                yield [_decode(raw, name, number + i) for i, raw in enumerate(group, start=1)]
                number += len(group)
            if not data:
                return


def _open(path: Path | None, name: str) -> BinaryIO:
    if path is None:
        if sys.stdin is None or (not _has_fd(sys.stdin) and not hasattr(sys.stdin, "buffer")):
            raise Seq2SeqError("standard input is closed; give the sentences as arguments or with --input")
        return open(os.dup(sys.stdin.fileno()), "rb") if _has_fd(sys.stdin) else sys.stdin.buffer
    try:
        return open(path, "rb")
    except IsADirectoryError:
        raise Seq2SeqError(f"{name} is a directory, not a file") from None
    except OSError as e:
        raise Seq2SeqError(f"cannot read {name}: {e.strerror}") from None


def _read_some(stream: BinaryIO, name: str) -> bytes:
    """What is there, waiting only when nothing is; b"" at the end."""
    try:
        return stream.read1(1 << 16)
    except OSError as e:
        raise Seq2SeqError(f"cannot read {name}: {e.strerror}") from None


def stdin_is_terminal() -> bool:
    """Whether a person types the input (a prompt then); False for a pipe, a file or a closed stdin."""
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (OSError, ValueError):
        return False


def _has_fd(stream) -> bool:
    try:
        stream.fileno()
        return True
    except (OSError, ValueError, io.UnsupportedOperation):
        return False


def _more_ready(stream: BinaryIO) -> bool:
    """Whether reading now would not wait (always so for a file, or where select cannot tell)."""
    if not _has_fd(stream):
        return True
    try:
        return bool(select.select([stream], [], [], 0)[0])
    except (OSError, ValueError):
        return True


def _decode(raw: bytes, name: str, number: int) -> str:
    try:
        return raw.decode("utf-8").removesuffix("\r")
    except UnicodeDecodeError:
        raise Seq2SeqError(f"{name}: line {number} is not valid UTF-8") from None


def count_lines(path: Path) -> int | None:
    """How many lines `line_groups` will give for a regular file (for a progress bar); None for
    anything else, which reading it twice could consume (`--input <(zcat f.gz)`)."""
    if not is_regular(path):
        return None
    try:
        count, last = 0, b"\n"
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                count, last = count + chunk.count(b"\n"), chunk[-1:]
    except OSError:
        return None  # reading it for real says why
    return count + (last != b"\n")


def arguments(texts: list[str]) -> list[str]:
    """Command-line sentences, refused when their bytes are not UTF-8 (Python hands such bytes
    over as lone surrogates, which no tokenizer can take)."""
    out = []
    for number, text in enumerate(texts, start=1):
        try:
            out.append(text.encode("utf-8", "surrogateescape").decode("utf-8"))
        except UnicodeError:
            raise Seq2SeqError(f"argument {number} is not valid UTF-8") from None
    return out


def is_regular(path: Path) -> bool:
    """Whether `path` names a regular file (through a link); False for anything else or nothing."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False
