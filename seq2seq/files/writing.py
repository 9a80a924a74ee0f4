"""The one output path: every file a command writes (--output, --attention-html, --attention-png)
is checked before any work by `Outputs` and written by `OutputFile`, so a picture is written by the
same rules as the translations."""

import contextlib
import os
import stat
import sys
from pathlib import Path
from typing import BinaryIO

from seq2seq.atomic import temporary, usual_mode
from seq2seq.errors import FieldError, Seq2SeqError
from seq2seq.files.reading import ReaderLeft, is_regular


class Outputs:
    """The files one command writes, each claimed before any work: refused when it is one of the
    inputs or the file standard input is redirected from (writing it would destroy what is still
    to be read), lies inside a run directory the command reads (`run`, and `reads`: a
    --reverse-run, a --baseline-run; a run holds only its own files), is a file another output of
    the same command writes (one of the two would be lost), however each is spelled (another path,
    a link), or lies in a folder that does not exist (said before the work, not after it).
    Devices (a terminal, /dev/null) may be shared."""

    def __init__(
        self,
        *inputs: Path | None,
        run: Path | None = None,
        reads: tuple[Path | None, ...] = (),
        stdin: bool = False,
    ):
        self.inputs = [p for p in inputs if p is not None and is_regular(p)]
        runs = (r for r in (run, *reads) if r is not None and os.path.isdir(r))
        self.runs = [Path(os.path.realpath(r)) for r in runs]
        self.stdin = _stdin_file() if stdin else None
        self.claimed: dict[tuple, str] = {}  # what each claimed file is -> the option that claimed it

    def claim_fields(self, args, *names: str) -> None:
        """`claim` each of the fields `names` of a command's options (`args`, a dataclass) with the
        path it holds."""
        for name in names:
            self.claim(name, getattr(args, name))

    def claim(self, name: str, path: Path | None) -> Path | None:
        """Check `path` as what the field `name` writes; the same path back."""
        if path is None:
            return None
        if os.path.isdir(path):
            raise FieldError(name, f"cannot write {path}: it is a directory")
        self._not_an_input(name, path)
        real = Path(os.path.realpath(path))
        for run in self.runs:
            if real == run or run in real.parents:
                raise FieldError(
                    name,
                    f"{path} lies inside the run directory {run}, which holds only the run's own files; "
                    "write it elsewhere",
                )
        if not real.parent.is_dir():
            raise FieldError(name, f"cannot write {path}: the folder {path.parent} does not exist")
        key = _identity(path, real)
        if key is not None:
            if key in self.claimed:
                raise FieldError((name, self.claimed[key]), f"{path} is the file of both; give each its own")
            self.claimed[key] = name
        return path

    def _not_an_input(self, name: str, path: Path) -> None:
        if not is_regular(path):
            return
        same = [str(p) for p in self.inputs if os.path.samefile(path, p)]
        if not same and self.stdin is not None and os.path.samestat(self.stdin, os.stat(path)):
            same = ["standard input"]
        if same:
            raise FieldError(name, f"{path} is also an input ({same[0]}); write to another file")


def _identity(path: Path, real: Path) -> tuple | None:
    """What the file is, for telling two outputs apart: its inode, or for a new file the path it
    will have; None for a character device, which two outputs may share."""
    try:
        info = os.stat(path)
    except OSError:
        return ("new", str(real))
    if stat.S_ISCHR(info.st_mode):
        return None
    return ("file", info.st_dev, info.st_ino)


def _stdin_file() -> os.stat_result | None:
    try:
        info = os.fstat(sys.stdin.fileno())
    except (AttributeError, OSError, ValueError):
        return None
    return info if stat.S_ISREG(info.st_mode) else None


def write_file(data: bytes, path: Path) -> None:
    """One whole file (a picture, a page) through the one output path."""
    with OutputFile(path) as out:
        out.write(data)


def write_lines(lines: list[str], path: Path | None) -> None:
    """All the lines at once, through the one output path."""
    with LineWriter(path) as writer:
        writer.write(lines)


class OutputFile:
    """Bytes out to a file or (no path) standard output. A regular file (or a new one) fills
    `FILE.<random>.partial` (atomic.temporary: a new file no one could have planted or linked),
    renamed to FILE once everything is written: FILE is never half-written, and a command that
    fails keeps what it did in that temporary. Anything else (a FIFO, a terminal,
    /dev/null, /dev/full) is written directly, as a shell's `>` does: renaming over it would replace
    the device or FIFO with a file, and its reader would get nothing. A link is followed: the file
    it names is written, the link kept."""

    keeps_partial = False  # half a picture or a page is no use; the lines done are

    def __init__(self, path: Path | None):
        self.path, self.written = path, 0  # written: what `write` was given, in its own unit
        self.name = "standard output" if path is None else str(path)
        self.target = self.partial = None  # a regular file's real path and its temporary beside it

    def __enter__(self):
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
                fd, self.partial = temporary(self.target, prefix="", suffix=".partial")
                self.stream = os.fdopen(fd, "wb")
                usual_mode(self.partial, mode)  # a private file stays private
            else:
                self.stream = open(self.path, "wb")
        except OSError as e:
            raise Seq2SeqError(f"cannot write {self.path}: {e.strerror}") from None
        return self

    def write(self, data: bytes, count: int = 1) -> None:
        try:
            self.stream.write(data)
            self.stream.flush()
        except BrokenPipeError:
            raise ReaderLeft from None
        except OSError as e:
            raise Seq2SeqError(f"cannot write {self.name}: {e.strerror}") from None
        self.written += count

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
            kept = f"; what was written is in {self.partial}" if self.partial is not None else ""
            raise Seq2SeqError(f"cannot write {self.path}: {e.strerror}{kept}") from None

    def _keep_or_remove_partial(self) -> None:
        if self.partial is None:
            return
        if self.written == 0 or not self.keeps_partial:
            self.partial.unlink(missing_ok=True)
        else:
            sys.stderr.write(f"warning: the first {self.written} output lines are kept in {self.partial}\n")


class LineWriter(OutputFile):
    """Lines out as they are ready, UTF-8 always (whatever encoding the terminal or PYTHONIOENCODING
    gives stdout)."""

    keeps_partial = True

    def write(self, lines: list[str]) -> None:
        super().write("".join(line + "\n" for line in lines).encode("utf-8"), len(lines))


def _close_quietly(stream: BinaryIO) -> None:
    with contextlib.suppress(OSError):
        stream.close()


def numbered(path: Path, number: int) -> Path:
    """attention.png -> attention-3.png: one picture per input line."""
    return path.with_name(f"{path.stem}-{number}{path.suffix}")
