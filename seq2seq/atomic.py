"""Atomic writes: a reader (or a resumed run) sees the old file or folder or the new one, never half."""

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path


def write_atomic(path: Path, data: bytes) -> None:
    """Write `data` to `path` through a temporary file in the same folder and a rename."""
    write_with(path, lambda tmp: tmp.write_bytes(data))


def write_with(path: Path, writer: Callable[[Path], object]) -> None:
    """Let `writer` fill a temporary file beside `path`, flush it to disk, then rename it over."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    tmp = Path(name)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes it private; give it a normal file's mode
    try:
        writer(tmp)
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
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o777 & ~umask)  # mkdtemp makes it private; give it a normal folder's mode
        writer(tmp)
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()
        os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
