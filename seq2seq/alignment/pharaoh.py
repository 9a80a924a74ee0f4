"""Pharaoh alignment files: one line per sentence pair, links `i-j` (Sure) or `i?j` (Possible),
0-based, source word first, separated by spaces; what fast_align, eflomal and Marian read and
write. The NAACL 2003 / talp gold format (`sentence i j [S|P]`, 1-based) is read too.

A link set keeps Sure and Possible apart; Sure links are Possible too (Och & Ney), so `possible`
holds both.
"""

import re
from dataclasses import dataclass, field
from pathlib import Path

from seq2seq.errors import Seq2SeqError

_LINK = re.compile(r"^(\d+)([-?p])(\d+)$")

Link = tuple[int, int]  # (source word, target word), 0-based


@dataclass
class Links:
    """One pair's links: `sure` and `possible` (which includes every sure link)."""

    sure: set[Link] = field(default_factory=set)
    possible: set[Link] = field(default_factory=set)

    @classmethod
    def of(cls, links: set[Link] | list[Link]) -> "Links":
        """Links an aligner produced: all Sure."""
        return cls(set(links), set(links))

    def turned(self) -> "Links":
        """The same links of the pair turned round (target word first)."""
        return Links({(j, i) for i, j in self.sure}, {(j, i) for i, j in self.possible})

    def pharaoh(self) -> str:
        """`i-j` for each Sure link and `i?j` for each only-Possible one, sorted by target then
        source word (as eflomal and fast_align write)."""
        ordered = sorted(self.possible | self.sure, key=lambda link: (link[1], link[0]))
        return " ".join(f"{i}{'-' if (i, j) in self.sure else '?'}{j}" for i, j in ordered)


def parse_line(line: str, where: str) -> Links:
    """One Pharaoh line; `where` ("gold.txt line 3") names it in the error."""
    links = Links()
    for token in line.split():
        match = _LINK.match(token)
        if match is None:
            raise Seq2SeqError(f"{where}: {token[:40]!r} is not a link (i-j Sure or i?j Possible)")
        i, kind, j = int(match[1]), match[2], int(match[3])
        links.possible.add((i, j))
        if kind == "-":
            links.sure.add((i, j))
    return links


def read_links(path: str | Path) -> list[Links]:
    """A Pharaoh file, or a NAACL/talp one (told apart by its first line: three or four fields,
    the first a sentence number), as one `Links` per pair."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        why = getattr(e, "strerror", None) or e
        raise Seq2SeqError(f"cannot read the alignment file {path} ({why})") from None
    first = next((line for line in lines if line.strip()), "")
    if re.match(r"^\d+\s+\d+\s+\d+(\s+[SP])?\s*$", first):
        return _read_naacl(lines, path)
    return [parse_line(line, f"{path} line {n}") for n, line in enumerate(lines, start=1)]


def _read_naacl(lines: list[str], path: Path) -> list[Links]:
    """`sentence source target [S|P]`, all 1-based; a missing kind is Sure. Sentences may skip
    numbers (a pair with no links); the result runs to the highest sentence number."""
    pairs: dict[int, Links] = {}
    for n, line in enumerate(lines, start=1):
        fields = line.split()
        if not fields:
            continue
        numbers, kind = fields[:3], fields[3:]
        well_formed = len(fields) in (3, 4) and all(f.isdigit() for f in numbers)
        if not well_formed or kind not in ([], ["S"], ["P"]):
            raise Seq2SeqError(f"{path} line {n}: expected 'sentence source target [S|P]', 1-based")
        sentence, i, j = (int(f) for f in fields[:3])
        if min(sentence, i, j) < 1:
            raise Seq2SeqError(f"{path} line {n}: the NAACL format counts from 1")
        links = pairs.setdefault(sentence, Links())
        links.possible.add((i - 1, j - 1))
        if fields[3:] != ["P"]:
            links.sure.add((i - 1, j - 1))
    return [pairs.get(s, Links()) for s in range(1, max(pairs, default=0) + 1)]


def check_ranges(
    links: list[Links],
    source_words: list[int],
    target_words: list[int],
    path: str | Path,
    numbers: list[int] | None = None,
) -> None:
    """Every link within its pair's words: a one-line error naming the file and line otherwise
    (`numbers`: the file's line of each pair, if not 1, 2, ...)."""
    if len(links) != len(source_words):
        raise Seq2SeqError(f"{path} has {len(links)} lines for {len(source_words)} sentence pairs")
    numbers = numbers or range(1, len(links) + 1)
    for n, pair, s, t in zip(numbers, links, source_words, target_words, strict=True):
        for i, j in pair.possible:
            if i >= s or j >= t:
                raise Seq2SeqError(
                    f"{path} line {n}: link {i}-{j} is out of range "
                    f"(the pair has {s} source and {t} target words)"
                )
