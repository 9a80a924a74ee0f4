"""A request's text checked before any of it is tokenized: each line a sentence, within limits."""

from starlette.exceptions import HTTPException

from seq2seq.data.tokenizer import is_blank
from seq2seq.errors import Seq2SeqError


def checked_lines(
    text: str | list[str], max_lines: int, max_chars: int, field: str = "text", blank: bool = False
) -> list[str]:
    """The request's lines, each a sentence: none blank (unless `blank`: /check flags a blank side),
    none holding a line break or a lone surrogate (valid JSON, but no text a tokenizer can take),
    within limits."""
    lines = [text] if isinstance(text, str) else text
    if not lines:
        raise Seq2SeqError(f"{field} is an empty list")
    if len(lines) > max_lines:
        raise HTTPException(413, f"{len(lines)} lines is above this server's limit of {max_lines} a request")
    if not all_fine(lines, max_chars, blank):
        refuse_first(lines, max_chars, field if isinstance(text, str) else None, blank)
    return lines


def refuse_first(lines: list[str], max_chars: int, field: str | None, blank: bool = False) -> None:
    """Raise for the first line that is not a sentence within the limits, saying why (`field`
    names a single line, else "line N")."""
    for number, line in enumerate(lines, start=1):
        where = field or f"line {number}"
        if len(line) > max_chars:
            raise HTTPException(413, f"{where} has {len(line)} characters, above the limit of {max_chars}")
        if is_blank(line) and not blank:
            raise Seq2SeqError(f"{where} is empty")
        try:
            line.encode("utf-8")
        except UnicodeEncodeError:
            raise Seq2SeqError(f"{where} is not valid Unicode (a lone surrogate)") from None
        if "\n" in line or "\r" in line:
            raise Seq2SeqError(f"{where} holds a line break; send one sentence per line (a list of lines)")


def all_fine(lines: list[str], max_chars: int, blank: bool = False) -> bool:
    """`refuse_first`'s checks over the whole request at once, in C loops where they can be (a
    request is read on the event loop, so its cost is every client's wait); False sends it through
    `refuse_first`, which says what is wrong."""
    joined = "\x00".join(lines)
    try:
        joined.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return (
        max(map(len, lines)) <= max_chars
        and "\n" not in joined
        and "\r" not in joined
        and (blank or not any(map(is_blank, lines)))
    )
