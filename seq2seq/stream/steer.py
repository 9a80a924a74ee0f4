"""What `translate` steers the search with and what it records of it: the prefixes (--prefix,
--prefix-file), the terms (--constraint, --avoid, --constraints-file, --glossary) and the beam's
record (--beam-trace, JSON lines)."""

import json
from pathlib import Path

from seq2seq.errors import FieldError
from seq2seq.files.reading import line_groups
from seq2seq.files.writing import write_file


def prefix_lines(prefix: str | None, prefix_file: Path | None) -> list[str] | None:
    """--prefix-file's lines (read whole: their count is checked against the input's before any
    line is translated), or None; --prefix is one text for every line, applied per group."""
    if prefix is not None and prefix_file is not None:
        raise FieldError(("prefix", "prefix_file"), "give one, not both")
    return None if prefix_file is None else whole(prefix_file)


def whole(path: Path | None) -> list[str]:
    """Every line of a file (None: standard input), read through `line_groups`' checks."""
    return [line for group in line_groups(path, 1 << 16) for line in group]


def check_count(given: list, lines: int, path: Path, name: str = "prefix_file") -> None:
    if len(given) != lines:
        what = "prefix" if name == "prefix_file" else "line of constraints"
        message = f"{path} has {len(given)} lines but the input has {lines}; give one {what} a line"
        raise FieldError(name, message)


class Terms:
    """The terms of the lines: --constraint and --avoid for every line, --constraints-file's line
    for each (read whole, its count checked against the input's), --glossary's for the lines
    that hold its source terms."""

    def __init__(
        self, include, avoid, constraints_file: Path | None, glossary: Path | None, ignore_case: bool
    ):
        from seq2seq.decoding.terms import Glossary, constraints_line

        if ignore_case and glossary is None:
            raise FieldError("ignore_case", "goes with a glossary")
        self.include, self.avoid, self.path = tuple(include or ()), tuple(avoid or ()), constraints_file
        self.per_line = None
        if constraints_file is not None:
            texts = whole(constraints_file)
            self.per_line = [
                constraints_line(t, f"{constraints_file} line {n}") for n, t in enumerate(texts, 1)
            ]
        self.glossary = (
            None if glossary is None else Glossary.parse(whole(glossary), str(glossary), ignore_case)
        )
        self.given = bool(self.include or self.avoid or self.per_line is not None or self.glossary)

    def check(self, translator, options, texts: list[str] | None, policy: dict) -> None:
        """What can be checked before any line is translated, by the request's one check: the
        input's lines (`texts`, when it is read whole) with every term of the file, the command
        line and the glossary (else every term on blank lines), then each glossary term beside
        them, used or not."""
        from seq2seq.request.request import TranslationRequest

        if not self.given:
            return
        if self.per_line is not None:
            check_count(self.per_line, len(texts), self.path, "constraints_file")
        if texts is None:  # read as it comes: the terms alone, on blank lines
            lines, glossary = [""] * (len(self.per_line) if self.per_line else 1), None
        else:
            lines, glossary = texts, self.glossary
        own = self.per_line
        translator.refuse(
            TranslationRequest(lines, options, None, self.include, self.avoid, own, glossary, **policy)
        )
        for _, target in self.glossary.entries if self.glossary else ():
            asked = TranslationRequest([""], options, None, (*self.include, target), self.avoid, **policy)
            translator.refuse(asked)


class TraceFile:
    """--beam-trace FILE: one JSON object a line of input ({"line", "source", "prefix", "nodes"}:
    trace.py's nodes, each with its piece), kept as text and written whole at the end."""

    def __init__(self, path: Path | None):
        self.path, self.lines = path, []

    def add(
        self, tokenizer, first: int, lines: list[str], prefixes: list[str] | None, traces, terms=None
    ) -> None:
        """Each line's record; with `terms` (each line's), its constraints too."""
        from seq2seq.decoding.trace import with_pieces

        if self.path is None:
            return
        for i, (source, nodes) in enumerate(zip(lines, traces, strict=True)):
            with_pieces(tokenizer, nodes)
            prefix = "" if prefixes is None else prefixes[i]
            record = {"line": first + i, "source": source, "prefix": prefix, "nodes": nodes}
            if terms is not None:
                record["constraints"] = {"include": list(terms[i].include), "avoid": list(terms[i].avoid)}
            self.lines.append(json.dumps(record, ensure_ascii=False))

    def finish(self) -> None:
        if self.path is not None:
            write_file("".join(line + "\n" for line in self.lines).encode("utf-8"), self.path)


class Steer:
    """The prefixes of the lines (--prefix: one for all; --prefix-file: one each), their terms and
    the trace file."""

    def __init__(self, prefix: str | None, prefixes: list[str] | None, trace: TraceFile, terms: Terms):
        self.prefix, self.prefixes, self.trace, self.terms = prefix, prefixes, trace, terms

    def prefixes_of(self, first: int, count: int) -> list[str] | None:
        """The prefixes of `count` lines from line `first` (None: no prefix)."""
        if self.prefixes is not None:
            return self.prefixes[first - 1 : first - 1 + count]
        return None if self.prefix is None else [self.prefix] * count

    def request(self, lines: list[str], first: int, options, policy: dict):
        """The request of lines `first`.. : their prefixes and terms, and the `policy` fields."""
        from seq2seq.request.request import TranslationRequest

        terms, trace = self.terms, self.trace.path is not None
        own = None if terms.per_line is None else terms.per_line[first - 1 : first - 1 + len(lines)]
        prefixes = self.prefixes_of(first, len(lines))
        return TranslationRequest(
            lines, options, prefixes, terms.include, terms.avoid, own, terms.glossary, trace=trace, **policy
        )

    @classmethod
    def of(cls, args, texts: list[str] | None, options) -> tuple["Steer", list[str] | None]:
        """The steering `translate`'s args ask for, and the input's lines (`texts`, or read whole
        where a file of prefixes or constraints must pair up with them before anything is
        written; else None: streamed)."""
        prefixes = prefix_lines(args.prefix, args.prefix_file)
        terms = Terms(args.constraint, args.avoid, args.constraints_file, args.glossary, args.ignore_case)
        if prefixes is not None or terms.per_line is not None or terms.glossary is not None:
            texts = texts or whole(args.input)  # paired with the input, or its terms counted, up front
        if prefixes is not None:
            check_count(prefixes, len(texts), args.prefix_file)
        return cls(args.prefix, prefixes, TraceFile(args.beam_trace), terms), texts
