"""HTML documents, read with the standard library's parser: every stretch of text and inline
elements between two block boundaries is a run; inline elements (b, i, a, span, and any element
not of HTML's blocks, nested as deep as they come) are pairs,
their start tags written back as they were (attributes and all); line breaks, images and inline
code are atoms; `script`, `style`, `pre`, `code`, `textarea` and every attribute are never
translated. Everything outside the runs is written back byte for byte.

A stray closing inline tag, or an inline element left open at its block's end, is an error: where
its translation would go cannot be said."""

import html
from html.parser import HTMLParser

from seq2seq.documents.markup import Layout, Run
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
        self.run_start = self.run_end = 0
        self.kept: list[str] = []  # the kept elements open, innermost last
        self.kept_start = 0

    def at(self) -> int:
        line, column = self.getpos()
        return self.starts[line - 1] + column

    def here(self) -> tuple[int, int]:
        """(start, end) of the markup being handled."""
        start = self.at()
        raw = self.get_starttag_text()
        return start, start + len(raw or "")

    def _begin(self, at: int) -> Run:
        if self.run is None:
            self.run, self.run_start = Run(), at
        return self.run

    def _boundary(self) -> None:
        if self.run is not None:
            if self.run.stack:
                raise Seq2SeqError(f"an inline element is left open at offset {self.run_start}: close it")
            if self.run.text.strip():
                self.runs.append((self.run_start, self.run_end, self.run))
            self.run = None

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
            self._begin(start).atom(self.text[start:end])
        elif inline(tag):
            self._begin(start).opening(self.text[start:end])
        else:
            self._boundary()
            return
        self.run_end = end

    def handle_startendtag(self, tag, attrs):
        start, end = self.here()
        if self.kept:
            return
        if inline(tag) or tag in VOID_ATOMS:
            self._begin(start).atom(self.text[start:end])
            self.run_end = end
        else:
            self._boundary()

    def handle_endtag(self, tag):
        start = self.at()
        end = self.text.index(">", start) + 1
        if self.kept:
            if tag == self.kept[-1]:
                self.kept.pop()
            if not self.kept and self.run is not None:  # the kept element whole: an atom of the run
                self.run.atom(self.text[self.kept_start : end])
                self.run_end = end
            return
        if inline(tag) and tag not in VOID_ATOMS:
            if self.run is None or not self.run.closing(self.text[start:end]):
                raise Seq2SeqError(f"a stray </{tag}> at offset {start}: it closes nothing")
            self.run_end = end
        elif tag in VOID_ATOMS:  # `</br>`: written back as it stands
            if self.run is not None:
                self.run.atom(self.text[start:end])
                self.run_end = end
        else:
            self._boundary()

    def handle_data(self, data):
        if self.kept:
            return
        start = self.at()
        if self.run is None and not data.strip():
            return  # spaces between blocks: kept as they are
        self._begin(start).add(data)
        end = self.text.find("<", start)  # the data's end, found without copying the rest
        self.run_end = len(self.text) if end < 0 else end

    def handle_comment(self, data):
        self._markup("-->")

    def handle_pi(self, data):
        self._markup(">")

    def unknown_decl(self, data):  # a CDATA section
        self._markup("]]>")

    def handle_decl(self, decl):
        self._boundary()

    def _markup(self, close: str) -> None:
        """A comment, processing instruction or CDATA section: inside a run an atom of its source
        (it neither splits the sentence nor is lost), between runs written back as it is."""
        if self.kept or self.run is None:
            return
        start = self.at()
        end = self.text.find(close, start)
        end = len(self.text) if end < 0 else end + len(close)
        self.run.atom(self.text[start:end])
        self.run_end = end


def layout(text: str) -> Layout:
    reader = _Reader(text)
    try:
        reader.feed(text)
        reader.close()
        reader._boundary()
    except AssertionError as e:  # the parser's own complaints about a broken declaration
        raise Seq2SeqError(f"not readable HTML: {e}") from None
    spans = [(a, b) for a, b, _ in reader.runs]

    def render(outs: list[str]) -> str:
        pieces, at = [], 0
        for (a, b), out in zip(spans, outs, strict=True):
            pieces += [text[at:a], out]
            at = b
        return "".join(pieces) + text[at:]

    runs = [run for _, _, run in reader.runs]
    for run in runs:  # the text was read with its entities: a translation is written escaped
        run.escape = lambda word: html.escape(word, quote=False)
    return Layout(runs, render)


def tagged_line(line: str, number: int) -> Run:
    """One line of text with inline tags (`align --markup`'s sources) as a run; its plain text is
    what is aligned."""
    runs = layout(line).runs
    if len(runs) > 1:
        raise Seq2SeqError(f"line {number} holds block tags: give one sentence with inline tags a line")
    return runs[0] if runs else Run(line)
