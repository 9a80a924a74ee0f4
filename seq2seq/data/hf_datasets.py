"""Corpora read through Hugging Face `datasets`: local Parquet and JSON files, and hub datasets,
each a `translation` column of {language: text} rows."""

from pathlib import Path

from seq2seq.errors import Seq2SeqError, first_line

Pair = tuple[str, str]


def load_translation_file(path: Path, builder: str, src: str, tgt: str) -> list[Pair]:
    """The pairs of a local file that `datasets`' `builder` (parquet, json) reads."""
    if builder == "json":
        _check_json_start(path)
    try:
        ds = import_datasets().load_dataset(builder, data_files={"data": str(path)}, split="data")
    except Exception as e:  # datasets wraps every parse failure in its own exception types
        reason = e.__cause__ or e  # datasets' own wrapper says only "an error occurred"
        raise Seq2SeqError(f"{path}: cannot load ({first_line(reason)})") from None
    return translation_pairs(ds, str(path), src, tgt)


def _check_json_start(path: Path) -> None:
    """A JSON corpus begins with an object (a row of JSON lines) or an array of them: anything else
    is refused here, since Arrow's JSON reader crashes the process on some of it (a first row of
    `null`, or an array whose first element is `null` and whose next is an object)."""
    try:
        with open(path, "rb") as f:
            start = f.read(1 << 16).removeprefix(b"\xef\xbb\xbf").lstrip()  # a byte-order mark, then space
    except OSError as e:
        raise Seq2SeqError(f"{path}: cannot read ({first_line(e)})") from None
    if start and start[:1] not in (b"{", b"["):
        raise Seq2SeqError(f"{path}: not rows of JSON objects (it begins {start[:20]!r})")
    element = start[1:].lstrip() if start[:1] == b"[" else b""
    if element and element[:1] not in (b"{", b"]"):
        raise Seq2SeqError(f"{path}: not rows of JSON objects (its first element begins {element[:20]!r})")


def load_hub(corpus: str, split: str, src: str, tgt: str) -> list[Pair]:
    name, _, config = corpus.partition(":")
    datasets = import_datasets()
    try:
        splits = datasets.load_dataset(name, config or None)
    except Exception as e:  # offline, unknown id, bad config: datasets raises many types
        raise Seq2SeqError(f"cannot load dataset {corpus!r} ({first_line(e)})") from None
    return translation_pairs(splits[hub_split(splits, split, corpus)], corpus, src, tgt)


def hub_split(splits, split: str, corpus: str) -> str:
    """The name of `split` among a hub dataset's `splits`: `val` is the Hub's `validation`."""
    if split not in splits and split == "val" and "validation" in splits:
        return "validation"
    if split not in splits:
        raise Seq2SeqError(f"dataset {corpus!r} has no split {split!r}; splits: {names(splits)}")
    return split


def translation_pairs(ds, where: str, src: str, tgt: str) -> list[Pair]:
    if "translation" not in ds.column_names:
        raise Seq2SeqError(f"{where} has no 'translation' column; columns: {names(ds.column_names)}")
    try:
        return _pairs(ds["translation"], where, src, tgt)
    except ValueError as e:  # Arrow cannot turn a row into Python (a struct with two fields of one name)
        raise Seq2SeqError(f"{where}: its 'translation' rows cannot be read ({first_line(e)})") from None
    except KeyError as e:  # a field name Arrow keeps cut at a NUL, which `datasets` then looks up whole
        raise Seq2SeqError(
            f"{where}: its 'translation' rows cannot be read (a field {e.args[0]!r:.40})"
        ) from None


def _pairs(rows, where: str, src: str, tgt: str) -> list[Pair]:
    if not rows:
        raise Seq2SeqError(f"{where} is empty")
    check_languages(rows[0], where, src, tgt)
    return [row_pair(row, number, where, src, tgt) for number, row in enumerate(rows, start=1)]


def check_languages(row, where: str, src: str, tgt: str) -> None:
    """A first row of {language: text} that lacks a language names the ones it has."""
    for lang in (src, tgt):
        if isinstance(row, dict) and lang not in row:
            raise Seq2SeqError(f"{where} has no language {lang!r}; languages: {names(row)}")


def names(keys) -> str:
    """Keys read from a file, as one line: one that is not plain printable text is quoted."""
    keys = [str(k) for k in keys]
    shown = [k if k.isprintable() and k.strip() == k and k else repr(k)[:40] for k in keys[:10]]
    return ", ".join(shown) + (" ..." if len(keys) > 10 else "")


def row_pair(row, number: int, where: str, src: str, tgt: str) -> Pair:
    """The (src, tgt) texts of the `translation` cell of row `number` (from 1)."""
    texts = (row.get(src), row.get(tgt)) if isinstance(row, dict) else (None, None)
    if not all(isinstance(t, str) for t in texts):
        raise Seq2SeqError(f"{where}: row {number} has no {src!r} and {tgt!r} text (found {row!r:.200})")
    return texts


def import_datasets():
    """Import `datasets` lazily (it costs a second) and keep its progress bars and logs off our
    screen: it logs an error before raising it, and each of its errors becomes our one line."""
    import datasets

    datasets.disable_progress_bars()
    datasets.logging.set_verbosity(datasets.logging.CRITICAL)
    return datasets
