"""The formats a document comes in, each read and written with a well-kept parser: plain text with
paragraphs (blank lines between), SubRip subtitles (`srt`), Markdown (`markdown-it-py`, CommonMark
with tables) and HTML (the standard library's parser, html.py). Each gives a `Layout`: the runs
of text to translate (markup.py's `Run`, with their inline markup) and how to write the document
back around their translations. What is not a run is written back byte for byte: code blocks and
spans, URLs, attributes, timings, blank lines.
"""

import re
from pathlib import Path

from seq2seq.documents import html, markdown
from seq2seq.documents.markup import Layout, Run, spans_layout
from seq2seq.documents.sentences import INSTALL_HINT
from seq2seq.errors import Seq2SeqError

FORMATS = ("lines", "text", "markdown", "html", "srt")
# `.txt` is not here: a file of one sentence a line is the commonest input, and its contract (a
# line in, a line out) must not change with a suffix; paragraphs are asked for with --format text
SUFFIXES = {".md": "markdown", ".markdown": "markdown", ".html": "html", ".htm": "html", ".srt": "srt"}


def format_of(path: Path | None, given: str | None) -> str:
    """--format, else the file's suffix, else `lines` (arguments, pipes, unknown suffixes)."""
    if given is not None:
        if given not in FORMATS:
            raise Seq2SeqError(f"--format {given} is not one of {', '.join(FORMATS)}")
        return given
    return SUFFIXES.get(path.suffix.lower(), "lines") if path is not None else "lines"


def parse(text: str, format: str) -> Layout:
    readers = {"text": _text, "srt": _srt, "markdown": _markdown, "html": _html}
    if format not in readers:
        raise Seq2SeqError(f"a document's format is one of {', '.join(readers)}, not {format}")
    return readers[format](text)


PARAGRAPH = re.compile(r"\S(?:[^\r\n]|(?:\r\n|\r|\n)(?![ \t\f\v]*(?:\r\n|\r|\n|$)))*")
# a paragraph: from its first character that is no space to the end of its last line that is not
# blank (line ends LF, CRLF or CR); what lies between paragraphs is written back as it is


def _text(text: str) -> Layout:
    """Paragraphs are separated by blank lines; a paragraph, its line breaks and all, is one run
    (a translation is not wrapped as its source was: the tokenizer reads a line break as a space).
    One pass of one pattern that never backtracks over a line: linear in the text."""
    spans = [(m.start(), len(m.group().rstrip()) + m.start()) for m in PARAGRAPH.finditer(text)]
    return spans_layout(text, spans, [Run(text[a:b]) for a, b in spans])


def _srt(text: str) -> Layout:
    """Each cue's text is a run, its lines and markup (`<i>`, `<b>`, `<font>`: inline tags) as
    the HTML reader reads them; its index and timings are kept. srt parses the file (and words
    its faults); the cue texts are written back into their places, found by srt's own pattern,
    because srt.compose rewrites indices, timings and line ends."""
    try:
        import srt
    except ImportError:
        raise Seq2SeqError(f"subtitles need the srt package: {INSTALL_HINT}") from None
    try:
        cues = list(srt.parse(text))
    except (srt.SRTParseError, ValueError, OverflowError) as e:  # OverflowError: an hour past C's int
        at = re.search(r"char (\d+)", str(e))
        where = f"line {text.count(chr(10), 0, int(at.group(1))) + 1}" if at else "its start"
        raise Seq2SeqError(f"not a SubRip file: a cue's index or timing is broken at {where}") from None
    if not cues and text.strip():
        raise Seq2SeqError("not a SubRip file: no cue found")
    spans, runs = [], []
    for match in srt.SRT_REGEX.finditer(text):
        start = match.start(5)  # the cue's text
        for a, b, run in html.runs_of(match.group(5)):
            run.escape = str  # a player shows `&amp;` as it is: a new word is written as it is
            spans.append((start + a, start + b))
            runs.append(run)
    return spans_layout(text, spans, runs)


def _html(text: str) -> Layout:
    return html.layout(text)


def _markdown(text: str) -> Layout:
    return markdown.layout(text)
