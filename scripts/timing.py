"""What every decoder in the benchmarks is timed with: the same length-sorted batches, the median
of repeated runs."""

import statistics
import time
from collections.abc import Callable
from typing import TypeVar

import torch

T = TypeVar("T")


def finish(device: torch.device) -> None:
    """Wait for the work queued on `device`: a CUDA call returns before its kernels end (a training
    step's loss.item() waits for the forward only), so a timer stopped without this times launches."""
    if device.type == "cuda":
        torch.cuda.synchronize()


def length_sorted_batches(sources: list[list[int]], batch_size: int) -> list[list[int]]:
    """Sentence indices in batches of similar source length, as `seq2seq translate` forms them."""
    order = sorted(range(len(sources)), key=lambda i: len(sources[i]))
    return [order[s : s + batch_size] for s in range(0, len(order), batch_size)]


def median_time(run: Callable[[], T], repeats: int) -> tuple[float, T]:
    """Median seconds of `run()` over `repeats` calls (warm up before), and the last call's result."""
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result
