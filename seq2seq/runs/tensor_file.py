"""Reading a safetensors file through one open. safetensors' `safe_open` opens the path twice (its
header, then the tensors through torch's `from_file`), so a run saving meanwhile, by a rename over
the name, could pair one file's header with the next one's tensors; `translate`, `evaluate` and
`serve` read a run's weights without a lock while `train` may be replacing them."""

import json
import os
from pathlib import Path

from safetensors import SafetensorError
from safetensors.torch import load

from seq2seq.errors import Seq2SeqError

MAX_HEADER = 100_000_000  # bytes; safetensors' own limit


def read_tensors(path: Path) -> tuple[dict, dict[str, str]]:
    """All tensors of the file and its metadata, with every failure a clean error."""
    if not path.is_file():
        raise Seq2SeqError(f"{path} is missing; the run has no trained weights yet")
    try:
        data = path.read_bytes()
        tensors = load(data)  # checks the whole file: header, offsets, length
        return tensors, _metadata(_header(data[8 : 8 + int.from_bytes(data[:8], "little")]))
    except (SafetensorError, OSError, ValueError) as e:
        raise Seq2SeqError(f"{path} is not a readable safetensors file ({e})") from None


def read_metadata(path: Path) -> dict[str, str]:
    """The file's metadata alone, without reading its tensors; a file that is not whole (a header
    or tensor data cut short, or longer than declared) is a ValueError, as `load` would find."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        length = int.from_bytes(f.read(8), "little")
        if not 0 < length <= min(MAX_HEADER, size - 8):
            raise ValueError(f"a header of {length} bytes in a file of {size}")
        header = _header(f.read(length))
    try:
        end = max((v["data_offsets"][1] for k, v in header.items() if k != "__metadata__"), default=0)
    except (KeyError, TypeError, IndexError):
        raise ValueError("a tensor without its data offsets") from None
    if 8 + length + end != size:
        raise ValueError(f"the header declares {8 + length + end} bytes, the file has {size}")
    return _metadata(header)


def _header(raw: bytes) -> dict:
    """The JSON header: an object, as the format requires."""
    try:
        header = json.loads(raw)
    except RecursionError:
        raise ValueError("a header nested too deeply") from None
    if not isinstance(header, dict):
        raise ValueError("a header that is not a JSON object")
    return header


def _metadata(header: dict) -> dict[str, str]:
    metadata = header.get("__metadata__") or {}
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise ValueError("metadata that is not a map of strings")
    return metadata
