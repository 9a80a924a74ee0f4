"""Which weights a side file of a run (aligner.json, trust.json) was fitted to: a digest of the
run's model.safetensors, recorded in the side file when it is written. A side file that recorded
other weights (the run trained on since, or its weights replaced) is stale: ignored, with one line
naming the command that fits it again."""

import hashlib
import os
import sys
from pathlib import Path

WEIGHTS = "model.safetensors"  # the run's best weights (runs/files.py's BEST)
_DIGESTS: dict[tuple, str] = {}  # (path, size, mtime) -> digest: each file read once per process


def weights_digest(run: Path) -> str | None:
    """The first 16 hex digits of the SHA-256 of the run's weights; None where it has none."""
    path = Path(run) / WEIGHTS
    try:
        info = os.stat(path)
    except OSError:
        return None
    key = (str(path), info.st_size, info.st_mtime_ns)
    if key not in _DIGESTS:
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                digest.update(chunk)
        _DIGESTS[key] = digest.hexdigest()[:16]
    return _DIGESTS[key]


def stale(run: Path, recorded: str | None, side_file: Path, refit: str) -> bool:
    """Whether `side_file` recorded other weights than the run's; if so it says so on stderr, in
    one line naming `refit`, the command that fits it again. A side file written before side files
    recorded their weights (`recorded` None) is read as it is."""
    current = weights_digest(run)
    if recorded is None or current is None or recorded == current:
        return False
    sys.stderr.write(
        f"warning: {side_file} was fitted to other weights than {Path(run) / WEIGHTS} and is "
        f"ignored; `{refit}` fits it again\n"
    )
    return True
