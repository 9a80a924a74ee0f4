"""Inline markup carried through the alignment (Bergamot's approach, made measurable): a run of
text with tags is taken apart into its plain text, the tags over it and the spelling of its
characters; the plain sentences are translated; placing.py puts each tag around the target words
aligned to the source words it enclosed.

A `Run` holds what its source holds, nothing lost: `Run.source()` writes the source back from
the parts (every format's reader is tested on it). A pair is an opening and a closing around
characters of the plain text; an atom (markup kept whole: a line break, a code span, an image, a
comment) is a pair around no character. `spelling` holds how the source writes a character where
that differs from the character: an entity (`&eacute;`), a Markdown escape (`\\*`), a line break
with the next line's prefix (`\\n> `), or nothing at all for the space a `<br>` stands for.
"""

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class Layout:
    """A document read: its runs of text to translate, and how to write it back around them."""

    runs: list["Run"]
    render: Callable[[list[str]], str]  # the runs' translations -> the document
    left: list[int] = field(default_factory=list)  # lines (from 1) of text blocks left as they are
    lines: list[int] = field(default_factory=list)  # the line (from 1) each run starts on


def spans_layout(text: str, spans: list[tuple[int, int]], runs: list["Run"], left=()) -> Layout:
    """Runs read from the spans (start, end) of `text`, in order; written back in their places,
    all else as it is."""

    def render(outs: list[str]) -> str:
        pieces, at = [], 0
        for (a, b), out in zip(spans, outs, strict=True):
            pieces += [text[at:a], out]
            at = b
        return "".join(pieces) + text[at:]

    lines, line, at = [], 1, 0
    for a, _ in spans:  # each run's first line, counted once over the text
        line, at = line + text.count("\n", at, a), a
        lines.append(line)
    return Layout(runs, render, list(left), lines)


@dataclass
class Pair:
    """An opening (`open`) and a closing (`close`) markup around characters [start, end) of the
    plain text; an atom has `close` "" and start == end. `parent`: the pair it nests in; `opened`,
    `closed`: the order of its opening and closing among the run's markup, as the source has them."""

    open: str
    close: str
    start: int
    end: int
    parent: int | None = None
    opened: int = 0
    closed: int = 0


class Run:
    """Text with inline markup, taken apart: the plain text, the pairs over it (outermost first: a
    parent before its children) and the source's spelling of the characters that differ. Built
    piece by piece in linear time (its text joined once, when read)."""

    def __init__(self, text: str = "", escape: Callable[[str], str] = str):
        self.pairs: list[Pair] = []
        self.stack: list[int] = []  # pairs open while building
        self.spelling: dict[int, str] = {}  # offset in text -> as the source writes it
        self.escape = escape  # how the document writes a new word (HTML: escaped)
        self.marks = 0  # the markup seen so far, in source order
        self._parts, self.size = [text], len(text)

    @property
    def text(self) -> str:
        if len(self._parts) > 1:
            self._parts = ["".join(self._parts)]
        return self._parts[0]

    def add(self, text: str, spelled: str | None = None) -> None:
        """`text` as read; `spelled`, how the source writes it where that differs (all of it given
        to the first character, the others spelled as nothing)."""
        if spelled is not None and spelled != text:
            for k in range(len(text)):
                self.spelling[self.size + k] = spelled if k == 0 else ""
        if text:
            self._parts.append(text)
            self.size += len(text)

    def opening(self, markup: str) -> None:
        parent = self.stack[-1] if self.stack else None
        self.pairs.append(Pair(markup, "", self.size, -1, parent, self._mark()))
        self.stack.append(len(self.pairs) - 1)

    def closing(self, markup: str) -> bool:
        """False when nothing is open (a stray closing)."""
        if not self.stack:
            return False
        pair = self.pairs[self.stack.pop()]
        pair.close, pair.end, pair.closed = markup, self.size, self._mark()
        return True

    def atom(self, markup: str, stands_for: str = "") -> None:
        """Markup kept whole where it stands; `stands_for`, the plain text it reads as (a `<br>`:
        a space, which the source does not write)."""
        parent = self.stack[-1] if self.stack else None
        mark = self._mark()
        self.pairs.append(Pair(markup, "", self.size, self.size, parent, mark, mark))
        self.add(stands_for, "")

    def _mark(self) -> int:
        self.marks += 1
        return self.marks

    def source(self) -> str:
        """The run as its source wrote it: its characters as spelled, its markup where it stood."""
        inserts = sorted(
            [(p.start, p.opened, p.open) for p in self.pairs]
            + [(p.end, p.closed, p.close) for p in self.pairs if p.close]
        )
        out, k = [], 0
        for at, char in enumerate(self.text):
            while k < len(inserts) and inserts[k][0] <= at:
                out.append(inserts[k][2])
                k += 1
            out.append(self.spelling.get(at, char))
        out += [markup for _, _, markup in inserts[k:]]
        return "".join(out)
