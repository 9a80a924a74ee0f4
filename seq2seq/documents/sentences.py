"""A paragraph cut into sentences, each with the spacing after it, so that the translations joined
with the same spacing are the paragraph's translation.

Two rule-based splitters, each with the source language's rules: sentencex (Wikimedia's, many
languages, fast) cuts the text, and pysbd gives a second opinion on each sentence that still holds
a full stop, question or exclamation mark followed by more text. Sentencex reads a word from its
abbreviation list before a full stop as never ending a sentence ("a work of art. Busy mall"); pysbd
tells the abbreviations that stand before a name ("Mr.", "Dr.") from those that can end one, so its
cuts inside sentencex's sentences are taken. On paragraphs built from Multi30k's training
sentences the two together cut at least as many paragraphs exactly as the better one alone, in
English, French, German and Czech (scripts/bench_splitters.py); pysbd has no Czech, and its
English rules served Czech better than none, so a language it lacks gets its English rules."""

import functools
import re

from seq2seq.errors import Seq2SeqError

INSTALL_HINT = 'pip install -e ".[docs]"'
INNER_END = re.compile(r"[.!?]\s+\S")  # a sentence that may hold two: pysbd is asked
WIDE_SPACE = re.compile(r"[^\S\t\n\x0b\x0c\r ]")  # any space but ASCII's (no-break, thin, ...)


def split(text: str, lang: str = "en") -> list[tuple[int, int]]:
    """The (start, end) of each sentence of `text`, spaces at its ends left out; what lies between
    two sentences is their spacing. A text of spaces alone has none. Every other character lies in
    a sentence: a splitter that leaves one out of its pieces leaves it to the sentence before."""
    try:
        import sentencex

        second = second_opinion(lang)  # asked only where a sentence may hold two: needed always
    except ImportError:
        raise Seq2SeqError(f"documents need the sentence splitters: {INSTALL_HINT}") from None
    # sentencex 1.0 panics on a letter, a no-break space and a full stop ("A\u00a0."): it cuts a
    # wide space's bytes in two. The splitters read each such space as a plain one: one character
    # for one, so every offset holds in the text as given.
    plain = WIDE_SPACE.sub(" ", text)
    spans = []
    for a, b in _cut_at(plain, 0, len(plain), sentencex.segment(lang, plain)):
        if INNER_END.search(plain, a, b):
            spans += _cut_at(plain, a, b, second.segment(plain[a:b]))
        else:
            spans.append((a, b))
    return spans


def _cut_at(text: str, a: int, b: int, pieces) -> list[tuple[int, int]]:
    """text[a:b] cut where each of `pieces` (a splitter's sentences of it, in order) begins, the
    spaces at each part's ends left out, the parts of spaces alone left out. A piece not found as
    given (a splitter that changed it) leaves the rest of the text one part."""
    cuts, at = [a], a
    for piece in pieces:
        stripped = piece.strip()
        found = text.find(stripped, at, b) if stripped else at
        if found < 0:
            break
        if found > cuts[-1]:
            cuts.append(found)
        at = found + len(stripped)
    spans = []
    for start, end in zip(cuts, [*cuts[1:], b], strict=True):
        part = text[start:end]
        if part.strip():
            spans.append((start + len(part) - len(part.lstrip()), end - len(part) + len(part.rstrip())))
    return spans


@functools.cache
def second_opinion(lang: str):
    """pysbd's segmenter for `lang`, its English one where it has none; the text kept as given."""
    import pysbd
    from pysbd.languages import LANGUAGE_CODES

    return pysbd.Segmenter(language=lang if lang in LANGUAGE_CODES else "en", clean=False)


BREAKS = (";", ":", ",", " ")  # where a sentence too long for the model is cut, the first found kept


def fitted(text: str, spans: list[tuple[int, int]], fits) -> tuple[list[tuple[int, int]], int]:
    """`spans` with each sentence that does not fit (`fits(sentence)` False: longer than the model
    reads) cut into parts that do, and how many sentences were cut. A cut goes at the best place:
    after a semicolon, else a colon, else a comma, else at a space, the one nearest the middle; a
    word longer than the model reads is halved. Nothing is dropped: the parts' translations, joined
    with the spacing between them, stand for the sentence's."""
    out, cut = [], 0
    for span in spans:
        parts = _parts(text, span, fits)
        out += parts
        cut += len(parts) > 1
    return out, cut


def _parts(text: str, span: tuple[int, int], fits) -> list[tuple[int, int]]:
    a, b = span
    if fits(text[a:b]) or b - a < 2:
        return [span]
    left, right = _cut(text, a, b)
    return _parts(text, left, fits) + _parts(text, right, fits)


def _cut(text: str, a: int, b: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """The sentence [a, b) as two non-empty parts, cut at its best place (BREAKS), the spaces
    between them left out."""
    middle = (a + b) / 2
    for mark in BREAKS:
        places = [p + 1 for p in range(a + 1, b - 1) if text[p] == mark]  # after the mark
        if mark == " ":
            places = [p - 1 for p in places]  # before the space
        places = [p for p in places if text[a:p].strip() and text[p:b].strip()]
        if places:
            at = min(places, key=lambda p: abs(p - middle))
            break
    else:
        at = (a + b) // 2  # one long word: halved
    end, start = at, at
    while end > a and text[end - 1].isspace():
        end -= 1
    while start < b and text[start].isspace():
        start += 1
    return (a, end), (start, b)
