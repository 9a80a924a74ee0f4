"""The formats a document comes in, each read and written with a well-kept parser: plain text with
paragraphs (blank lines between), SubRip subtitles (`srt`), Markdown (`markdown-it-py`, CommonMark
with tables) and HTML (the standard library's parser, html.py). Each gives a `Layout`: the runs
of text to translate (markup.py's `Run`, with their inline markup) and how to write the document
back around their translations. What is not a run is written back byte for byte: code blocks and
spans, URLs, attributes, timings, blank lines.
"""

import re
from pathlib import Path

from seq2seq.documents.html import layout
from seq2seq.documents.markup import Layout, Run
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


LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n|$)")  # a line and its end: LF, CRLF or CR


def _text(text: str) -> Layout:
    """Paragraphs are separated by blank lines (LF, CRLF or CR ends); a paragraph's lines are one
    run (its line breaks become spaces: a translation is not wrapped as its source was). One pass
    over the lines, each read once: linear in the text, whatever its spaces."""
    pieces: list[str] = []  # what stands before each run, then what follows the last
    runs: list[Run] = []
    pending: list[str] = []  # what has come since the last run
    paragraph: list[str] = []  # the lines of the paragraph under way, without their ends
    last_end = [""]  # the end of its last line

    def close() -> None:
        if not paragraph:
            return
        first, last = paragraph[0], paragraph[-1]
        pieces.append("".join([*pending, first[: len(first) - len(first.lstrip())]]))
        runs.append(Run(" ".join(body.strip() for body in paragraph)))
        pending[:] = [last[len(last.rstrip()) :], last_end[0]]
        paragraph.clear()

    for match in LINE.finditer(text):
        line = match.group()
        if not line:
            break
        body = line.rstrip("\r\n")
        if body.strip():
            paragraph.append(body)
            last_end[0] = line[len(body) :]
        else:
            close()
            pending.append(line)
    close()
    pieces.append("".join(pending))
    return Layout(runs, lambda outs: "".join(p + o for p, o in zip(pieces, [*outs, ""], strict=True)))


def _srt(text: str) -> Layout:
    """Each cue's text is a run (its lines joined); index and timings are kept."""
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
    runs = [Run(" ".join(cue.content.split("\n"))) for cue in cues]

    def render(outs: list[str]) -> str:
        for cue, out in zip(cues, outs, strict=True):
            cue.content = out
        return srt.compose(cues, reindex=False)

    return Layout(runs, render)


MD_PAIRS = {
    "em_open": "em_close",
    "strong_open": "strong_close",
    "s_open": "s_close",
    "link_open": "link_close",
}


def _markdown(text: str) -> Layout:
    """The inline content of every paragraph, heading and table cell is a run; emphasis, strong,
    strike-through and links are pairs; code spans, images, autolinks, inline HTML and hard breaks
    are atoms. A block's lines become one line (its first line's prefix kept)."""
    try:
        from markdown_it import MarkdownIt
    except ImportError:
        raise Seq2SeqError(f"Markdown needs markdown-it-py: {INSTALL_HINT}") from None
    tokens = MarkdownIt("commonmark").enable(["table", "strikethrough"]).parse(text)
    parts = re.split(r"(\r\n|\r|\n)", text)  # the lines markdown-it counts (any end), and each end
    lines, ends = parts[0::2], parts[1::2]
    runs, places = [], []
    done: dict[int, int] = {}  # line -> the column its last run ended at (a table row's cells)
    for token in tokens:
        if token.type != "inline" or token.map is None or not token.content.strip():
            continue
        run = _md_run(token.children)
        if not run.text.strip():
            continue  # an image or a badge alone: nothing to translate, kept as it is
        located = _locate(lines, token.map, token.content.split("\n"), done.get(token.map[0], 0))
        if located is None:
            continue  # content the source does not hold verbatim (escapes, entities): kept
        runs.append(run)
        places.append(located)
        done[located[2]] = located[3]

    def render(outs: list[str]) -> str:
        new, breaks = list(lines), [*ends, ""]
        for (first, start, last, end), out in sorted(zip(places, outs, strict=True), reverse=True):
            new[first : last + 1] = [new[first][:start] + out + new[last][end:]]
            breaks[first : last + 1] = [breaks[last]]  # a block's lines become one
        return "".join(line + end for line, end in zip(new, breaks, strict=True))

    return Layout(runs, render)


def _locate(lines: list[str], span: list[int], content: list[str], after: int = 0):
    """(first line, start column, last line, end column) of a block's inline content: each content
    line found in its source line, in order, the first from column `after` (a cell is sought after
    the cells before it in its row, never inside one of them)."""
    first, start = span[0], lines[span[0]].find(content[0], after)
    if start < 0:
        return None
    last, end = first, start + len(content[0])
    for offset, part in enumerate(content[1:], start=1):
        at = lines[first + offset].find(part) if first + offset < span[1] else -1
        if at < 0:
            return None
        last, end = first + offset, at + len(part)
    return first, start, last, end


def _md_run(children) -> Run:
    run, autolink = Run(), False
    for child in children:
        kind = child.type
        if autolink:  # an autolink's text and its closing: the atom written at its opening
            autolink = kind != "link_close"
            continue
        if kind == "link_open" and child.markup == "autolink":
            run.atom(f"<{child.attrs.get('href', '')}>")
            autolink = True
        elif kind == "text":
            run.add(child.content)
        elif kind == "softbreak":
            run.add(" ")
        elif kind in MD_PAIRS:
            run.opening("[" if kind == "link_open" else child.markup)
        elif kind in MD_PAIRS.values():
            if kind == "link_close":
                href, title = child_attr(children, child)
                run.closing(f"]({href}{' ' + repr_title(title) if title else ''})")
            else:
                run.closing(child.markup)
        elif kind == "code_inline":
            fence = child.markup
            pad = " " if child.content.startswith("`") or child.content.endswith("`") else ""
            run.atom(f"{fence}{pad}{child.content}{pad}{fence}")
        elif kind == "hardbreak":
            run.atom("\\")
        else:  # an image, an autolink's or inline HTML's text: kept as written
            run.atom(_source_of(child))
    return run


def child_attr(children, close) -> tuple[str, str | None]:
    """The href and title of the link a link_close closes."""
    depth = 0
    for child in reversed(children[: children.index(close)]):
        if child.type == "link_close":
            depth += 1
        elif child.type == "link_open":
            if depth == 0:
                return child.attrs.get("href", ""), child.attrs.get("title")
            depth -= 1
    return "", None


def repr_title(title: str) -> str:
    return '"' + title.replace('"', '\\"') + '"'


def _source_of(token) -> str:
    if token.type == "image":
        alt = "".join(c.content for c in token.children or [])
        title = token.attrs.get("title")
        return f"![{alt}]({token.attrs.get('src', '')}{' ' + repr_title(title) if title else ''})"
    return token.content


def _html(text: str) -> Layout:
    return layout(text)
