"""Data-parallel training under `torchrun`: which process this is, and the few collectives the
training loop needs. Every function is a no-op in a single process, so the loop reads the same
either way and a single-process run does exactly what it did before this module existed.

torchrun sets RANK, WORLD_SIZE and LOCAL_RANK (and MASTER_ADDR/PORT) for every process it starts;
we start gloo on CPU and NCCL on CUDA, one device per process chosen by LOCAL_RANK.
"""

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TypeVar

import torch
import torch.distributed as dist

from seq2seq.device import resolve_device
from seq2seq.errors import Seq2SeqError, first_line

T = TypeVar("T")

# Rank 0 alone validates, tokenizes a new corpus or trains a tokenizer while the others wait at a
# collective: the default 30 minutes can be too short for that on a large corpus.
WAIT = timedelta(hours=2)


@dataclass(frozen=True)
class World:
    rank: int = 0
    size: int = 1
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))

    @property
    def is_main(self) -> bool:
        """Rank 0: the one process that writes the run directory and draws progress."""
        return self.rank == 0

    @property
    def backend(self) -> str | None:
        return None if self.size == 1 else dist.get_backend()

    def sum(self, values: list[float]) -> list[float]:
        """Element-wise sum over all processes (float64, so token counts stay exact)."""
        return self._all_reduce(values, dist.ReduceOp.SUM)

    def largest(self, values: list[float]) -> list[float]:
        """Element-wise maximum over all processes (float64: small integer codes stay exact): one
        process asking to stop stops all, and rank 0's clock gives every rank the time used."""
        return self._all_reduce(values, dist.ReduceOp.MAX)

    def _all_reduce(self, values: list[float], op) -> list[float]:
        if self.size == 1:
            return values
        tensor = torch.tensor(values, dtype=torch.float64, device=self._collective_device)
        dist.all_reduce(tensor, op=op)
        return tensor.tolist()

    def from_main(self, make: Callable[[], T]) -> T:
        """`make()` run on rank 0 only, its result given to every process. Whatever rank 0 raises
        is announced first: a Seq2SeqError is raised on every rank as one line, anything else
        ends the others with one line too, so no process waits for a result that will never come."""
        if self.size == 1:
            return make()
        result, error, failure = None, None, None
        if self.is_main:
            try:
                result = make()
            except Seq2SeqError as e:
                error = str(e)
            except BaseException as e:  # a bug or Ctrl-C: tell the others, then raise it here
                failure, error = e, f"{type(e).__name__}: {e}"
        box = [(result, error)]
        dist.broadcast_object_list(box, src=0, device=self._collective_device)
        if failure is not None:
            raise failure
        result, error = box[0]
        if error is not None:
            raise Seq2SeqError(error if self.is_main else f"rank {self.rank}: rank 0 failed: {error}")
        return result

    @property
    def _collective_device(self) -> torch.device:
        return self.device if self.backend == "nccl" else torch.device("cpu")


def launched_by_torchrun() -> bool:
    return int(os.environ.get("WORLD_SIZE", "1")) > 1


def is_main_process() -> bool:
    """Rank 0 of a torchrun job, or a process on its own (known before the group is joined)."""
    return int(os.environ.get("RANK", "0")) == 0


@contextmanager
def peers_watched(here: World) -> Iterator[None]:
    """On ranks other than 0, a collective that fails because another process of the job stopped
    (rank 0 could not save, was killed, ...) becomes one line; that process says why itself."""
    try:
        yield
    except (RuntimeError, ConnectionError) as e:  # gloo and NCCL report a lost peer as these
        if here.size == 1 or here.is_main or isinstance(e, Seq2SeqError):
            raise
        raise Seq2SeqError(
            f"rank {here.rank}: another process of the job stopped ({first_line(e)})"
        ) from None


@contextmanager
def world(device_name: str) -> Iterator[World]:
    """This process's place in the job: a single process, or one of torchrun's, for as long as
    the block runs (the process group is torn down after it, even on an error)."""
    if not launched_by_torchrun():
        yield World(device=resolve_device(device_name))
        return
    rank, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    device = resolve_device(device_name)
    if device.type == "cuda":
        local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        if local_rank >= torch.cuda.device_count():
            raise Seq2SeqError(
                f"LOCAL_RANK {local_rank} but this node has {torch.cuda.device_count()} CUDA devices; "
                "give torchrun --nproc-per-node no more than the GPUs of a node"
            )
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
    backend = "nccl" if device.type == "cuda" else "gloo"
    try:
        dist.init_process_group(backend, rank=rank, world_size=size, timeout=WAIT)
    except (RuntimeError, ValueError) as e:
        raise Seq2SeqError(f"rank {rank}: cannot join the process group ({e})") from None
    try:
        yield World(rank=rank, size=size, device=device)
    finally:
        dist.destroy_process_group()


def rank_batch(batches: list, start: int, world: World) -> tuple[int, float]:
    """Which of an epoch's batches this process trains on in the step that begins at `start`, and
    its weight. The step takes batches start .. start+size-1, one per rank, so the ranks' shares
    are disjoint and together are the single-process epoch in its seeded order. Past the end of
    the epoch a rank repeats the step's first batch with weight 0: it then contributes nothing but
    still joins the gradient exchange, so no rank waits for one that has run out."""
    index = start + world.rank
    return (index, 1.0) if index < len(batches) else (start, 0.0)
