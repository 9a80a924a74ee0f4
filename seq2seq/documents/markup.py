"""Inline markup carried through the alignment (Bergamot's approach, made measurable): a run of
text with tags is taken apart into its plain text and its tags (each pair a span of characters of
the plain text); the plain sentences are translated; each pair is then placed around the target
words aligned to the source words it enclosed.

The rules, for a pair (an opening and its closing, `Pair`) or an atom (markup kept as it is, such
as a code span or a line break: a pair that encloses no text):
- A pair encloses the source words its characters touch (a tag inside a word takes the word).
- It opens before the first and closes after the last target word aligned to any of them.
- An atom, or a pair around no word, goes after the target words aligned to the source word
  before it (before those of the word after it, at the start of a sentence).
- A pair nested in another in the source stays inside it in the target: its target words are
  clamped to its parent's.
- A pair whose words have no aligned target word, or that spans sentences whose words have none,
  goes at its first sentence's end, around nothing, and is counted (`Placed.unplaced`).
At one place closings come before openings, an outer opening before an inner one.

Shapes: words are whitespace tokens; links (source word, target word), 0-based, per sentence.
"""

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class Layout:
    """A document read: its runs of text to translate, and how to write it back around them."""

    runs: list["Run"]
    render: Callable[[list[str]], str]  # the runs' translations -> the document


@dataclass
class Pair:
    """An opening (`open`) and a closing (`close`) markup around characters [start, end) of the
    plain text; an atom has `close` "" and start == end. `parent`: the pair it nests in."""

    open: str
    close: str
    start: int
    end: int
    parent: int | None = None


@dataclass
class Run:
    """Text with inline markup, taken apart: the plain text and the pairs over it, outermost
    first (a parent before its children)."""

    text: str = ""
    pairs: list[Pair] = field(default_factory=list)
    stack: list[int] = field(default_factory=list)  # pairs open while building
    escape: Callable[[str], str] = str  # how the document writes a translated word (HTML: escaped)

    def add(self, text: str) -> None:
        self.text += text

    def opening(self, markup: str) -> None:
        parent = self.stack[-1] if self.stack else None
        self.pairs.append(Pair(markup, "", len(self.text), -1, parent))
        self.stack.append(len(self.pairs) - 1)

    def closing(self, markup: str) -> bool:
        """False when nothing is open (a stray closing)."""
        if not self.stack:
            return False
        pair = self.pairs[self.stack.pop()]
        pair.close, pair.end = markup, len(self.text)
        return True

    def atom(self, markup: str) -> None:
        """Markup kept whole where it stands; set apart by a space in the target where it was
        in the source (a code span between words), glued to its word where it was not."""
        parent = self.stack[-1] if self.stack else None
        spaced = bool(self.text) and self.text[-1].isspace()
        self.pairs.append(Pair((" " if spaced else "") + markup, "", len(self.text), len(self.text), parent))


@dataclass
class Placed:
    text: str
    unplaced: int = 0


def words_with_offsets(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """(start, end) of each whitespace token of text[start:end], as offsets of `text`."""
    out, i = [], start
    while i < end:
        while i < end and text[i].isspace():
            i += 1
        j = i
        while j < end and not text[j].isspace():
            j += 1
        if j > i:
            out.append((i, j))
        i = j
    return out


def place(
    run: Run,
    sentences: list[tuple[int, int]],
    translations: list[str],
    links: list[set[tuple[int, int]]],
    spacing: list[str],
) -> Placed:
    """The translated run with its markup: `sentences` the (start, end) of each sentence of
    `run.text`, `translations` theirs, `links` each pair's alignment (source word, target word),
    `spacing` what goes after each translated sentence."""
    source_words = [words_with_offsets(run.text, a, b) for a, b in sentences]
    target_words = [[run.escape(w) for w in t.split()] for t in translations]
    before: dict[tuple[int, int], list[str]] = {}  # (sentence, target word) -> markup before it
    after: dict[tuple[int, int], list[str]] = {}
    ends: list[list[str]] = [[] for _ in sentences]
    spans: list[tuple[tuple[int, int], tuple[int, int]] | None] = []
    unplaced = 0
    for pair in run.pairs:
        span = _target_span(pair, sentences, source_words, target_words, links)
        if span is not None and pair.parent is not None and spans[pair.parent] is not None:
            span = _clamp(span, spans[pair.parent])
        spans.append(span)
        if span is None:
            unplaced += 1
            ends[_sentence_of(pair.start, sentences)].append(pair.open + pair.close)
        elif pair.start == pair.end:  # an atom, or a pair around nothing: after the word before it
            (s, j), _ = span
            (after if j >= 0 else before).setdefault((s, max(j, 0)), []).append(pair.open + pair.close)
        else:
            before.setdefault(span[0], []).append(pair.open)
            after.setdefault(span[1], []).insert(0, pair.close)  # inner closings first
    out = []
    for s, words in enumerate(target_words):
        pieces = []
        for j, word in enumerate(words):
            pieces.append("".join(before.get((s, j), [])) + word + "".join(after.get((s, j), [])))
        if not words:
            pieces.append("".join(before.get((s, 0), [])) + "".join(after.get((s, 0), [])))
        out.append(" ".join(pieces) + "".join(ends[s]) + spacing[s])
    return Placed("".join(out), unplaced)


def _sentence_of(offset: int, sentences: list[tuple[int, int]]) -> int:
    """The sentence an offset falls in, or the last one that starts at or before it."""
    found = 0
    for s, (a, _) in enumerate(sentences):
        if a <= offset:
            found = s
    return found


def _target_span(pair, sentences, source_words, target_words, links):
    """((sentence, first target word), (sentence, last target word)) for a pair, or for an atom
    ((sentence, the target word it follows, -1 for none), same); None when nothing aligns."""
    if pair.start == pair.end:
        return _atom_span(pair.start, sentences, source_words, target_words, links)
    aligned = []
    for s, words in enumerate(source_words):
        for i, (a, b) in enumerate(words):
            if a < pair.end and b > pair.start:  # the pair touches this word
                aligned += [(s, j) for (si, j) in links[s] if si == i]
    if not aligned:
        return None
    return min(aligned), max(aligned)


def _atom_span(offset, sentences, source_words, target_words, links):
    s = _sentence_of(offset, sentences)
    words = source_words[s]
    previous = [i for i, (_, b) in enumerate(words) if b <= offset]
    if previous:
        targets = [j for (i, j) in links[s] if i == previous[-1]]
        if targets:
            return (s, max(targets)), (s, max(targets))
    following = [i for i, (a, _) in enumerate(words) if a >= offset]
    if following:
        targets = [j for (i, j) in links[s] if i == following[0]]
        if targets:
            return (s, min(targets) - 1), (s, min(targets) - 1)
    if not previous and target_words[s]:  # at the start of a sentence that has words
        return (s, -1), (s, -1)
    return None


def _clamp(span, parent):
    (start, end), (low, high) = span, parent
    start = min(max(start, low), high)
    end = max(min(end, high), start)
    return start, end
