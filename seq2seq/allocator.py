"""Process memory policy: keep freed blocks instead of handing them back to the OS.

glibc serves large blocks with mmap and returns them (and the heap's free top) to the kernel on free.
A decoding step allocates and frees tensors of megabytes (beam 5, batch 64: 320 x 8000 logits are
10 MB), so every step would touch fresh pages again, each a page fault. Raising both thresholds
keeps the memory in the heap for reuse; the process' peak is unchanged because the blocks are
reused, not accumulated. A training step's blocks are larger than the threshold's ceiling (its
(tokens, V) logits and their gradient are (3072, 8000) fp32, 98 MB each), and faulting such a
block in costs several times writing it again, so no block is mmapped: every one comes from the
heap. The page faults and step times measured: docs/performance.md.
"""

import ctypes
import sys

M_TRIM_THRESHOLD = -1  # mallopt parameters, from glibc's malloc.h
M_MMAP_THRESHOLD = -3
M_MMAP_MAX = -4
MMAP_THRESHOLD = 32 << 20  # glibc's ceiling (64-bit): blocks up to 32 MiB come from the heap
MMAP_MAX = 0  # and larger ones too: glibc maps none
TRIM_THRESHOLD = 1 << 30  # keep up to 1 GiB of free heap rather than trimming it


def keep_freed_memory() -> bool:
    """Ask glibc to reuse freed memory; True when it agreed, False elsewhere (macOS, Windows, musl),
    where there is nothing to do."""
    mallopt = _glibc("mallopt")
    if mallopt is None:
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    settings = (M_MMAP_THRESHOLD, MMAP_THRESHOLD), (M_MMAP_MAX, MMAP_MAX), (M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    return all([mallopt(name, value) == 1 for name, value in settings])


def release_freed_memory() -> bool:
    """Hand the free heap back to the system now (glibc's malloc_trim): for a long-lived process
    that has gone idle after a burst, such as the server once no request has come for a while.
    True when something was released."""
    trim = _glibc("malloc_trim")
    if trim is None:
        return False
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim(0) == 1


def _glibc(name: str):
    """A glibc function, or None off Linux or where the C library has none (musl). Looked up among
    the process' own symbols, libc's among them: no library search (find_library runs ldconfig in
    a subprocess, at every start of the CLI)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return getattr(ctypes.CDLL(None), name)
    except (OSError, AttributeError):
        return None
