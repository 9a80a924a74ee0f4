"""A hub dataset read as a stream (`datasets`' streaming mode): the training pairs are tokenized a
part at a time as they arrive and never stored, so a corpus larger than the disk trains in one pass.

A part is `size` pairs in stream order. Its kept pairs are cut into token batches among themselves
(sorted by length, the batches shuffled: Marian's maxi-batch), so a part of 100,000 pairs pads
about as little as a stored epoch does, and memory holds one part. Where a part begins is the
stream's position (`datasets`' `state_dict`), which the training state keeps with the part's digest
(a hash of its pairs): a resumed run opens the stream there, reads the part again, refuses it if
the digest differs (the dataset changed upstream), and skips the batches already trained.
"""

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import islice

import numpy as np

from seq2seq.data.batch import batching_lengths
from seq2seq.data.corpus import KEEP, MAX_RATIO, FilterReport, Pair, pair_verdict
from seq2seq.data.hf_datasets import check_languages, hub_split, import_datasets, names, row_pair
from seq2seq.data.sampling import CHUNK
from seq2seq.data.tokenized import content_identity
from seq2seq.errors import Seq2SeqError, first_line


@dataclass
class Part:
    """One part of a streamed epoch: its place in the stream and its kept pairs as ids."""

    number: int  # parts of the epoch before this one
    start: dict | None  # the stream's position at its first pair (None: the stream's start)
    offset: int  # pairs of the epoch read before it
    read: int  # pairs read for it, kept or not
    digest: str  # of the pairs read
    src_ids: list[list[int]] = field(repr=False)
    tgt_ids: list[list[int]] = field(repr=False)
    report: FilterReport = field(default_factory=FilterReport)
    last: bool = False  # the stream ends after it

    @property
    def lengths(self) -> np.ndarray:
        """(N,) each kept pair's batching length, as a stored set's `lengths`."""
        return batching_lengths(*self.side_lengths())

    def side_lengths(self) -> tuple[np.ndarray, np.ndarray]:
        """(N,) source and (N,) target lengths, in ids."""
        return tuple(
            np.fromiter(map(len, ids), dtype=np.int64, count=len(ids)) for ids in (self.src_ids, self.tgt_ids)
        )

    def rows(self, indices: Iterable[int]) -> tuple[list[list[int]], list[list[int]]]:
        return [self.src_ids[i] for i in indices], [self.tgt_ids[i] for i in indices]


class Stream:
    """One split of a hub dataset (`id` or `id:config`), opened for streaming."""

    def __init__(self, corpus: str, split: str, src: str, tgt: str):
        self.corpus, self.src, self.tgt = corpus, src, tgt
        name, _, config = corpus.partition(":")
        try:
            splits = import_datasets().load_dataset(name, config or None, streaming=True)
        except Exception as e:  # offline, unknown id, bad config: datasets raises many types
            raise Seq2SeqError(f"cannot stream dataset {corpus!r} ({first_line(e)})") from None
        self.split = hub_split(splits, split, corpus)
        self.dataset = splits[self.split]
        self.where = f"{corpus} ({self.split})"
        known = self.dataset.info.splits and self.dataset.info.splits.get(self.split)
        self.length = known.num_examples if known and known.num_examples else None  # pairs, if the card says

    def pairs(self, start: dict | None = None, offset: int = 0) -> Iterator[Pair]:
        """The pairs from `start` (a `position()`; None: the first), row `offset` + 1 onwards."""
        dataset = self.dataset
        if start is not None:
            if not same_shape(start, self.dataset.state_dict()):  # loaded lazily: checked here
                raise Seq2SeqError(f"{self.where}: the saved stream position is not one of this dataset")
            dataset = self.dataset.shard(1, 0)  # a copy, so the position moves only on it
            dataset.load_state_dict(start)
        self._iterated = dataset
        for number, row in enumerate(self._rows(dataset), start=offset + 1):
            if not isinstance(row, dict) or "translation" not in row:
                columns = names(row) if isinstance(row, dict) else type(row).__name__
                raise Seq2SeqError(f"{self.where} has no 'translation' column; columns: {columns}")
            if number == 1:
                check_languages(row["translation"], self.where, self.src, self.tgt)
            yield row_pair(row["translation"], number, self.where, self.src, self.tgt)

    def _rows(self, dataset: Iterable) -> Iterator[dict]:
        try:
            yield from dataset
        except Seq2SeqError:
            raise
        except Exception as e:  # a dropped connection, a corrupt shard: datasets raises many types
            raise Seq2SeqError(f"{self.where}: the stream broke off ({first_line(e)})") from None

    def position(self) -> dict:
        """Where the stream `pairs` last yielded from stands, as a JSON-ready dict."""
        return json.loads(json.dumps(self._iterated.state_dict()))

    def parts(
        self,
        size: int,
        encode: Callable[[list[Pair], int], "Encoded"],
        number: int = 0,
        start: dict | None = None,
        offset: int = 0,
    ) -> Iterator[Part]:
        """The epoch's parts from part `number`, which begins at `start` after `offset` pairs;
        `encode(pairs, number)` tokenizes and filters a part's pairs."""
        pairs = self.pairs(start, offset)
        chunk = list(islice(pairs, size))
        while chunk:
            following = self.position()  # before the next row is peeked at: where the next part begins
            ahead = list(islice(pairs, 1))  # whether this part is the last
            src_ids, tgt_ids, report = encode(chunk, number)
            read, hashed = len(chunk), digest(chunk)
            del chunk  # the texts, before the next part's are read
            yield Part(number, start, offset, read, hashed, src_ids, tgt_ids, report, last=not ahead)
            del src_ids, tgt_ids
            number, start, offset = number + 1, following, offset + read
            chunk = ahead + list(islice(pairs, size - 1)) if ahead else []


def first_pairs(corpus: str, src: str, tgt: str, sentences: int) -> Iterator[Pair]:
    """The training stream's first pairs, as many as `sentences` (both sides) take: what a streamed
    run's tokenizer learns from, since a stream is read once and the corpus may be endless."""
    return islice(Stream(corpus, "train", src, tgt).pairs(), -(-sentences // 2))


Encoded = tuple[list[list[int]], list[list[int]], FilterReport]  # the kept pairs' ids, what was dropped


def encoder(
    tokenizer, max_len: int, alpha: float, draw: Callable[[int], int]
) -> Callable[[list[Pair], int], Encoded]:
    """A part's `encode`: both sides in their most likely pieces, filtered as a stored set is
    (`pair_verdict`); with `alpha`, the kept sources then sampled with seed `draw(part number)`
    (subword regularization, as data/sampling.py draws a stored epoch)."""

    def encode(pairs: list[Pair], number: int) -> Encoded:
        src_texts, tgt_texts = [s for s, _ in pairs], [t for _, t in pairs]
        src, tgt = tokenizer.encode(src_texts, "source"), tokenizer.encode(tgt_texts, "target")
        report, kept = FilterReport(max_len=max_len), []
        for i, (s, t) in enumerate(pairs):
            verdict = pair_verdict(s, t, len(src[i]), len(tgt[i]), max_len, MAX_RATIO)
            report.count(verdict)
            if verdict == KEEP:
                kept.append(i)
        if alpha > 0:
            texts = [src_texts[i] for i in kept]
            src = []
            for chunk, start in enumerate(range(0, len(texts), CHUNK)):
                src += tokenizer.sample(texts[start : start + CHUNK], alpha, draw(number, chunk), "source")
        else:
            src = [src[i] for i in kept]
        return src, [tgt[i] for i in kept], report

    return encode


def same_shape(saved: object, fresh: object) -> bool:
    """Whether a saved stream position has the layout of this dataset's (`state_dict`): the same
    keys, iterable types and kinds of values (a part not yet begun holds None where one is)."""
    if isinstance(saved, dict) and isinstance(fresh, dict):
        if set(saved) != set(fresh):
            return False
        return all(saved[k] == fresh[k] if k == "type" else same_shape(saved[k], fresh[k]) for k in fresh)
    if saved is None or fresh is None:
        return True
    return type(saved) is type(fresh)


def digest(pairs: list[Pair]) -> str:
    """A short hash of a part's pairs, whatever the texts hold (a stored hub corpus's identity, cut)."""
    return content_identity(pairs)[:16]
