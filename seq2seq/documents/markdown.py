"""Markdown documents, read with markdown-it-py (CommonMark with tables and strike-through): the
inline content of every paragraph, heading and table cell is a run; emphasis, strong,
strike-through and links are pairs; code spans, images, autolinks, inline HTML and hard breaks are
atoms. Everything outside the runs is written back byte for byte.

markdown-it's inline tokens carry no source offsets, so each block's tokens are walked along its
source (`_Walk`): every token's markup is read from the source as written (`*` or `_`, a link's
destination and title as typed), and every character of its text spelled as written (`\\.`,
`&lt;`, a line break with the next line's `> ` prefix), with the library's own link parsers. A
block the walk cannot follow is left as it is, untranslated, never garbled. A new word is
escaped where Markdown would read it as markup.
"""

import re
from bisect import bisect_right
from html import unescape

from seq2seq.documents.markup import Layout, Run, spans_layout
from seq2seq.documents.sentences import INSTALL_HINT
from seq2seq.errors import Seq2SeqError

PAIRS = {"em_open": "em_close", "strong_open": "strong_close", "s_open": "s_close"}
ENTITY = re.compile(r"&(?:#[xX][0-9a-fA-F]{1,6}|#[0-9]{1,7}|[A-Za-z][A-Za-z0-9]{1,31});")
PUNCTUATION = set("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
SPECIAL = re.compile(r"([\\`*_\[\]<>|~])")  # what a new word escapes: its characters Markdown reads
LINES = re.compile(r"(\r\n|\r|\n)")


class _Lost(Exception):
    """The walk lost its place in the source: the block is left as it is."""


def layout(text: str) -> Layout:
    try:
        from markdown_it import MarkdownIt
    except ImportError:
        raise Seq2SeqError(f"Markdown needs markdown-it-py: {INSTALL_HINT}") from None
    md = MarkdownIt("commonmark").enable(["table", "strikethrough"])
    tokens = md.parse(text)
    parts = LINES.split(text)  # the lines markdown-it counts (any end), and each end
    lines, ends = parts[0::2], parts[1::2]
    offsets = [0]
    for line, end in zip(lines, [*ends, ""], strict=True):
        offsets.append(offsets[-1] + len(line) + len(end))
    spans, runs, left = [], [], []
    done: dict[int, int] = {}  # line -> the column its last cell ended at (a table row's cells)
    cell = False  # the inline token is a table cell's
    for token in tokens:
        if token.type in ("th_open", "td_open"):
            cell = True
        if token.type != "inline" or token.map is None or not token.content.strip():
            continue
        first, in_cell, cell = token.map[0], cell, False
        located = _locate(lines, token.map, token.content.split("\n"), done.get(first, 0), in_cell)
        if located is None:  # content the source does not hold line by line (a table's `\|`)
            left.append(first + 1)
            done[first] = len(lines[first])  # the row's later cells are not sought inside this one
            continue
        columns, end = located
        last = first + len(columns) - 1
        done[last] = end  # kept or not, the next cell is sought after this one
        breaks = [ends[first + k] + lines[first + k + 1][: columns[k + 1]] for k in range(len(columns) - 1)]
        try:
            run = _Walk(md, token.content, breaks).walk(token.children)
        except _Lost:
            left.append(first + 1)
            continue
        if not run.text.strip():
            continue  # an image or a badge alone: nothing to translate, kept as it is
        spans.append((offsets[first] + columns[0], offsets[last] + end))
        runs.append(run)
    return spans_layout(text, spans, runs, left)


def _locate(lines: list[str], span: list[int], content: list[str], after: int = 0, cell: bool = False):
    """(the column of each content line in its source line, the end column of the last) of a
    block's inline content; each line found in order. A table cell is sought from column `after`
    (after the cells before it in its row, never inside one of them); any other block's line is
    the last occurrence in its line (its text follows its prefix: `1. 1` holds its `1` at 3)."""
    columns, end = [], 0
    for offset, part in enumerate(content):
        line = span[0] + offset
        if line >= span[1]:
            return None
        at = lines[line].find(part, after) if cell else lines[line].rfind(part)
        if at < 0:
            return None
        columns.append(at)
        end = at + len(part)
    return columns, end


def escaped(word: str) -> str:
    """A new word as Markdown must be given it to be read as text (an escaped punctuation mark
    reads as itself anywhere, so the escapes a line's start needs are made everywhere)."""
    word = ENTITY.sub(lambda m: "&amp;" + m.group()[1:], SPECIAL.sub(r"\\\1", word))
    if re.fullmatch(r"\d+[.)]", word):  # an ordered list's marker
        return word[:-1] + "\\" + word[-1]
    return "\\" + word if word[:1] in "#+-=" else word  # a heading's, a list's or a rule's


class _Walk:
    """A block's inline tokens read along its source `src` (the block's content: its lines without
    their prefixes, joined by "\n"); `breaks[k]`, how the source ends line k and begins the next."""

    def __init__(self, md, src: str, breaks: list[str]):
        self.md, self.src, self.breaks, self.at = md, src, breaks, 0
        self.newlines = [i for i, c in enumerate(src) if c == "\n"]
        self.run = Run(escape=escaped)

    def spelled(self, a: int, b: int) -> str:
        """src[a:b] as the source writes it: each line end with its next line's prefix."""
        out, k = [], a
        for n in range(bisect_right(self.newlines, a - 1), len(self.newlines)):
            i = self.newlines[n]
            if i >= b:
                break
            out += [self.src[k:i], self.breaks[n]]
            k = i + 1
        return "".join(out) + self.src[k:b]

    def take(self, markup: str) -> str:
        """`markup`, next in the source, read; its spelling."""
        if not self.src.startswith(markup, self.at):
            raise _Lost
        self.at += len(markup)
        return self.spelled(self.at - len(markup), self.at)

    def until(self, end: int) -> str:
        start, self.at = self.at, end
        return self.spelled(start, end)

    def walk(self, children) -> Run:
        skipping = False
        for child in children:
            kind = child.type
            if skipping:  # an autolink's text and its closing: the atom read at its opening
                skipping = kind != "link_close"
                continue
            if kind == "text":
                self.text(child.content)
            elif kind in ("softbreak", "hardbreak"):
                self.line_break(kind == "hardbreak")
            elif kind in PAIRS:
                self.run.opening(self.take(child.markup))
            elif kind in PAIRS.values():
                self.run.closing(self.take(child.markup))
            elif kind == "link_open" and child.markup == "autolink":
                self.run.atom(self.until(self._after("<", ">")))
                skipping = True
            elif kind == "link_open":
                self.run.opening(self.take("["))
            elif kind == "link_close":
                self.run.closing(self.until(self._destination(self.at)))
            elif kind == "code_inline":
                self.run.atom(self.until(self._code(child.markup)))
            elif kind == "image":
                self.run.atom(self.until(self._image()))
            elif kind == "html_inline":
                self.run.atom(self.take(child.content))
            else:
                raise _Lost
        if self.src[self.at :].strip():
            raise _Lost
        return self.run

    def text(self, text: str) -> None:
        src, run = self.src, self.run
        for char in text:
            at = self.at
            if at < len(src) and src[at] == "\\" and src[at + 1 : at + 2] == char and char in PUNCTUATION:
                run.add(char, "\\" + char)
                self.at += 2
                continue
            entity = ENTITY.match(src, at) if at < len(src) and src[at] == "&" else None
            if entity is not None and unescape(entity.group()) == char:
                run.add(char, entity.group())
                self.at = entity.end()
            elif at < len(src) and src[at] == char:
                run.add(char)
                self.at += 1
            else:
                raise _Lost

    def line_break(self, hard: bool) -> None:
        """A soft break reads as the line end it is; a hard one is an atom read as a space."""
        start, src = self.at, self.src
        end = src.find("\n", start)
        if end < 0 or src[start:end].strip(" ") not in ("", "\\"):
            raise _Lost
        end += 1
        while end < len(src) and src[end] in " \t":
            end += 1
        self.at = end
        if hard:
            self.run.atom(self.spelled(start, end), " ")
        else:
            self.run.add("\n", self.spelled(start, end))

    def _after(self, opening: str, closing: str) -> int:
        if not self.src.startswith(opening, self.at) or (end := self.src.find(closing, self.at)) < 0:
            raise _Lost
        return end + len(closing)

    def _code(self, fence: str) -> int:
        """The end of the code span opening at the cursor with `fence` (its backticks)."""
        src, at = self.src, self.at + len(fence)
        if not src.startswith(fence, self.at):
            raise _Lost
        while (at := src.find(fence, at)) >= 0:
            if src[at + len(fence) : at + len(fence) + 1] != "`" and src[at - 1] != "`":
                return at + len(fence)
            at += len(fence)
            while at < len(src) and src[at] == "`":
                at += 1
        raise _Lost

    def _image(self) -> int:
        from markdown_it.helpers import parseLinkLabel
        from markdown_it.rules_inline import StateInline

        if not self.src.startswith("![", self.at):
            raise _Lost
        state = StateInline(self.src, self.md, {}, [])
        end = parseLinkLabel(state, self.at + 1, False)
        if end < 0:
            raise _Lost
        return self._destination(end)

    def _destination(self, at: int) -> int:
        """The end of a link's closing at `at` (its `]`): `](destination "title")`, `][label]`, or
        `]` alone (a reference), read as markdown-it's link rule reads them."""
        from markdown_it.helpers import parseLinkDestination, parseLinkTitle

        src = self.src
        if src[at : at + 1] != "]":
            raise _Lost
        at += 1
        if src[at : at + 1] == "[":
            end = src.find("]", at)
            return at if end < 0 else end + 1
        if src[at : at + 1] != "(":
            return at
        at = _spaces(src, at + 1)
        found = parseLinkDestination(src, at, len(src))
        if found.ok:
            at = _spaces(src, found.pos)
            title = parseLinkTitle(src, at, len(src))
            if title.ok and at < len(src) and src[at] in "\"'(":
                at = _spaces(src, title.pos)
        if src[at : at + 1] != ")":
            raise _Lost
        return at + 1


def _spaces(src: str, at: int) -> int:
    while at < len(src) and src[at] in " \t\n":
        at += 1
    return at
