"""A run's translation written with its markup (markup.py's Run): each sentence's translation in
its place, what lies between sentences as the source has it, and every tag placed by these rules:
- A pair encloses the source words its characters touch (a tag inside a word takes the word). It
  opens before the first and closes after the last target word aligned to any of them; the
  opening moves left over target words with a letter or digit that no source word is aligned to
  (an article or a preposition before its noun that the alignment left out), unless the first
  word copies its source word.
- An atom, or a pair around no word, goes after the target words aligned to the source word
  before it (before those of the word after it, at the start of a sentence).
- A pair nested in another in the source stays inside it in the target: its target words are
  clamped to its parent's.
- A pair whose words have no aligned target word goes at its first sentence's end, around
  nothing, and is counted (`Placed.unplaced`); so is an atom with no aligned word beside it.
- Where the target holds the source as it was (a word aligned to the same word, the spaces
  between two such words, anything between sentences), a tag goes exactly where it stood and the
  characters are written as the source spelled them (an entity, an escape, a line's prefix); a
  new word is written through the format's escape. So a sentence translated as itself gives back
  its source byte for byte.
At one place tags keep their source order (closings before openings, outer before inner).

Shapes: words are whitespace tokens; links (source word, target word), 0-based, per sentence.
Each tag costs a bisection and the words it touches: linear in the run, whatever its tags.
"""

from bisect import bisect_left, bisect_right
from dataclasses import dataclass

from seq2seq.documents.markup import Run

BREAKS = set("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")  # what str.splitlines breaks at


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


class _Target:
    """The run's output as plain text, region by region: what each character is written as, the
    source offset of each it copies exactly, and the span of each sentence's target words."""

    def __init__(self, run: Run):
        self.run, self.written, self.out_of = run, [], {}
        self.words: list[list[tuple[int, int]]] = []  # per sentence: (start, end) of its target words
        self.exact: list[dict[int, int]] = []  # per sentence: target word -> source word it copies
        self.ends: list[int] = []  # per sentence: where its translation ends
        self.lettered: list[list[bool]] = []  # per sentence: whether each target word has a letter or digit

    def copy(self, a: int, b: int) -> None:
        """Source characters [a, b) written as the source spelled them."""
        for o in range(a, b):
            self.out_of[o] = len(self.written)
            self.written.append(self.run.spelling.get(o, self.run.text[o]))

    def sentence(self, source: list[tuple[int, int]], span, target: str, links: dict[int, list[int]]):
        """One sentence's translation: a target word identical to the source word it is aligned
        to is copied (as are the spaces between two such neighbours), any other word escaped."""
        text, start = self.run.text, len(self.written)
        words = words_with_offsets(target, 0, len(target))
        exact = {}
        for j, (c, d) in enumerate(words):
            same = [i for i in links.get(j, ()) if text[source[i][0] : source[i][1]] == target[c:d]]
            if same:
                exact[j] = same[0]
        at = 0
        for j, (c, d) in enumerate(words):
            self._gap(target, at, c, self._source_gap(source, span, exact, j, len(words)))
            if j in exact:
                self.copy(*source[exact[j]])
            else:
                self.written += [self.run.escape(target[c:d])] + [""] * (d - c - 1)
            at = d
        self._gap(target, at, len(target), self._source_gap(source, span, exact, len(words), len(words)))
        self.words.append([(start + c, start + d) for c, d in words])
        self.lettered.append([any(char.isalnum() for char in target[c:d]) for c, d in words])
        self.exact.append(exact)
        self.ends.append(len(self.written))

    @staticmethod
    def _source_gap(source, span, exact, j, n):
        """The source spaces target gap j (before target word j; n: after the last) stands for
        when both its neighbours copy neighbouring source words (or the sentence's edges)."""
        left = exact.get(j - 1, -1) if j > 0 else -1
        right = exact.get(j, len(source)) if j < n else len(source)
        if (j > 0 and j - 1 not in exact) or (j < n and j not in exact) or right != left + 1:
            return None
        return (source[left][1] if left >= 0 else span[0]), (
            source[right][0] if right < len(source) else span[1]
        )

    def _gap(self, target: str, c: int, d: int, source) -> None:
        """Spaces of the target: copied where they stand for the same source spaces; else written
        with each line break a space (a new line would need its line's prefix: `> `, indentation)."""
        if source is not None and self.run.text[source[0] : source[1]] == target[c:d]:
            self.copy(*source)
        else:
            self.written += [" " if char in BREAKS else char for char in target[c:d]]

    def bound(self, o: int, before: bool) -> int | None:
        """The output offset of the source boundary before character o, where it is copied:
        `before` the character after it, else after the one before it, first."""
        next_ = self.out_of.get(o)
        previous = self.out_of.get(o - 1)
        previous = None if previous is None else previous + 1
        first, second = (next_, previous) if before else (previous, next_)
        return first if first is not None else second


def place(
    run: Run, sentences: list[tuple[int, int]], translations: list[str], links: list[set[tuple[int, int]]]
) -> Placed:
    """The translated run with its markup: `sentences` the (start, end) of each sentence of
    `run.text` (in order), `translations` theirs, `links` each one's alignment (source word,
    target word). What lies outside the sentences is written as the source has it."""
    target, sources, at = _Target(run), [], 0
    for (a, b), translation, pairs in zip(sentences, translations, links, strict=True):
        target.copy(at, a)
        sources.append(words_with_offsets(run.text, a, b))
        by_target: dict[int, list[int]] = {}
        for i, j in sorted(pairs):
            if i < len(sources[-1]):  # a link past the sentence's words (a stale alignment) is no link
                by_target.setdefault(j, []).append(i)
        target.sentence(sources[-1], (a, b), translation, by_target)
        at = b
    target.copy(at, len(run.text))
    tags, unplaced = _Tags(run, sentences, sources, links, target).placed()
    return Placed(_written(target.written, tags), unplaced)


class _Tags:
    """Where each tag of the run goes in the output: (output offset, source order, markup)."""

    def __init__(self, run, sentences, sources, links, target: _Target):
        self.run, self.sources, self.target = run, sources, target
        self.flat = [(a, b, s, i) for s, words in enumerate(sources) for i, (a, b) in enumerate(words)]
        self.starts = [w[0] for w in self.flat]
        self.ends = [w[1] for w in self.flat]
        self.sentence_starts = [a for a, _ in sentences]
        self.targets = [{} for _ in sources]  # per sentence: source word -> its target words
        self.aligned: list[set[int]] = [set() for _ in sources]  # per sentence: target words with a link
        for s, pairs in enumerate(links):
            for i, j in pairs:
                if i < len(sources[s]) and j < len(target.words[s]):
                    self.targets[s].setdefault(i, []).append(j)
                    self.aligned[s].add(j)
        self.spans: list[tuple | None] = []

    def placed(self) -> tuple[list[tuple[int, tuple, str]], int]:
        """Each tag as (output offset, its order there, markup). At one offset a tag placed exactly
        keeps its source order; one placed beside a new word goes with the closings first (the
        last opened first) and the openings last, so siblings widened to one word still nest."""
        tags, unplaced = [], 0
        parents = {pair.parent for pair in self.run.pairs}
        for index, pair in enumerate(self.run.pairs):
            touched = self.flat[bisect_right(self.ends, pair.start) : bisect_left(self.starts, pair.end)]
            if pair.start == pair.end or not touched:
                self.spans.append(None)
                at, lost, side = self._atom(pair.start, bool(pair.close))
                unplaced += lost
                if pair.start == pair.end and index not in parents:  # an atom, or an empty pair: one piece
                    tags.append((at, (1, pair.opened), self._spaced(pair, side) + pair.close))
                    continue
                closing, _, end_side = self._atom(pair.end, False)
                empty = pair.start == pair.end  # around atoms alone: in source order, they inside
                tags.append((at, _order(pair, empty or side == "exact", True), pair.open))
                tags.append((closing, _order(pair, empty or end_side == "exact", False), pair.close))
                continue
            span = self._span(pair, touched)
            self.spans.append(span)
            if span is None:
                end = self.target.ends[touched[0][2]]  # its source order: a child stays inside
                tags += [(end, (1, pair.opened), pair.open), (end, (1, pair.closed), pair.close)]
                unplaced += 1
                continue
            (s0, j0), (s1, j1) = span
            opening = self._exact(s0, j0, touched[0], pair.start, True)
            closing = self._exact(s1, j1, touched[-1], pair.end, False)
            start = self.target.words[s0][j0][0] if opening is None else opening
            end = self.target.words[s1][j1][1] if closing is None else closing
            tags.append((start, _order(pair, opening is not None, True), pair.open))
            tags.append((end, _order(pair, closing is not None, False), pair.close))
        return tags, unplaced

    def _span(self, pair, touched):
        aligned = [(s, j) for _, _, s, i in touched for j in self.targets[s].get(i, ())]
        if not aligned:
            return None
        (s0, j0), last = min(aligned), max(aligned)
        span = ((s0, self._widened(s0, j0)), last)
        parent = self.spans[pair.parent] if pair.parent is not None else None
        if parent is not None:
            (start, end), (low, high) = span, parent
            start = min(max(start, low), high)
            span = (start, max(min(end, high), start))
        return span

    def _widened(self, s: int, j: int) -> int:
        """A pair's first target word j of sentence s, moved left over the words with a letter or
        digit that no source word is aligned to; word j itself where it copies a source word."""
        if j in self.target.exact[s]:
            return j
        while j > 0 and j - 1 not in self.aligned[s] and self.target.lettered[s][j - 1]:
            j -= 1
        return j

    def _exact(self, s: int, j: int, word, o: int, opening: bool) -> int | None:
        """Where a pair's boundary at source offset o goes when target word (s, j) copies the
        source word `word` it is anchored on: inside the word at the same character, or in the
        spaces beside it where those are copied too."""
        if s != word[2] or self.target.exact[s].get(j) != word[3]:
            return None
        (start, end), (a, b) = self.target.words[s][j], word[:2]
        if opening:
            if o >= a:
                return start + o - a
            copied = self.target.out_of.get(o)
            return copied if copied == start - (a - o) else None
        if o <= b:
            return end - (b - o)
        copied = self.target.out_of.get(o - 1)
        return copied + 1 if copied == end + (o - b) - 1 else None

    def _atom(self, o: int, opening: bool) -> tuple[int, int, str]:
        """(output offset, 1 if no aligned word beside it placed it, where it went: "exact" as in
        the source, "after" or "before" a target word, "inside" a word's) of an atom, or a boundary
        of a pair around no word, at source offset o."""
        exact = self.target.bound(o, before=opening)
        if exact is not None:
            return exact, 0, "exact"
        s = max(bisect_right(self.sentence_starts, o) - 1, 0)
        words, targets, placed = self.sources[s], self.targets[s], self.target.words[s]
        k = bisect_right(words, (o, len(self.run.text))) - 1  # the last word starting at or before o
        if k >= 0 and words[k][0] < o < words[k][1] and targets.get(k):  # inside it: with its word
            return placed[max(targets[k])][1], 0, "inside"
        previous = k - 1 if k >= 0 and words[k][0] == o else k
        if previous >= 0 and targets.get(previous):
            return placed[max(targets[previous])][1], 0, "after"
        following = previous + 1
        if following < len(words) and targets.get(following):
            return placed[min(targets[following])][0], 0, "before"
        if previous < 0 and placed:
            return placed[0][0], 0, "before"
        return self.target.ends[s], 1, "after"

    def _spaced(self, pair, side: str) -> str:
        """An atom placed beside a new word, set apart from it by a space where the source had one
        on that side."""
        text, o = self.run.text, pair.start
        if pair.close or side in ("exact", "inside"):
            return pair.open
        if side == "after":
            return (" " if o > 0 and text[o - 1].isspace() else "") + pair.open
        return pair.open + (" " if o < len(text) and text[o].isspace() else "")


def _order(pair, exact: bool, opening: bool) -> tuple[int, int]:
    """Where a pair's tag goes among those at its offset (`_Tags.placed`)."""
    if exact:
        return 1, pair.opened if opening else pair.closed
    return (2, pair.opened) if opening else (0, -pair.opened)


def _written(written: list[str], tags: list[tuple[int, tuple, str]]) -> str:
    out, k = [], 0
    tags.sort(key=lambda tag: (tag[0], tag[1]))
    for at, piece in enumerate(written):
        while k < len(tags) and tags[k][0] <= at:
            out.append(tags[k][2])
            k += 1
        out.append(piece)
    out += [markup for _, _, markup in tags[k:]]
    return "".join(out)
