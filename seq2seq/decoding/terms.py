"""Terms a translation must hold or avoid, as users give them: on the command line (`--constraint`,
`--avoid`, for every line), a file of one line's constraints per input line (`--constraints-file`:
a JSON list of terms, a JSON object `{"include": [...], "avoid": [...]}`, or terms separated by
tabs; an empty line for none) and a glossary (`--glossary`: `source term<TAB>target term` lines;
a line whose source holds a source term, as whole words, must hold its target term). Each is
turned into target pieces (`constraint_ids`) for the search (constraints.py).
"""

import json
import re
from dataclasses import dataclass
from functools import cached_property
from weakref import WeakKeyDictionary

import torch

from seq2seq.data.special import UNK_ID
from seq2seq.decoding.constraints import LineConstraints, Phrase
from seq2seq.errors import FieldError, Seq2SeqError


@dataclass(frozen=True)
class Terms:
    """One line's constraints as text: what the output must hold, and what it must not."""

    include: tuple[str, ...] = ()
    avoid: tuple[str, ...] = ()


def constraint_ids(
    tokenizer, terms: list[Terms] | None, lines: int, beam: int, limit: int, encoded: dict | None = None
) -> list[LineConstraints | None]:
    """Each line's constraints as target pieces (None for none), checked here and nowhere else: a
    one-line error naming the fields for a count other than the lines', a term the tokenizer cannot
    spell, phrases that need more output than `limit` or more banks than the beam has, or a phrase
    to include that holds one to avoid.
    `encoded`: text -> pieces, each term tokenized once however many lines hold it (`term_ids`)."""
    if terms is None:
        return [None] * lines
    if len(terms) != lines:
        raise FieldError("per_line", f"{lines} lines but {len(terms)} lines of constraints; give one a line")
    out: list[LineConstraints | None] = []
    joins, encoded = word_joins(tokenizer), {} if encoded is None else encoded
    for number, line in enumerate(terms, start=1):
        include = _phrases(tokenizer, line.include, number, encoded, "include")
        avoid = _phrases(tokenizer, line.avoid, number, encoded, "avoid")
        include = _outermost(include)
        if len(include) >= beam:
            raise FieldError(
                ("include", "beam"),
                f"line {number} has {len(include)} constraints; a beam of {beam} holds at most {beam - 1}: "
                "raise the beam",
            )
        for (text, phrase), (bad, banned) in ((a, b) for a in include.items() for b in avoid.items()):
            if holds(phrase, banned):
                raise FieldError(
                    ("include", "avoid"),
                    f"line {number}: the constraint {text!r} holds {bad!r}, a term to avoid",
                )
        found = LineConstraints(tuple(include.values()), tuple(avoid.values()), joins)
        if found.pieces > limit:
            raise FieldError(
                ("include", "max_len"),
                f"line {number}'s constraints take {found.pieces} pieces, above the longest output "
                f"({limit}; see max-len)",
            )
        out.append(found if include or avoid else None)
    return out


def word_joins(tokenizer) -> torch.Tensor:
    """(V,) the pieces that carry on the word before them: no word start (▁), a letter or digit
    first; the special pieces do not. Read once per tokenizer (a scan of its vocabulary), never
    written to."""
    joins = _JOINS.get(tokenizer)
    if joins is None:
        pieces = tokenizer.id_pieces(list(range(tokenizer.vocab_size)))
        joins = _JOINS[tokenizer] = torch.tensor([p[:1].isalnum() and not p.startswith("<") for p in pieces])
    return joins


_JOINS: WeakKeyDictionary = WeakKeyDictionary()  # tokenizer -> its word_joins


def _outermost(phrases: dict[str, Phrase]) -> dict[str, Phrase]:
    """The phrases no other phrase holds: a translation that meets "voiture de sport" holds
    "voiture", which is then not inserted a second time."""
    return {
        text: ids
        for text, ids in phrases.items()
        if not any(other != ids and holds(other, ids) for other in phrases.values())
    }


def holds(phrase: Phrase, part: Phrase) -> bool:
    """Whether the pieces `part` stand in `phrase`, in a row."""
    n = len(part)
    return any(phrase[i : i + n] == part for i in range(len(phrase) - n + 1))


def term_ids(tokenizer, text: str, encoded: dict | None = None) -> Phrase:
    """A term's target pieces, kept in `encoded` (text -> pieces) when given: tokenized once."""
    if encoded is None:
        return tuple(tokenizer.encode([text], "target")[0])
    if text not in encoded:
        encoded[text] = tuple(tokenizer.encode([text], "target")[0])
    return encoded[text]


def _phrases(tokenizer, texts: tuple[str, ...], number: int, encoded: dict, field: str) -> dict[str, Phrase]:
    """text -> its target pieces, each phrase once."""
    phrases: dict[str, Phrase] = {}
    seen: set[Phrase] = set()
    for text in texts:
        ids = term_ids(tokenizer, text, encoded)
        if not ids or UNK_ID in ids:
            why = "is blank" if not ids else "holds characters the tokenizer has no piece for"
            raise FieldError(field, f"line {number}: the constraint {text[:40]!r} {why}")
        if ids not in seen:
            phrases[text] = ids
            seen.add(ids)
    return phrases


def constraints_line(text: str, where: str) -> Terms:
    """One line of a constraints file: JSON (a list of terms, or an object of `include` and
    `avoid` lists), else terms separated by tabs; blank: none."""
    if not text.strip():
        return Terms()
    if text.lstrip()[:1] not in "[{":
        return Terms(tuple(t for t in text.split("\t") if t.strip()))
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        raise Seq2SeqError(f"{where} is not readable JSON") from None
    if isinstance(value, list):
        value = {"include": value}
    if not isinstance(value, dict) or set(value) - {"include", "avoid"}:
        raise Seq2SeqError(f'{where}: give a list of terms, or {{"include": [...], "avoid": [...]}}')
    lists = [value.get(key, []) for key in ("include", "avoid")]
    if not all(isinstance(x, list) and all(isinstance(t, str) for t in x) for x in lists):
        raise Seq2SeqError(f"{where}: the terms must be lists of strings")
    return Terms(tuple(lists[0]), tuple(lists[1]))


MAX_GLOSSARY = 100_000  # entries: one pattern of them all compiles in about 3 s


@dataclass(frozen=True)
class Glossary:
    """Source term -> target term: a line whose source holds the source term (as whole words,
    optionally ignoring case) must hold the target term. Where source terms overlap ("car",
    "sports car") the longest match wins, leftmost first, and its target alone is asked for."""

    entries: tuple[tuple[str, str], ...]
    ignore_case: bool = False

    @classmethod
    def parse(cls, lines: list[str], name: str, ignore_case: bool = False) -> "Glossary":
        if len(lines) > MAX_GLOSSARY:  # counted before any is read: its pattern grows with each
            raise Seq2SeqError(f"{name} has {len(lines)} lines, above the {MAX_GLOSSARY} a glossary may hold")
        entries = []
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            source, tab, target = line.partition("\t")
            if not tab or not source.strip() or not target.strip() or "\t" in target:
                raise Seq2SeqError(
                    f"{name} line {number}: give 'source term<TAB>target term', one tab between two terms"
                )
            entries.append((source.strip(), target.strip()))
        return cls(tuple(entries), ignore_case)

    @cached_property
    def _matcher(self) -> tuple[re.Pattern, dict[str, str]]:
        """One pattern for every source term, the longest first (an alternation takes the first
        that matches at a position), and each source's target by its matched text (the first
        entry's where two spell one source)."""
        key = str.casefold if self.ignore_case else str
        targets: dict[str, str] = {}
        for source, target in self.entries:
            targets.setdefault(key(source), target)
        sources = sorted({source for source, _ in self.entries}, key=len, reverse=True)
        alternatives = "|".join(map(re.escape, sources))
        flags = re.IGNORECASE if self.ignore_case else 0
        return re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)", flags), targets

    def terms(self, line: str) -> tuple[str, ...]:
        """The target terms of the source terms `line` holds, in the line's order, once each."""
        if not self.entries:
            return ()
        pattern, targets = self._matcher
        key = str.casefold if self.ignore_case else str
        found = (targets.get(key(m.group())) for m in pattern.finditer(line))
        return tuple(dict.fromkeys(t for t in found if t is not None))


def line_terms(
    lines: list[str],
    include: tuple[str, ...] = (),
    avoid: tuple[str, ...] = (),
    per_line: list[Terms] | None = None,
    glossary: Glossary | None = None,
) -> list[Terms] | None:
    """Each line's terms: those for every line, its own (`per_line`) and the glossary's; None
    when there are none at all (the plain search)."""
    if not (include or avoid or per_line or glossary):
        return None
    out = []
    for i, line in enumerate(lines):
        own = per_line[i] if per_line is not None else Terms()
        found = glossary.terms(line) if glossary is not None else ()
        out.append(Terms((*include, *own.include, *found), (*avoid, *own.avoid)))
    return out
