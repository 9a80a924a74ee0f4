"""HTML documents, read with the standard library's parser: every stretch of text and inline
elements between two block boundaries is a run; inline elements (b, i, a, span, and any element
not of HTML's blocks, nested as deep as they come) are pairs, their start tags written back as
they were (attributes and all); `<br>` is an atom read as a space, images, comments and inline
code are atoms; `script`, `style`, `pre`, `code`, `textarea` and every attribute are never
translated. Everything outside the runs is written back byte for byte, and inside them each
character as the page spelled it (an entity stays an entity).

Markup as browsers take it: a closing tag closes the element of its name (those opened inside it
and left open are kept where they stood, as atoms); a stray closing tag, or an inline element
left open at its block's end, is kept where it stands, an atom.
"""

import html
import re
from html.parser import HTMLParser

from seq2seq.documents.markup import Layout, Run, spans_layout
from seq2seq.errors import Seq2SeqError

# the elements that end a run (HTML's block and document-level elements, and custom elements,
# named with a hyphen, which pages use as containers); every other element, an unknown one
# included (DocBook's or DITA's `<ph>`, `<uicontrol>`), is inline, as a browser lays it out
BLOCK = {
    *("address", "article", "aside", "blockquote", "body", "caption", "col", "colgroup", "dd"),
    *("details", "dialog", "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form"),
    *("h1", "h2", "h3", "h4", "h5", "h6", "head", "header", "hgroup", "hr", "html", "legend", "li"),
    *("link", "main", "menu", "meta", "nav", "noscript", "ol", "optgroup", "option", "p", "section"),
    *("select", "summary", "table", "tbody", "td", "template", "tfoot", "th", "thead", "title", "tr"),
    *("ul", "base", "iframe", "object", "video", "audio", "canvas", "frameset", "frame"),
}
VOID_ATOMS = {"br", "img", "wbr", "input", "area", "embed", "param", "source", "track"}


def inline(tag: str) -> bool:
    return tag not in BLOCK and "-" not in tag


KEPT = {"script", "style", "pre", "code", "textarea", "kbd", "samp", "var", "svg", "math"}


# a character reference as html.unescape reads one (a name without ";" may take part of it)
CHARREF = re.compile(r"&(#[0-9]+;?|#[xX][0-9a-fA-F]+;?|[^\t\n\f <&#;]{1,32};?)")


def add_spelled(run: Run, raw: str, data: str) -> None:
    """`data` (the parser's reading of `raw`, its references decoded) added to the run, each
    decoded reference spelled as the source wrote it. What the parser read past without a word
    (`</>`, a broken declaration) is kept where it stood, an atom; a reading that does not match
    at all: the source as an atom (kept, untranslated)."""
    pieces, at = [], 0
    for match in CHARREF.finditer(raw):
        written = match.group()
        read = html.unescape(written)
        if read == written:
            continue
        rest = 0  # what a name without ";" leaves unread: the same in both
        while rest < len(read) - 1 and written[-1 - rest] == read[-1 - rest]:
            rest += 1
        entity = (read[: len(read) - rest], written[: len(written) - rest])
        pieces += [(raw[at : match.start()], None), entity]
        at = match.end() - rest
    pieces += [(raw[k], None) for k in range(at, len(raw))]  # the rest, a character at a time
    done, used = 0, 0
    while used < len(pieces) and done < len(data):
        read = pieces[used][0]
        if data[done : done + len(read)] != read:
            break
        done, used = done + len(read), used + 1
    if done != len(data):
        run.atom(raw)
        return
    for read, written in pieces[:used]:
        if read or not written:
            run.add(read, written)
        else:  # a reference that reads as nothing (`&#1`): kept as written
            run.atom(written)
    if used < len(pieces):
        run.atom("".join(written or read for read, written in pieces[used:]))


class _Reader(HTMLParser):
    """Runs as (start offset, end offset, Run) of the source; a kept element inside a run is an
    atom of its source text."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        # where each line starts, counted as the parser counts them (by "\n" alone: a U+2028, a
        # form feed or a lone CR must not shift every later offset)
        self.text, self.starts = text, [0, *(i + 1 for i, c in enumerate(text) if c == "\n")]
        self.runs: list[tuple[int, int, Run]] = []
        self.run: Run | None = None
        self.names: list[str] = []  # the tags of the run's open pairs, innermost last
        self.run_start = self.run_end = 0
        self.kept: list[str] = []  # the kept elements open, innermost last
        self.kept_start = 0
        self.data: tuple[int, str] | None = None  # text read and not yet added: its offset, itself

    def at(self) -> int:
        line, column = self.getpos()
        return self.starts[line - 1] + column

    def here(self) -> tuple[int, int]:
        """(start, end) of the markup being handled, the text before it added first."""
        start = self._flush()
        raw = self.get_starttag_text()
        return start, start + len(raw or "")

    def _flush(self) -> int:
        """Add the text read before the markup at hand (its source ends where that starts)."""
        end = self.at()
        if self.data is not None:
            start, data = self.data
            self.data = None
            add_spelled(self._begin(start), self.text[start:end], data)
            self.run_end = end
        elif self.run is not None and not self.kept and end > self.run_end:  # read past in silence
            self.run.atom(self.text[self.run_end : end])
            self.run_end = end
        return end

    def _begin(self, at: int) -> Run:
        if self.run is None:
            self.run, self.run_start, self.names = Run(), at, []
        return self.run

    def _boundary(self) -> None:
        if self.run is not None:
            self._unclosed(0)
            if self.run.text.strip():
                self.runs.append((self.run_start, self.run_end, self.run))
            self.run = None

    def _unclosed(self, depth: int) -> None:
        """The run's open pairs above `depth`, left open: atoms where they opened."""
        while len(self.names) > depth:
            pair = self.run.pairs[self.run.stack.pop()]
            pair.end, pair.closed = pair.start, pair.opened
            self.names.pop()

    def handle_starttag(self, tag, attrs):
        start, end = self.here()
        if self.kept:
            if tag not in VOID_ATOMS:
                self.kept.append(tag)
            return
        if tag in KEPT:
            self.kept, self.kept_start = [tag], start
            return
        if tag in VOID_ATOMS:
            self._begin(start).atom(self.text[start:end], " " if tag == "br" else "")
        elif inline(tag):
            self._begin(start).opening(self.text[start:end])
            self.names.append(tag)
        else:
            self._boundary()
            return
        self.run_end = end

    def handle_startendtag(self, tag, attrs):
        start, end = self.here()
        if self.kept:
            return
        if inline(tag) or tag in VOID_ATOMS:
            self._begin(start).atom(self.text[start:end], " " if tag == "br" else "")
            self.run_end = end
        else:
            self._boundary()

    def handle_endtag(self, tag):
        start = self._flush()
        end = self.text.index(">", start) + 1
        if self.kept:
            if tag == self.kept[-1]:
                self.kept.pop()
            if not self.kept and self.run is not None:  # the kept element whole: an atom of the run
                self.run.atom(self.text[self.kept_start : end])
                self.run_end = end
            return
        if inline(tag) or tag in VOID_ATOMS:
            if self.run is None:
                return  # a stray closing between runs: written back as it stands
            if tag in self.names:
                self._unclosed(len(self.names) - 1 - self.names[::-1].index(tag) + 1)
                self.run.closing(self.text[start:end])
                self.names.pop()
            else:  # `</br>`, or a stray closing: kept where it stands
                self.run.atom(self.text[start:end])
            self.run_end = end
        else:
            self._boundary()

    def handle_data(self, data):
        if self.kept:
            return
        start = self._flush()
        if self.run is None and not data.strip():
            return  # spaces between blocks: kept as they are
        self.data = (start, data)

    # a comment, processing instruction or CDATA section (or what the parser takes for one, such as
    # `</<>`): inside a run an atom of its source, which the next event's `_flush` adds from where
    # the run stopped to where the parser stands (it neither splits the sentence nor is lost);
    # between runs written back as it is
    def handle_comment(self, data):
        self._flush()

    def handle_pi(self, data):
        self._flush()

    def unknown_decl(self, data):
        self._flush()

    def handle_decl(self, decl):
        self._flush()
        self._boundary()


def runs_of(text: str) -> list[tuple[int, int, Run]]:
    """The runs of HTML `text`: (start, end, Run), in order."""
    reader = _Reader(text)
    try:
        reader.feed(text)
        reader.close()
        reader._flush()
        reader._boundary()
    except AssertionError as e:  # the parser's own complaints about a broken declaration
        raise Seq2SeqError(f"not readable HTML at line {reader.getpos()[0]}: {e}") from None
    return reader.runs


def layout(text: str) -> Layout:
    found = runs_of(text)
    runs = [run for _, _, run in found]
    for run in runs:  # the text was read with its entities: a new word is written escaped
        run.escape = lambda word: html.escape(word, quote=False)
    return spans_layout(text, [(a, b) for a, b, _ in found], runs)


def tagged_line(line: str, number: int) -> Run:
    """One line of text with inline tags (`align --markup`'s sources) as a run; its plain text is
    what is aligned."""
    runs = layout(line).runs
    if len(runs) > 1:
        raise Seq2SeqError(f"line {number} holds block tags: give one sentence with inline tags a line")
    return runs[0] if runs else Run(line)
