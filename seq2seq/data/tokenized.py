"""The training pairs as token ids in `datasets`' Arrow storage: tokenized once, kept on disk in the
run directory, memory-mapped on every later start.

Why: as Python lists a token costs about 36 bytes, so a corpus of millions of pairs needs many GB
of RAM before the first step; in Arrow it costs 4 bytes on disk and only the pages a batch touches
are read. The stored set is keyed by the corpus files (path, size, mtime), the tokenizer's bytes
and the length filter, so a second start on the same data opens it at once, and any change to
them tokenizes again.

    <run>/tokenized/train-<key>/    the kept pairs: src, src_ids, tgt_ids, length, line (the pair's
                                    line in the corpus, from 0; save_to_disk layout)
                        report.json the filter's counts (seq2seq.data.FilterReport)
"""

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict
from itertools import islice
from pathlib import Path

import numpy as np

from seq2seq.data.batch import pair_lengths
from seq2seq.data.corpus import KEEP, MAX_RATIO, FilterReport, Pair, pair_verdict
from seq2seq.data.hf_datasets import import_datasets
from seq2seq.errors import Seq2SeqError

FOLDER = "tokenized"
FORMAT = 3  # bump when the stored columns or their meaning change
REPORT = "report.json"
PARALLEL_FROM = 200_000  # pairs; below this a worker pool costs more than it saves


class TokenizedPairs:
    """Kept training pairs as ids; `rows` gathers one batch's worth from the memory-mapped table."""

    def __init__(self, dataset, report: FilterReport, folder: Path):
        self.dataset, self.report, self.folder = dataset, report, folder
        self.lengths = dataset.data.column("length").to_numpy()  # (N,) longer side + EOS
        self._arrow = dataset.with_format("arrow")

    def __len__(self) -> int:
        return len(self.dataset)

    def rows(self, indices) -> tuple[list[list[int]], list[list[int]]]:
        return self.columns(indices, "src_ids", "tgt_ids")

    def target_lengths(self) -> np.ndarray:
        """(N,) the stored target ids' lengths, read from the table without building lists."""
        return self._list_lengths("tgt_ids")

    def side_lengths(self) -> tuple[np.ndarray, np.ndarray]:
        """(N,) source and (N,) target lengths, in ids, of the stored segmentation."""
        return self._list_lengths("src_ids"), self._list_lengths("tgt_ids")

    def _list_lengths(self, column: str) -> np.ndarray:
        import pyarrow.compute as pc  # there with `datasets`, imported as late as it is

        return pc.list_value_length(self.dataset.data.column(column)).to_numpy()

    def columns(self, indices, *names: str) -> tuple[list, ...]:
        """The named columns of these pairs, read in one take: the ids, or the source text
        ("src") for a segmentation other than the stored one."""
        table = self._arrow[[int(i) for i in indices]]
        return tuple(table.column(name).to_pylist() for name in names)


def cache_key(identity: str, tokenizer_path: Path, max_len: int, max_ratio: float) -> str:
    digest = hashlib.sha256()
    digest.update(json.dumps([FORMAT, identity, max_len, max_ratio]).encode())
    digest.update(Path(tokenizer_path).read_bytes())
    return digest.hexdigest()[:16]


def content_identity(pairs: list[Pair]) -> str:
    """The identity of a corpus known only by its text (a hub dataset): a hash of every pair."""
    digest = hashlib.sha256()
    for pair in pairs:
        digest.update(json.dumps(pair).encode() + b"\n")  # unambiguous, whatever the texts hold
    return digest.hexdigest()


def build_if_missing(
    run_dir: Path,
    key: str,
    pairs: Callable[[], Iterable[Pair]],
    tokenizer_path: Path,
    max_len: int,
    max_ratio: float = MAX_RATIO,
) -> Path:
    """The folder of the stored pairs for `key` (open it with `load`), built from `pairs()` (called
    only on a miss) when absent. Sets of other keys are removed: they belong to a corpus or
    tokenizer the run no longer uses."""
    root = Path(run_dir) / FOLDER
    _remove_links(root)
    target = root / f"train-{key}"
    if not (target / REPORT).is_file():
        _remove_others(root, keep=None)
        try:
            _build(pairs(), tokenizer_path, max_len, max_ratio, target)
        except OSError as e:  # a full disk, a read-only run directory
            raise Seq2SeqError(f"cannot write the tokenized corpus in {root} ({e.strerror or e})") from None
    _remove_others(root, keep=target.name)
    return target


def load(folder: str | Path) -> TokenizedPairs:
    folder, datasets = Path(folder), import_datasets()
    try:
        report = FilterReport(**json.loads((folder / REPORT).read_text(encoding="utf-8")))
        dataset = datasets.load_from_disk(str(folder))
    except (OSError, ValueError, TypeError) as e:
        raise Seq2SeqError(f"{folder} is not a readable tokenized corpus ({e}); delete it") from None
    return TokenizedPairs(dataset, report, folder)


def _build(pairs: Iterable[Pair], tokenizer_path: Path, max_len: int, max_ratio: float, target: Path) -> None:
    """Tokenize with a batched `map` (a worker per core on a large corpus), keep what the filter
    keeps, and write it beside `target` before one rename, so a killed build leaves no half set.
    Consumes `pairs` (a list is emptied)."""
    datasets = import_datasets()
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".build-") as tmp:
        text, n_pairs = _text_file(pairs, Path(tmp) / "text.arrow")
        table = datasets.Dataset.from_file(text)
        encoded = table.map(
            Encoder(str(tokenizer_path), max_len, max_ratio),
            batched=True,
            batch_size=10_000,
            remove_columns=["tgt"],
            cache_file_name=str(Path(tmp) / "encoded.arrow"),
            num_proc=(os.cpu_count() or 1) if n_pairs >= PARALLEL_FROM else None,
            features=datasets.Features(
                {
                    "src": datasets.Value("string"),
                    "src_ids": datasets.Sequence(datasets.Value("int32")),
                    "tgt_ids": datasets.Sequence(datasets.Value("int32")),
                    "length": datasets.Value("int32"),
                    "verdict": datasets.Value("int8"),
                }
            ),
        )
        verdicts = encoded.data.column("verdict").to_numpy()
        report = FilterReport(max_len=max_len)
        for verdict, n in zip(*np.unique(verdicts, return_counts=True), strict=True):
            report.count(int(verdict), int(n))
        if not report.kept:
            raise Seq2SeqError(f"every one of the {n_pairs} training pairs was filtered out")
        lines = np.flatnonzero(verdicts == KEEP)  # each kept pair's line in the corpus, from 0
        kept = encoded.select(lines).remove_columns("verdict").add_column("line", lines.astype(np.int64))
        staged = Path(tmp) / "kept"
        kept.save_to_disk(str(staged))
        (staged / REPORT).write_text(json.dumps(asdict(report)), encoding="utf-8")
        del encoded, kept
        os.replace(staged, target)


def _text_file(pairs: Iterable[Pair], path: Path, chunk: int = 100_000) -> tuple[str, int]:
    """Move the pairs into an Arrow file a chunk at a time (a list is emptied as it goes), so the
    text is never held twice (as Python strings and as an Arrow copy) and a streamed corpus is
    never held at all; the tokenizing workers read it memory-mapped instead of each inheriting
    it. Returns the file and the number of pairs."""
    import pyarrow as pa

    schema = pa.schema([("src", pa.string()), ("tgt", pa.string())])
    if isinstance(pairs, list):
        chunks = _emptied(pairs, chunk)
    else:
        stream = iter(pairs)
        chunks = iter(lambda: list(islice(stream, chunk)), [])
    count = 0
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, schema) as writer:
        for part in chunks:
            writer.write_batch(pa.record_batch([[s for s, _ in part], [t for _, t in part]], schema=schema))
            count += len(part)
    return str(path), count


def _emptied(pairs: list[Pair], chunk: int) -> Iterator[list[Pair]]:
    while pairs:
        part = pairs[:chunk]
        del pairs[:chunk]
        yield part


class Encoder:
    """The batched `map` function; picklable, so worker processes load the tokenizer themselves."""

    def __init__(self, tokenizer_path: str, max_len: int, max_ratio: float):
        self.tokenizer_path, self.max_len, self.max_ratio = tokenizer_path, max_len, max_ratio
        self._tokenizer = None

    def __call__(self, batch: dict) -> dict:
        if self._tokenizer is None:
            from seq2seq.data.opener import open_tokenizer

            self._tokenizer = open_tokenizer(self.tokenizer_path)
        src = self._tokenizer.encode(batch["src"], "source")
        tgt = self._tokenizer.encode(batch["tgt"], "target")
        return {
            "src": batch["src"],
            "src_ids": src,
            "tgt_ids": tgt,
            "length": pair_lengths(src, tgt),
            "verdict": [
                pair_verdict(a, b, len(s), len(t), self.max_len, self.max_ratio)
                for a, b, s, t in zip(batch["src"], batch["tgt"], src, tgt, strict=True)
            ],
        }

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_tokenizer": None}


def _remove_links(root: Path) -> None:
    """A run from elsewhere may hold a link (or a file) where the sets go, or links among them.
    They are a cache: remove the links themselves, never follow them (building or cleaning up
    through one would write, or delete, outside the run)."""
    if root.is_symlink() or root.is_file():
        root.unlink()
    elif root.is_dir():
        for entry in root.iterdir():
            if entry.is_symlink():
                entry.unlink()


def _remove_others(root: Path, keep: str | None) -> None:
    if root.is_dir():
        for folder in root.iterdir():
            if folder.name != keep and folder.name.startswith(("train-", ".build-")):
                (folder / REPORT).unlink(missing_ok=True)  # first: a half-removed set is never "built"
                shutil.rmtree(folder, ignore_errors=True)
