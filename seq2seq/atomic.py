"""Atomic writes: a reader (or a resumed run) sees the old file or folder or the new one, never half.
A rename replaces whatever held the name, a symbolic link included, and never writes through it;
a file that must be opened in place (the run's lock) goes through `open_no_follow`."""

import errno
import os
import shutil
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

from seq2seq.errors import Seq2SeqError

NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)  # 0 where the OS has none (Windows)


def write_atomic(path: Path, data: bytes) -> None:
    """Write `data` to `path` through a temporary file in the same folder and a rename."""
    write_with(path, lambda tmp: tmp.write_bytes(data))


def temporary(path: Path, prefix: str = ".", suffix: str = ".tmp") -> tuple[int, Path]:
    """A new file beside `path` to fill before it takes `path`'s name, open for writing: made by
    mkstemp (O_CREAT | O_EXCL | O_NOFOLLOW) under a name no one chose before, so a file or a link
    planted at any name beside the target is never opened, followed or truncated."""
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f"{prefix}{path.name}.", suffix=suffix)
    return fd, Path(name)


def usual_mode(path: Path, like: int | None = None) -> None:
    """A file's usual mode (0666 less the umask; mkstemp makes it private), or `like`'s bits."""
    os.chmod(path, stat.S_IMODE(like) if like is not None else 0o666 & ~_umask())


def write_with(path: Path, writer: Callable[[Path], object]) -> None:
    """Let `writer` fill a temporary file beside `path`, flush it to disk, then rename it over."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = temporary(path)
    os.close(fd)
    try:
        writer(tmp)
        # every file of a run gets a file's usual mode (0666 less the umask), on purpose: mkstemp,
        # and safetensors (which writes a temporary of its own), make it private
        usual_mode(tmp)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_dir(path: Path, writer: Callable[[Path], object]) -> None:
    """Let `writer` fill a temporary folder beside `path`, then rename it into place, replacing
    whatever `path` was (folder, file or link): an export that fails leaves nothing half-written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"))
    try:
        os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes it private; give it a normal folder's mode
        writer(tmp)
        _usual_modes(tmp)
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()
        os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _usual_modes(folder: Path) -> None:
    """Every file and folder a writer left in `folder` gets the usual mode (0666 or 0777 less the
    umask): a library that writes through a private temporary (safetensors) leaves its file 0600."""
    umask = _umask()
    for root, dirs, files in os.walk(folder):
        for name in dirs:
            os.chmod(os.path.join(root, name), 0o777 & ~umask)
        for name in files:
            path = os.path.join(root, name)
            if not os.path.islink(path):
                os.chmod(path, 0o666 & ~umask | (stat.S_IMODE(os.stat(path).st_mode) & 0o111))


def open_no_follow(path: Path, flags: int, mode: int = 0o666) -> int:
    """`os.open` for a file of a run directory, which may come from someone else: a symbolic link
    there is refused, never followed (O_NOFOLLOW; writing through it would write outside the run,
    and a dangling one would create its target), and so is anything but a regular file (a FIFO
    would hang the writer: O_NONBLOCK, which changes nothing for a regular file). Returns the
    descriptor; other OS errors are the caller's to word."""
    path = Path(path)
    if not NO_FOLLOW and path.is_symlink():  # no O_NOFOLLOW (Windows): ask first
        raise _link_error(path)
    try:
        fd = os.open(path, flags | NO_FOLLOW | getattr(os, "O_NONBLOCK", 0), mode)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.EMLINK) or path.is_symlink():  # EMLINK: the BSDs' word
            raise _link_error(path) from None
        if e.errno == errno.ENXIO:  # a FIFO no one reads
            raise Seq2SeqError(f"{path} is not a regular file; remove it") from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise Seq2SeqError(f"{path} is not a regular file; remove it")
    return fd


def _link_error(path: Path) -> Seq2SeqError:
    return Seq2SeqError(
        f"{path} is a symbolic link; a run directory holds its own files, never links to others: remove it"
    )


def _umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask
