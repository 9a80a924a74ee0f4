"""A paragraph cut into sentences, each with the spacing after it, so that the translations joined
with the same spacing are the paragraph's translation. The splitter is sentencex (Wikimedia's,
rule-based, many languages): on paragraphs built from Multi30k's sentences it splits exactly as
often as pysbd and twenty times faster (scripts/bench_splitters.py)."""

from seq2seq.errors import Seq2SeqError

INSTALL_HINT = 'pip install -e ".[docs]"'


def split(text: str, lang: str = "en") -> list[tuple[int, int]]:
    """The (start, end) of each sentence of `text`, spaces at its ends left out; what lies between
    two sentences is their spacing. A text of spaces alone has none."""
    try:
        import sentencex
    except ImportError:
        raise Seq2SeqError(f"documents need the sentence splitter: {INSTALL_HINT}") from None
    spans, at = [], 0
    for sentence in sentencex.segment(lang, text):
        start = text.index(sentence, at)
        at = start + len(sentence)
        stripped = sentence.strip()
        if stripped:
            first = start + sentence.index(stripped)
            spans.append((first, first + len(stripped)))
    return spans
