"""Lines in and out of the command line: files or stdin/stdout, UTF-8, one line out per line in."""

import sys
from pathlib import Path

from seq2seq.errors import Seq2SeqError

LINE_BREAKS = str.maketrans({c: " " for c in "\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"})


def one_line(text: str) -> str:
    """Keep the one-line-out-per-line-in promise even if a translation holds a line separator."""
    return text.translate(LINE_BREAKS)


def read_lines(path: Path | None) -> list[str]:
    """Lines of a UTF-8 file or of stdin, split on newlines only; invalid UTF-8 names the line."""
    name = str(path) if path else "standard input"
    try:
        data = sys.stdin.buffer.read() if path is None else path.read_bytes()
    except IsADirectoryError:
        raise Seq2SeqError(f"{name} is a directory, not a file") from None
    except OSError as e:
        raise Seq2SeqError(f"cannot read {name}: {e.strerror}") from None
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()  # the newline that ends the last line does not start another one
    out = []
    for number, raw in enumerate(lines, start=1):
        try:
            out.append(raw.decode("utf-8").removesuffix("\r"))
        except UnicodeDecodeError:
            raise Seq2SeqError(f"{name}: line {number} is not valid UTF-8") from None
    return out


def arguments(texts: list[str]) -> list[str]:
    """Command-line sentences, refused when their bytes are not UTF-8 (Python hands such bytes
    over as lone surrogates, which no tokenizer can take)."""
    out = []
    for number, text in enumerate(texts, start=1):
        try:
            out.append(text.encode("utf-8", "surrogateescape").decode("utf-8"))
        except UnicodeError:
            raise Seq2SeqError(f"argument {number} is not valid UTF-8") from None
    return out


def write_lines(lines: list[str], path: Path | None) -> None:
    """UTF-8 always, whatever encoding the terminal or PYTHONIOENCODING gives stdout."""
    text = "".join(line + "\n" for line in lines)
    if path is None:
        sys.stdout.flush()
        sys.stdout.buffer.write(text.encode("utf-8"))
        sys.stdout.buffer.flush()
        return
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as e:
        raise Seq2SeqError(f"cannot write {path}: {e.strerror}") from None


def numbered(path: Path, number: int) -> Path:
    """attention.png -> attention-3.png: one picture per input line."""
    return path.with_name(f"{path.stem}-{number}{path.suffix}")
