"""A document read and written back: its format (formats.py) gives the runs of text to translate,
each with its inline markup (markup.py); every run is cut into sentences (sentences.py, `prepare`),
which a request translates together (request/: length-sorted batches, as lines are), and each run
is put back with the spacing between its sentences and its markup placed through the alignment of
each sentence with its translation (`written`).
"""

import re
from contextlib import contextmanager
from dataclasses import dataclass, field

from seq2seq.alignment.methods import Method
from seq2seq.documents import formats
from seq2seq.documents.markup import Run
from seq2seq.documents.placing import place
from seq2seq.documents.sentences import fitted, split
from seq2seq.errors import Seq2SeqError


@dataclass
class TranslatedDocument:
    text: str
    sentences: int  # translated
    unplaced: int = 0  # tags kept at their sentence's end: nothing they enclosed was aligned
    tags: int = 0  # inline tag pairs placed through the alignment
    truncated: int = 0  # parts still longer than the model reads, cut to it (none: `fitted` halves)
    long: int = 0  # sentences longer than the model reads, translated in parts (sentences.fitted)
    notices: list[str] = field(default_factory=list)
    unaligned: list[int] = field(default_factory=list)  # sentences (from 0) that could not be aligned
    left: list[int] = field(default_factory=list)  # lines of text blocks the reader left as they are
    sources: list[str] = field(default_factory=list)  # the sentences translated, in order
    result: object = None  # their Translations (decoding/search.py), for their maps


@dataclass
class Prepared:
    """A document read and cut: its layout, each run's sentence spans, and the sentences."""

    layout: object  # formats.Layout
    cuts: list[list[tuple[int, int]]]
    sentences: list[str]
    long: int  # sentences longer than the model reads, cut into parts (sentences.fitted)

    @property
    def tags(self) -> int:
        """The inline tag pairs to place through the alignment."""
        return sum(len(run.pairs) for run in self.layout.runs)


def prepare(model, tokenizer, text: str, format: str, lang: str = "en") -> Prepared:
    """`text` of `format` parsed (a malformed document is one line naming its fault) and cut into
    the sentences the model translates, each within the source the model reads."""
    most = model.cfg.max_positions - 1  # the source pieces the model reads, EOS aside
    return prepared(text, format, lang, lambda sentence: len(tokenizer.encode([sentence])[0]) <= most)


def prepared(text: str, format: str, lang: str = "en", fits=lambda sentence: True) -> Prepared:
    """`text` read and cut into sentences as they stand in it (their line breaks and spaces too:
    the tokenizer reads any run of spaces as one), each one `fits`, else cut into parts."""
    layout = formats.parse(text, format)
    cuts, long = [], 0
    for run, line in zip(layout.runs, layout.lines, strict=True):
        with _at_block(line, "cut into sentences"):
            # the splitter sees every space as a space (a paragraph's line breaks are no sentence ends)
            spans, cut = fitted(run.text, split(SPACE.sub(" ", run.text), lang), fits)
        cuts.append(spans)
        long += cut
    sentences = [run.text[a:b] for run, spans in zip(layout.runs, cuts, strict=True) for a, b in spans]
    return Prepared(layout, cuts, sentences, long)


SPACE = re.compile(r"\s")  # one character for one: the offsets stay


@contextmanager
def _at_block(line: int, what: str):
    """A fault in one block of a document named by the line it starts on, in one line."""
    try:
        yield
    except Seq2SeqError:
        raise
    except (ValueError, IndexError, KeyError, RecursionError) as e:
        raise Seq2SeqError(f"the block at line {line} could not be {what}: {type(e).__name__}: {e}") from None


def rendered(prepared: Prepared, translations: list[str], links: list[set]) -> tuple[str, int]:
    """The document written back from its sentences' `translations` and their `links` (source
    word, target word), and the count of tags no aligned word placed (placing.py)."""
    out, unplaced, at = [], 0, 0
    layout = prepared.layout
    for run, spans, line in zip(layout.runs, prepared.cuts, layout.lines, strict=True):
        n = len(spans)
        with _at_block(line, "written back"):
            placed = place(run, spans, translations[at : at + n], links[at : at + n])
        out.append(placed.text)
        unplaced += placed.unplaced
        at += n
    return prepared.layout.render(out), unplaced


def round_trip(text: str, format: str, lang: str = "en") -> str:
    """The document read and written back with each sentence translated as itself and each word
    aligned to itself (an identity translator): `text` again, byte for byte, when reading and
    writing lose nothing (scripts/round_trip.py, tests/test_round_trip.py)."""
    done = prepared(text, format, lang)
    identity = [{(i, i) for i in range(len(s.split()))} for s in done.sentences]
    return rendered(done, done.sentences, identity)[0]


def written(
    model, tokenizer, prepared: Prepared, read: list[str], found, result, method=None
) -> TranslatedDocument:
    """The document written back from its sentences' translations: `read`, the sentences as the
    model read them, `found` its Translations of them and `result` the same as printed (in each
    sentence's case); its markup placed through the alignment `method` of what the model read and
    wrote (default: `seq2seq.align`'s)."""
    method = method or Method()
    links, unaligned = _links(model, tokenizer, prepared.layout.runs, prepared.cuts, read, found.best, method)
    text, unplaced = rendered(prepared, result.best, links)
    done = TranslatedDocument(
        text, len(prepared.sentences), unplaced, prepared.tags, result.truncated, prepared.long
    )
    done.unaligned, done.left = unaligned, prepared.layout.left
    done.sources, done.result = read, found  # what the model read and wrote, for its maps
    done.notices = _notices(done, method, model.cfg.max_positions - 1)
    return done


def _notices(done: TranslatedDocument, method, most: int) -> list[str]:
    """What the user is told of a translated document: tags kept at a sentence's end, tags placed
    without an alignment layer, sentences translated in parts or cut."""
    notices = []
    if done.unaligned:
        numbers = ", ".join(str(i + 1) for i in done.unaligned[:5]) + (
            ", ..." if len(done.unaligned) > 5 else ""
        )
        notices.append(
            f"{len(done.unaligned)} sentences could not be aligned (sentence {numbers}: a word the "
            "tokenizer reads apart from its spaces): their tags were kept at their ends"
        )
    if done.left:
        lines = ", ".join(map(str, done.left[:5])) + (", ..." if len(done.left) > 5 else "")
        notices.append(
            f"{len(done.left)} blocks were left untranslated (from line {lines}): their source could "
            "not be followed token by token"
        )
    if done.unplaced:
        notices.append(f"{done.unplaced} tags enclosed no aligned word and were kept at their sentence's end")
    if done.tags and method.name != "layer":
        notices.append(
            f"{done.tags} tags placed through {method.describe()}; an alignment layer (`seq2seq "
            "align-train` on the run) places them better (docs/documents.md)"
        )
    if done.long:
        notices.append(
            f"{done.long} sentences were longer than the model reads ({most} pieces): each was "
            "translated in parts, cut after a semicolon, a colon or a comma, else at a space"
        )
    if done.truncated:
        notices.append(f"{done.truncated} sentences were longer than the model reads and were cut")
    return notices


def placing_rule(method) -> tuple[str, float]:
    """How links are drawn from `method`'s scores to place tags: an alignment layer's by its own
    rule, `mass` at the threshold chosen for it; any other reading's by PLACING_RULE."""
    from seq2seq.alignment.runs import PLACING_RULE

    return ("mass", method.aligner.threshold) if method.name == "layer" else (PLACING_RULE, 0.5)


ALIGNED_AT_ONCE = 32  # sentences aligned in one pass (by length): their maps dropped before the next


def _links(model, tokenizer, runs: list[Run], cuts, sentences: list[str], translations: list[str], method):
    """Each sentence's links (source word, target word), for the sentences of runs with markup
    (the others need none: no alignment is computed for them), and the sentences that could not
    be aligned (their tags go to their ends). Aligned a batch at a time, only the links kept."""
    rule = placing_rule(method)
    wanted, at = [], 0
    for run, spans in zip(runs, cuts, strict=True):
        if run.pairs:
            wanted += range(at, at + len(spans))
        at += len(spans)
    links: list[set] = [set() for _ in sentences]
    todo = [i for i in wanted if translations[i].strip()]
    todo.sort(key=lambda i: len(sentences[i]))  # batches of like lengths: less padding
    failed: list[int] = []
    for start in range(0, len(todo), ALIGNED_AT_ONCE):
        batch = todo[start : start + ALIGNED_AT_ONCE]
        _aligned(model, tokenizer, batch, (sentences, translations), (method, rule), links, failed)
    return links, failed


def _aligned(model, tokenizer, todo: list[int], pairs, how, links: list[set], failed: list[int]) -> None:
    """`links` of the sentences `todo`; a batch one sentence of which cannot be aligned (a word
    the tokenizer reads apart from whitespace: a zero-width space, a lone direction mark) is
    halved until that sentence stands alone, and it is listed in `failed`."""
    from seq2seq.alignment.api import align

    (sentences, translations), (method, rule) = pairs, how
    try:
        found = align(
            model, tokenizer, [sentences[i] for i in todo], [translations[i] for i in todo], method, *rule
        )
    except Seq2SeqError:
        if len(todo) == 1:
            failed += todo
            return
        half = len(todo) // 2
        for part in (todo[:half], todo[half:]):
            _aligned(model, tokenizer, part, pairs, how, links, failed)
        return
    for i, alignment in zip(todo, found, strict=True):
        links[i] = alignment.links
