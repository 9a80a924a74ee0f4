"""Parallel (src, tgt) sentence pairs, loaded through Hugging Face `datasets`.

A corpus is named by one string:
- `multi30k`: the official Multi30k raw files, downloaded and cached by `datasets` (from a mirror
  named by SEQ2SEQ_MULTI30K_URL, if set), or read from a local folder in the same
  `<split>.<lang>.gz` layout (`data_dir` / SEQ2SEQ_DATA_DIR);
- a path pattern with `{split}`: `mine/{split}.tsv` (src<TAB>tgt lines) or
  `books/{split}.parquet` / `.json` / `.jsonl` (a `translation` column of {lang: text} dicts);
- anything else is a Hugging Face hub dataset id with a `translation` column, optionally
  `id:config` (e.g. `opus_books:en-fr`).
"""

import gzip
import os
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import zip_longest
from pathlib import Path

from seq2seq.data.hf_datasets import import_datasets, load_hub, load_translation_file
from seq2seq.errors import Seq2SeqError, first_line

MULTI30K_URL = "https://raw.githubusercontent.com/multi30k/dataset/master/data/task1/raw"
MULTI30K_URL_ENV = "SEQ2SEQ_MULTI30K_URL"  # a mirror of the folder above, same file names
MULTI30K_LANGS = {
    "train": ("en", "de", "fr", "cs"),
    "val": ("en", "de", "fr", "cs"),
    "test_2016_flickr": ("en", "de", "fr", "cs"),
    "test_2017_flickr": ("en", "de", "fr"),
    "test_2017_mscoco": ("en", "de", "fr"),
}
DATA_DIR_ENV = "SEQ2SEQ_DATA_DIR"
TRANSLATION_FILE_FORMATS = {".parquet": "parquet", ".json": "json", ".jsonl": "json"}

Pair = tuple[str, str]
MAX_RATIO = 3.0  # a training pair whose longer side has more pieces than this times the shorter is dropped


def load_pairs(corpus: str, split: str, src: str, tgt: str, data_dir: str | Path | None = None) -> list[Pair]:
    """All (src, tgt) pairs of one split, in corpus order, nothing filtered."""
    pairs = stream_pairs(corpus, split, src, tgt, data_dir)
    return pairs if isinstance(pairs, list) else list(pairs)


def stream_pairs(
    corpus: str, split: str, src: str, tgt: str, data_dir: str | Path | None = None
) -> Iterable[Pair]:
    """The pairs of `load_pairs`, read one line at a time from a TSV or Multi30k file, so a corpus
    of any size passes through without being held (a bad line is an error when the stream reaches
    it; an empty or uneven corpus at its end); a list where `datasets` reads the corpus whole."""
    files = _corpus_files(corpus, split, src, tgt, data_dir)
    if files is None:
        return load_hub(corpus, split, src, tgt)
    if corpus == "multi30k":
        return _stream_multi30k(files)
    return _stream_file(files[0], src, tgt)


def _corpus_files(corpus: str, split: str, src: str, tgt: str, data_dir) -> list[Path] | None:
    """The local files a split is read from (Multi30k: one per language, downloaded if need be; a
    `{split}` pattern: one); None for a hub dataset."""
    if corpus == "multi30k":
        return _multi30k_files(split, src, tgt, data_dir or os.environ.get(DATA_DIR_ENV))
    if not is_hub(corpus):
        try:
            path = Path(corpus.format(split=split))
        except (KeyError, IndexError, ValueError, AttributeError):
            raise Seq2SeqError(
                f"--corpus {corpus!r}: a path pattern may hold {{split}} and no other braces"
            ) from None
        if not path.is_file():
            raise Seq2SeqError(f"{path} does not exist or is not a file")
        return [path]
    return None


def is_hub(corpus: str) -> bool:
    """Whether `corpus` names a hub dataset (neither Multi30k nor a path pattern)."""
    return corpus != "multi30k" and "{split}" not in corpus


def corpus_name(corpus: str) -> str:
    """A short name for run directories: `multi30k`, `mine` for `mine/{split}.tsv`, `opus_books`."""
    if "{split}" in corpus:
        folder = Path(corpus).parent.name
        return folder or Path(corpus).stem.replace("{split}", "").strip("._-") or "local"
    return corpus.split(":")[0].replace("/", "_")


@dataclass
class FilterReport:
    """How many training pairs each filter dropped, so the user sees what the corpus lost."""

    kept: int = 0
    empty: int = 0
    too_long: int = 0  # longer than the model's limit, in pieces
    bad_ratio: int = 0
    max_len: int = 0

    @property
    def dropped(self) -> int:
        return self.empty + self.too_long + self.bad_ratio

    def count(self, verdict: int, n: int = 1) -> None:
        """Add `n` pairs that `pair_verdict` judged so."""
        name = VERDICTS[verdict]
        setattr(self, name, getattr(self, name) + n)


def filter_pairs(
    pairs: list[Pair],
    pieces: Callable[[list[str]], list[int]],
    max_len: int = 255,
    max_ratio: float = MAX_RATIO,
) -> tuple[list[Pair], FilterReport]:
    """Drop training pairs that teach nothing or mislead: empty, longer than the model takes, or
    wildly mismatched in length. Lengths are in tokenizer pieces (`pieces(texts)` counts them),
    which mean much the same in every script; whitespace words do not (a Chinese or Thai sentence
    is one "word", so a word ratio drops nearly every such pair).

    The ratio filter only applies once a side has more than 8 pieces, since short captions
    ("Dogs." -> "Des chiens.") legitimately differ a lot in relative length.
    """
    kept, report = [], FilterReport(max_len=max_len)
    n_src, n_tgt = pieces([s for s, _ in pairs]), pieces([t for _, t in pairs])
    for pair, a, b in zip(pairs, n_src, n_tgt, strict=True):
        verdict = pair_verdict(*pair, a, b, max_len, max_ratio)
        report.count(verdict)
        if verdict == KEEP:
            kept.append(pair)
    if not kept:
        raise Seq2SeqError(f"every one of the {len(pairs)} training pairs was filtered out")
    return kept, report


VERDICTS = ("kept", "empty", "too_long", "bad_ratio")  # pair_verdict's codes, as FilterReport fields
KEEP, EMPTY, TOO_LONG, BAD_RATIO = range(len(VERDICTS))


def pair_verdict(src_text: str, tgt_text: str, a: int, b: int, max_len: int, max_ratio: float) -> int:
    """Why `filter_pairs` drops a pair of `a` and `b` pieces (KEEP: it does not); one rule for the
    list path and the Arrow-backed one (seq2seq.data.tokenized)."""
    if not src_text.strip() or not tgt_text.strip():
        return EMPTY
    if a > max_len or b > max_len:
        return TOO_LONG
    if max(a, b) > 8 and max(a, b) > max_ratio * min(a, b):
        return BAD_RATIO
    return KEEP


def corpus_identity(
    corpus: str, split: str, src: str, tgt: str, data_dir: str | Path | None = None
) -> str | None:
    """A string that changes when the files of a split change (path, size, modification time),
    found without reading them, so a cache of their tokenized form is checked in an instant.
    None for a hub dataset: only its content can say (see seq2seq.data.tokenized)."""
    files = _corpus_files(corpus, split, src, tgt, data_dir)
    if files is None:
        return None
    stats = [(str(f.resolve()), f.stat().st_size, f.stat().st_mtime_ns) for f in files]
    return repr((corpus, split, src, tgt, stats))


# --- Multi30k ---------------------------------------------------------------------------------


def _stream_multi30k(files: list[Path]) -> Iterator[Pair]:
    counts = [0, 0]
    for pair in zip_longest(*(_lines(f) for f in files)):
        counts[0], counts[1] = counts[0] + (pair[0] is not None), counts[1] + (pair[1] is not None)
        if None not in pair:
            yield pair
    for path, count in zip(files, counts, strict=True):
        if count == 0:
            raise Seq2SeqError(f"{path} is empty")
    if counts[0] != counts[1]:
        raise Seq2SeqError(
            f"{files[0]} has {counts[0]} lines but {files[1]} has {counts[1]}; "
            "the two sides must be line-aligned"
        )


def _multi30k_files(split: str, src: str, tgt: str, data_dir: str | Path | None) -> list[Path]:
    if split not in MULTI30K_LANGS:
        raise Seq2SeqError(f"multi30k has no split {split!r}; splits: {', '.join(MULTI30K_LANGS)}")
    for lang in (src, tgt):
        if lang not in MULTI30K_LANGS[split]:
            langs = ", ".join(MULTI30K_LANGS[split])
            raise Seq2SeqError(f"multi30k {split} has no language {lang!r}; languages: {langs}")
    if src == tgt:
        raise Seq2SeqError(f"source and target language are both {src!r}")
    if data_dir is None:
        return [_download(_multi30k_url(split, lang)) for lang in (src, tgt)]
    return [_local_file(Path(data_dir), split, lang) for lang in (src, tgt)]


def _multi30k_url(split: str, lang: str) -> str:
    base = os.environ.get(MULTI30K_URL_ENV) or MULTI30K_URL
    return f"{base.rstrip('/')}/{split}.{lang}.gz"


def _download(url: str) -> Path:
    """The unpacked file at `url` through datasets' download cache. The cache is keyed by the URL
    alone (no ETag check): the Multi30k files never change, so a later run, online or not, reads
    the copy without a request."""
    datasets = import_datasets()
    manager = datasets.DownloadManager(download_config=datasets.DownloadConfig(use_etag=False))
    try:
        return Path(manager.download_and_extract(url))
    except Exception as e:  # no network, a proxy, a 404: datasets and fsspec raise many types
        reason = e.__cause__ or e.__context__ or e  # datasets' own error repeats only the URL
        raise Seq2SeqError(
            f"cannot download {url} ({first_line(reason)}); to work offline, pass --data-dir DIR or "
            f"set {DATA_DIR_ENV}=DIR, a folder of the Multi30k raw files <split>.<lang>.gz "
            "(train.en.gz, val.en.gz, test_2016_flickr.en.gz, ...)"
        ) from None


def _local_file(data_dir: Path, split: str, lang: str) -> Path:
    if not data_dir.is_dir():
        raise Seq2SeqError(f"data directory {data_dir} does not exist or is not a directory")
    for name in (f"{split}.{lang}.gz", f"{split}.{lang}"):
        if (data_dir / name).is_file():
            return data_dir / name
    present = sorted(p.name.removesuffix(".gz") for p in data_dir.iterdir() if p.is_file())
    found = ", ".join(present) or "no files"
    raise Seq2SeqError(f"{data_dir} has no {split}.{lang}[.gz]; found: {found}")


def _lines(path: Path) -> Iterator[str]:
    """Lines of a (possibly gzipped) UTF-8 file, split at line feeds alone (a CR before one dropped).
    Read here, not by datasets' text loader: that opens files with universal newlines, which breaks
    a line at a lone carriage return and shifts every later pair against the other side. A bad byte
    is named by its line. One line at a time: a corpus of millions of lines is never held twice
    (as bytes and as text) beside its pairs."""
    try:
        with gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb") as f:
            for number, raw in enumerate(f, start=1):  # a binary file splits at b"\n" only
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as e:
                    raise Seq2SeqError(f"{path}: line {number} is not valid UTF-8 ({e.reason})") from None
                yield line.removesuffix("\n").removesuffix("\r")
    except (OSError, EOFError, zlib.error) as e:  # zlib.error: a corrupted gzip stream
        raise Seq2SeqError(f"{path}: cannot read ({first_line(e)})") from None


# --- local files and the hub ------------------------------------------------------------------


def _stream_file(path: Path, src: str, tgt: str) -> Iterable[Pair]:
    if path.suffix == ".tsv":
        return _split_tsv(path, _lines(path))
    if path.suffix not in TRANSLATION_FILE_FORMATS:
        raise Seq2SeqError(f"{path}: unknown format; use .tsv, .parquet, .json or .jsonl")
    return load_translation_file(path, TRANSLATION_FILE_FORMATS[path.suffix], src, tgt)


def _split_tsv(path: Path, lines: Iterable[str]) -> Iterator[Pair]:
    number = 0
    for number, line in enumerate(lines, start=1):
        tabs = line.count("\t")
        if tabs != 1:
            what = "no tab" if tabs == 0 else f"{tabs} tabs"
            raise Seq2SeqError(f"{path}: line {number} has {what}; a line is source<TAB>target")
        src_text, tgt_text = line.split("\t")
        yield src_text, tgt_text
    if not number:
        raise Seq2SeqError(f"{path} is empty")
