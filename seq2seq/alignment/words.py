"""Words: what an alignment links. A word is a whitespace token of the given line (as fast_align
and eflomal take their input); a subword piece belongs to the word its text falls in.

`split_words` is the tokenization of the shipped gold set (data/alignment/): punctuation split off,
English clitics split before the apostrophe (man 's, do n't), French elisions after it (l' homme,
qu' il). A user may bring any tokenization instead: the aligner only splits on whitespace.
"""

import re

import numpy as np

WORD_START = "\u2581"  # SentencePiece's mark of the whitespace before a word

# one token: an elided French prefix, an English clitic, a run of word characters (with inner
# hyphens, dots of numbers and apostrophes left to the rules below), or one other character
_APOSTROPHES = "'\u2019"
_PUNCT = re.compile(r"(\w[\w\-'\u2019]*\w|\w|[^\w\s])", re.UNICODE)
_FRENCH_ELISION = re.compile(r"^((?:[a-zA-Z]|qu|jusqu|lorsqu|puisqu|quoiqu)['\u2019])(\w.*)$", re.IGNORECASE)
_ENGLISH_CLITIC = re.compile(r"^(\w+?)((?:n['\u2019]t)|['\u2019](?:s|re|ve|ll|d|m|t))$", re.IGNORECASE)


def split_words(text: str, lang: str) -> list[str]:
    """The gold set's words of one line; `lang` chooses the apostrophe rule ("fr": after it)."""
    return split_with_origin(text, lang)[0]


def split_with_origin(text: str, lang: str) -> tuple[list[str], list[int]]:
    """`split_words`, and the whitespace token of `text` each word came from (its index): links
    between split words map back to links between the line's own words."""
    words, origin = [], []
    for n, raw in enumerate(text.split()):
        for token in _PUNCT.findall(raw):
            parts = _split_apostrophe(token, lang)
            words.extend(parts)
            origin.extend([n] * len(parts))
    return words, origin


def _split_apostrophe(token: str, lang: str) -> list[str]:
    if not any(a in token for a in _APOSTROPHES):
        return [token]
    rule = _FRENCH_ELISION if lang == "fr" else _ENGLISH_CLITIC
    match = rule.match(token)
    if match is None:
        return [token]  # aujourd'hui, o'clock: one word
    head, tail = match.groups()
    return [head, *_split_apostrophe(tail, lang)] if lang == "fr" else [head, tail]


def piece_words(pieces: list[str]) -> np.ndarray:
    """(pieces,) the word each SentencePiece piece belongs to: the merge rule of `align`."""
    return word_index(word_starts(pieces))


def word_starts(pieces: list[str]) -> np.ndarray:
    """(pieces,) bool: which pieces start a word (carry SentencePiece's mark)."""
    return np.array([p.startswith(WORD_START) for p in pieces], dtype=bool)


def word_index(starts: np.ndarray) -> np.ndarray:
    """(pieces,) bool "starts with ▁" -> (pieces,) each piece's word, from 0. A piece that starts
    with "▁" starts the next word (SentencePiece marks the whitespace before a word so); the others
    continue the current one; a first piece without the mark still starts word 0."""
    starts = starts.astype(np.int64)
    if len(starts):
        starts[0] = 1
    return np.cumsum(starts) - 1
