"""Subword regularization by the epoch: every source segmentation of an epoch is drawn at its start,
so that its batches are cut by the lengths they will have.

Why not batch by batch: batches were cut by the stored (most likely) segmentation's lengths, while
a sampled one is longer (1.12x the pieces at alpha 0.3) and varies from pair to pair, so the longest
source of a batch set its padding. On Multi30k en->fr one epoch's sources filled 714,195 cells for
496,160 pieces (44% padding); cut by the sampled lengths, 543,791 (10%). Each pair is still seen
once an epoch in a segmentation drawn for it, as before.

Targets keep their stored (most likely) pieces.

The draw costs about 34 us a source (one thread: SentencePiece's threads draw in no fixed order),
a second for Multi30k but a minute or two for a 2M-pair corpus. So a corpus of several `CHUNK`s is
drawn by worker processes, a chunk each at a time: every chunk has its own seed, so the draw is the
same whatever the number of workers. The workers come from a fork server, never forked from
this process: a fork copies the locks that this process's other threads (the allocator's, Arrow's,
a server's) may hold at that moment, and a worker that takes one then waits forever. They open the
stored set (memory-mapped) and the tokenizer from their paths. And the epoch's draw is kept in the
run (`KEPT`, one file, replaced each epoch): a resumed run reads it back instead of drawing it again.
"""

import multiprocessing
import zipfile
from itertools import chain
from pathlib import Path

import numpy as np

from seq2seq.atomic import write_with
from seq2seq.data.batch import batching_lengths
from seq2seq.data.opener import open_tokenizer
from seq2seq.data.tokenized import TokenizedPairs, load
from seq2seq.data.tokenizer import Tokenizer

CHUNK = 50_000  # sources sampled per call: a million-pair corpus never holds its texts at once
KEPT = "sampled.npz"  # in the run directory: the current epoch's draw


class SampledPairs:
    """One epoch's pieces, drawn from (seed, epoch): the sources sampled at `alpha`, the targets
    as stored."""

    def __init__(
        self,
        pairs: TokenizedPairs,
        tokenizer: Tokenizer,
        alpha: float,
        seed: int,
        epoch: int,
        kept: Path | None = None,
        workers: int = 1,
    ):
        """`kept`: where the draw is read back from, if it is this one, or else written to;
        `workers`: processes that draw the chunks (1: this one)."""
        self.pairs, self.alpha = pairs, alpha
        # what decides the draw: the stored set (its folder names its corpus and tokenizer), the
        # alpha, the seed and the epoch
        key = f"{pairs.folder.name} {len(pairs)} {alpha!r} {seed} {epoch}"
        if kept is not None and self._read(kept, key):
            return
        self._draw(tokenizer, seed, epoch, workers)
        if kept is not None:
            write_with(kept, lambda tmp: self._write(tmp, key))

    def _draw(self, tokenizer: Tokenizer, seed: int, epoch: int, workers: int) -> None:
        pairs = self.pairs
        # (first row, row after the last, SentencePiece's 32-bit seed) of each chunk
        chunks = [
            (start, min(start + CHUNK, len(pairs)), (seed * 1_000_003 + epoch * 1_009 + chunk) % 2**32)
            for chunk, start in enumerate(range(0, len(pairs), CHUNK))
        ]
        workers = min(workers, len(chunks))
        if workers > 1:
            context = multiprocessing.get_context(_START_METHOD)
            if _START_METHOD == "forkserver":  # the server imports once what every worker needs
                context.set_forkserver_preload([__name__, "datasets"])
            opened_by_path = (str(pairs.folder), str(tokenizer.path), self.alpha)
            with context.Pool(workers, _adopt, opened_by_path) as pool:
                drawn = pool.map(_draw_adopted, chunks)  # in the chunks' order
        else:
            drawn = [draw_chunk(pairs, tokenizer, self.alpha, *chunk) for chunk in chunks]
        # the sources' (pieces,) end to end and (N + 1,) where each pair's pieces begin
        self.flat, self.offsets = _joined(drawn)
        self.lengths = batching_lengths(*self.side_lengths())  # (N,) as the stored one

    def _write(self, path: Path, key: str) -> None:
        arrays = {"flat": self.flat, "offsets": self.offsets, "lengths": self.lengths}
        with open(path, "wb") as f:  # a file object: np.savez would add ".npz" to a name
            np.savez(f, key=np.array(key), **arrays)

    def _read(self, path: Path, key: str) -> bool:
        """Take the kept draw if it is this draw; a missing, torn or other one is drawn again."""
        try:
            with np.load(path, allow_pickle=False) as kept:
                if str(kept["key"]) != key:
                    return False
                self.flat, self.offsets, self.lengths = kept["flat"], kept["offsets"], kept["lengths"]
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
            return False
        return len(self.lengths) == len(self.pairs) == len(self.offsets) - 1

    def side_lengths(self) -> tuple[np.ndarray, np.ndarray]:
        """(N,) source lengths as drawn and (N,) target lengths as stored, in ids."""
        return np.diff(self.offsets), self.pairs.target_lengths()

    def rows(self, indices) -> tuple[list[list[int]], list[list[int]]]:
        """The pieces of these pairs, the sources as drawn, as `TokenizedPairs.rows`."""
        (tgt,) = self.pairs.columns(indices, "tgt_ids")
        return _pieces(self.flat, self.offsets, indices), tgt


Drawn = tuple[np.ndarray, np.ndarray]  # (n,) piece counts and (sum of counts,) pieces of n rows


def draw_chunk(
    pairs: TokenizedPairs, tokenizer: Tokenizer, alpha: float, start: int, stop: int, draw: int
) -> Drawn:
    """The sources of rows start .. stop sampled at `alpha` with seed `draw`."""
    (texts,) = pairs.columns(range(start, stop), "src")
    return _flattened(tokenizer.sample(texts, alpha, draw, "source"))


def _flattened(ids: list[list[int]]) -> Drawn:
    counts = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
    return counts, np.fromiter(chain.from_iterable(ids), dtype=np.int32)


def _joined(chunks: list[Drawn]) -> tuple[np.ndarray, np.ndarray]:
    """The chunks' pieces end to end (pieces,) and each row's start (N + 1,)."""
    if not chunks:
        return np.zeros(0, dtype=np.int32), np.zeros(1, dtype=np.int64)
    counts = np.concatenate([c for c, _ in chunks])
    return np.concatenate([p for _, p in chunks]), np.concatenate([[0], np.cumsum(counts)])


def _pieces(flat: np.ndarray, offsets: np.ndarray, indices) -> list[list[int]]:
    return [flat[offsets[i] : offsets[i + 1]].tolist() for i in indices]


# a fork server where there is one (Linux, macOS), else fresh interpreters (Windows)
_START_METHOD = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
_adopted: tuple = ()  # in a worker process: (pairs, tokenizer, alpha)


def _adopt(folder: str, tokenizer_path: str, alpha: float) -> None:
    global _adopted
    _adopted = (load(folder), open_tokenizer(tokenizer_path), alpha)


def _draw_adopted(chunk: tuple[int, int, int]) -> Drawn:
    return draw_chunk(*_adopted, *chunk)
