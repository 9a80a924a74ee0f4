"""ALL-CAPS and Title-Case input, translated as ordinary text and written back in its case (the
request's `case` policy "auto"; "keep" searches the line as it is).

A model trained on sentence-case captions reads an ALL-CAPS line as pieces it has rarely or never
seen, and a Title-Case one little better (scripts/bench_case.py's "the search alone"). A line
whose letters are all capitals, or whose every word (two or more) starts with one, is folded to
sentence case (lower case, its first letter a capital) before it is translated; its translation is
then upper-cased, or each of its words given a capital first letter. Any other line is translated
as it is. (Training on case-augmented pairs, Mozilla's approach, is the other way: bench_case
measures such a run beside with --augmented-run; docs/log.md has the figures.)"""

import re
from dataclasses import replace

UPPER, TITLE, AS_IS = "upper", "title", "as is"
_WORD = re.compile(r"\S+")


def case_of(line: str) -> str:
    """UPPER for a line of two or more letters, all capitals; TITLE for two or more words, each
    starting with a capital (its first letter); AS_IS for anything else."""
    letters = [c for c in line if c.isalpha()]
    if len(letters) >= 2 and all(c.isupper() for c in letters):
        return UPPER
    firsts = [next((c for c in word if c.isalpha()), "") for word in line.split()]
    firsts = [c for c in firsts if c]
    if len(firsts) >= 2 and all(c.isupper() for c in firsts):
        return TITLE
    return AS_IS


def fold(line: str, case: str) -> str:
    """The line as the model reads it best: in sentence case unless it is AS_IS."""
    return line if case == AS_IS else capital_first(line.lower())


def restore(text: str, case: str, kept: list[tuple[int, int]] = ()) -> str:
    """A translation written back in its source's case; the spans `kept` (start, end: forced text,
    a prefix or a term) stay exactly as they are."""
    if case == AS_IS:
        return text
    inside = _covered(len(text), kept)
    if case == UPPER:
        return "".join(c if inside[i] else c.upper() for i, c in enumerate(text))
    out = list(text)
    for word in _WORD.finditer(text):
        first = next((i for i in range(word.start(), word.end()) if text[i].isalpha()), None)
        if first is not None and not inside[first]:
            out[first] = text[first].upper()
    return "".join(out)


def restore_pieces(pieces: list[str], case: str) -> list[str]:
    """A translation's pieces (SentencePiece's, a word's first beginning with U+2581) as `restore`
    writes its text: what the explorer shows beside the printed line."""
    if case == UPPER:
        return [p if _special(p) else p.upper() for p in pieces]
    if case == TITLE:
        return [p[0] + capital_first(p[1:]) if p.startswith("\u2581") else p for p in pieces]
    return pieces


def _special(piece: str) -> bool:
    return piece.startswith("<") and piece.endswith(">")  # </s>, <s>, <unk>


def _covered(length: int, spans) -> list[bool]:
    inside = [False] * length
    for start, end in spans:
        inside[start:end] = [True] * (end - start)
    return inside


def folded(lines: list[str]) -> tuple[list[str], list[str]]:
    """The lines to translate, and each one's case."""
    cases = [case_of(line) for line in lines]
    return [fold(line, case) for line, case in zip(lines, cases, strict=True)], cases


def restored(result, cases: list[str], forced: list[tuple[str, ...]] | None = None):
    """A search's Translations (decoding/search.py) with every hypothesis in its line's case, the
    text forced into each line (`forced[i]`: its prefix and terms, as given) kept as it is."""
    if all(case == AS_IS for case in cases):
        return result
    forced = forced or [()] * len(cases)
    nbest = [
        [(restore(text, case, forced_spans(text, given)), score) for text, score in hyps]
        for hyps, case, given in zip(result.nbest, cases, forced, strict=True)
    ]
    return replace(result, nbest=nbest)


def forced_spans(text: str, given: tuple[str, ...]) -> list[tuple[int, int]]:
    """Where each forced text of `given` stands in `text`: every occurrence (start, end)."""
    spans = []
    for term in given:
        term = term.strip()
        at = text.find(term) if term else -1
        while at >= 0:
            spans.append((at, at + len(term)))
            at = text.find(term, at + 1)
    return spans


def capital_first(text: str) -> str:
    for i, c in enumerate(text):
        if c.isalpha():
            return text[:i] + c.upper() + text[i + 1 :]
    return text
