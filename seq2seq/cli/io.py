"""Lines in and out of the command line: files or stdin/stdout, UTF-8, one line out per line in."""

import contextlib
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
    if not _is_regular(path):
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


def check_not_input(output: Path | None, *inputs: Path | None, stdin: bool = False) -> None:
    """Refuse an output that is one of the inputs, however it is spelled (another path, a link), or
    (`stdin`: the lines come from standard input) the file standard input is redirected from:
    writing it would destroy what is still to be read. Checked before any work."""
    if output is None or not _is_regular(output):
        return
    same = [str(p) for p in inputs if p is not None and _is_regular(p) and os.path.samefile(output, p)]
    if not same and stdin and _has_fd(sys.stdin):
        stdin = os.fstat(sys.stdin.fileno())
        if stat.S_ISREG(stdin.st_mode) and os.path.samestat(stdin, os.stat(output)):
            same = ["standard input"]
    if same:
        raise Seq2SeqError(f"--output {output} is also an input ({same[0]}); write to another file")


def _is_regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def write_lines(lines: list[str], path: Path | None) -> None:
    """All the lines at once, through the one output path (`LineWriter`)."""
    with LineWriter(path) as writer:
        writer.write(lines)


class LineWriter:
    """Lines out as they are ready, UTF-8 always (whatever encoding the terminal or PYTHONIOENCODING
    gives stdout). A regular file (or a new one) fills `FILE.partial`, renamed to FILE once
    everything is written: FILE is never half-written, and a run that fails keeps what it did in
    FILE.partial. Anything else (a FIFO, a terminal, /dev/null, /dev/full) is written directly, as a
    shell's `>` does: renaming over it would replace the device or FIFO with a file, and its reader
    would get nothing. A link is followed: the file it names is written, the link kept."""

    def __init__(self, path: Path | None):
        self.path, self.written = path, 0
        self.name = "standard output" if path is None else str(path)
        self.target = self.partial = None  # a regular file's real path and its temporary beside it

    def __enter__(self) -> "LineWriter":
        if self.path is None:
            self.stream = sys.stdout.buffer
            sys.stdout.flush()
            return self
        try:
            mode = os.stat(self.path).st_mode
        except OSError:
            mode = None  # a new file (a folder that does not exist says so when it is opened)
        if mode is not None and stat.S_ISDIR(mode):
            raise Seq2SeqError(f"cannot write {self.path}: it is a directory")
        try:
            if mode is None or stat.S_ISREG(mode):
                self.target = Path(os.path.realpath(self.path))
                self.partial = self.target.with_name(self.target.name + ".partial")
                self.stream = open(self.partial, "wb")
                if mode is not None:  # a private file stays private
                    os.chmod(self.partial, stat.S_IMODE(mode))
            else:
                self.stream = open(self.path, "wb")
        except OSError as e:
            raise Seq2SeqError(f"cannot write {self.path}: {e.strerror}") from None
        return self

    def write(self, lines: list[str]) -> None:
        try:
            self.stream.write("".join(line + "\n" for line in lines).encode("utf-8"))
            self.stream.flush()
        except BrokenPipeError:
            raise ReaderLeft from None
        except OSError as e:
            raise Seq2SeqError(f"cannot write {self.name}: {e.strerror}") from None
        self.written += len(lines)

    def __exit__(self, kind, error, trace) -> None:
        if self.path is None:
            return
        if kind is not None:
            _close_quietly(self.stream)  # what could not be written fails again: said already
            self._keep_or_remove_partial()
            return
        try:
            if self.partial is not None:  # on disk before the name says it is complete
                os.fsync(self.stream.fileno())
            self.stream.close()
            if self.partial is not None:
                os.replace(self.partial, self.target)
        except BrokenPipeError:
            raise ReaderLeft from None
        except OSError as e:
            _close_quietly(self.stream)
            kept = f"; the lines are in {self.partial}" if self.partial is not None else ""
            raise Seq2SeqError(f"cannot write {self.path}: {e.strerror}{kept}") from None

    def _keep_or_remove_partial(self) -> None:
        if self.partial is None:
            return
        if self.written == 0:
            self.partial.unlink(missing_ok=True)
        else:
            from seq2seq.cli.display import warn

            warn(f"the first {self.written} output lines are kept in {self.partial}")


def _close_quietly(stream: BinaryIO) -> None:
    with contextlib.suppress(OSError):
        stream.close()


def numbered(path: Path, number: int) -> Path:
    """attention.png -> attention-3.png: one picture per input line."""
    return path.with_name(f"{path.stem}-{number}{path.suffix}")
