import subprocess
import sys

import pytest

# Where does a large tensor live? glibc serves blocks that large with their own mmap, unmapped again
# on free, so a decoding step (20 MB) or a training step (its 98 MB logits) that makes such tensors
# faults their pages in afresh every step; under the policy they come from the heap, whose freed
# memory is reused.
WHERE = """
import sys, torch
from seq2seq.allocator import keep_freed_memory
if sys.argv[1] == "keep":
    assert keep_freed_memory()
else:  # glibc's initial threshold, pinned: the dynamic one may have grown while torch was imported
    import ctypes
    assert ctypes.CDLL(None).mallopt(-3, 128 * 1024) == 1
ptr = torch.empty(int(sys.argv[2])).data_ptr()
for line in open("/proc/self/maps"):
    if line.rstrip().endswith("[heap]"):
        start, end = (int(x, 16) for x in line.split()[0].split("-"))
        if start <= ptr < end:
            print("heap")
            break
else:
    print("mmap")
"""


def where_a_large_tensor_lives(policy: str, floats: int) -> str:
    command = [sys.executable, "-c", WHERE, policy, str(floats)]
    out = subprocess.run(command, capture_output=True, text=True, check=True)
    return out.stdout.strip()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a glibc setting")
@pytest.mark.parametrize("floats", [5_000_000, 25_000_000])  # 20 MB, and 100 MB: above 32 MiB
def test_large_blocks_come_from_the_reused_heap(floats):
    assert where_a_large_tensor_lives("default", floats) == "mmap"
    assert where_a_large_tensor_lives("keep", floats) == "heap"
