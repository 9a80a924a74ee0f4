"""One writer per run directory: `train`, `tokenize`, `align-train`, `check --calibrate` and
`import` (over an existing run) hold an exclusive lock on `<run>/.lock` while they write. The
operating system drops the lock when its holder dies, even by kill -9, so a lock is never stale.
Readers (`translate`, `evaluate`, `score`, `export`) take no lock: every file they read is
replaced whole, by rename."""

import os
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

from seq2seq.atomic import open_no_follow, write_dir
from seq2seq.errors import Seq2SeqError

LOCK = ".lock"


@contextmanager
def run_lock(run_dir: Path) -> Iterator[None]:
    """Hold the run directory's lock (creating the directory), or fail at once naming the holder.
    Also where a directory we cannot write is found: before any corpus is read or tokenizer trained.
    A `.lock` that is a link is refused, never followed. A directory this call made and that holds
    only the lock when it ends (the command failed before writing anything) is removed."""
    try:
        import fcntl
    except ImportError:  # Windows: no flock; one writer stays the user's care there
        yield
        return
    run_dir = Path(run_dir)
    made = [p for p in (run_dir, *run_dir.parents) if not p.exists()]  # deepest first
    try:
        try:
            run_dir.mkdir(parents=True, exist_ok=True)
            fd = open_no_follow(run_dir / LOCK, os.O_RDWR | os.O_CREAT)
        except OSError as e:
            raise Seq2SeqError(f"cannot write in {run_dir}: {e.strerror}") from None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
                raise Seq2SeqError(
                    f"{run_dir} is being written by another seq2seq (pid {holder}); "
                    "wait for it to finish or use another --run"
                ) from None
            except OSError as e:  # a filesystem without locks (some NFS and FUSE mounts)
                raise Seq2SeqError(
                    f"cannot lock {run_dir} ({e.strerror}); use a --run directory on a local disk"
                ) from None
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
            try:
                yield
            finally:
                if made and _holds_only_the_lock(run_dir):
                    (run_dir / LOCK).unlink()  # while still held: no one can have taken it
        finally:
            os.close(fd)  # closing the descriptor releases the lock
    finally:
        _remove_empty(made)


def replace_run(run_dir: Path, writer) -> None:
    """`atomic.write_dir` of a run directory (`import`), under the run's lock where the folder is
    there already: a run another command writes is never replaced under it."""
    with run_lock(run_dir) if run_dir.is_dir() else nullcontext():
        write_dir(run_dir, writer)


def _holds_only_the_lock(run_dir: Path) -> bool:
    try:
        return [p.name for p in run_dir.iterdir()] == [LOCK]
    except OSError:
        return False


def _remove_empty(folders: list[Path]) -> None:
    """Remove the folders a failed command made, deepest first, as long as they are empty."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:
            return
