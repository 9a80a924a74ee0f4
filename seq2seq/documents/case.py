"""ALL-CAPS and Title-Case input, translated as ordinary text and written back in its case.

A model trained on sentence-case captions reads an ALL-CAPS line as pieces it has rarely or never
seen (test_2016 upper-cased: BLEU 0.04 against 61.1), and a Title-Case one little better. A line
whose letters are all capitals, or whose every word (two or more) starts with one, is folded to
sentence case (lower case, its first letter a capital) before it is translated; its translation is
then upper-cased, or each of its words given a capital first letter. Any other line is translated
as it is. (Training on case-augmented pairs, Mozilla's approach, is the other way:
scripts/bench_case.py measures the two side by side, docs/translate.md shows them.)"""

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
    return line if case == AS_IS else _capital_first(line.lower())


def restore(text: str, case: str) -> str:
    """A translation written back in its source's case."""
    if case == UPPER:
        return text.upper()
    if case == TITLE:
        return _WORD.sub(lambda word: _capital_first(word.group()), text)
    return text


def folded(lines: list[str]) -> tuple[list[str], list[str]]:
    """The lines to translate, and each one's case."""
    cases = [case_of(line) for line in lines]
    return [fold(line, case) for line, case in zip(lines, cases, strict=True)], cases


def restored(result, cases: list[str]):
    """A search's Translations (decoding/search.py) with every hypothesis in its line's case."""
    if all(case == AS_IS for case in cases):
        return result
    nbest = [
        [(restore(text, case), score) for text, score in hyps]
        for hyps, case in zip(result.nbest, cases, strict=True)
    ]
    return replace(result, nbest=nbest)


def _capital_first(text: str) -> str:
    for i, c in enumerate(text):
        if c.isalpha():
            return text[:i] + c.upper() + text[i + 1 :]
    return text
