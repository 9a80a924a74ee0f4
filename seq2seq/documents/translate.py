"""A document read and written back: its format (formats.py) gives the runs of text to translate,
each with its inline markup (markup.py); every run is cut into sentences (sentences.py, `prepare`),
which a request translates together (request/: length-sorted batches, as lines are), and each run
is put back with the spacing between its sentences and its markup placed through the alignment of
each sentence with its translation (`written`).
"""

from dataclasses import dataclass, field

from seq2seq.alignment.methods import Method
from seq2seq.documents import formats
from seq2seq.documents.markup import Run, place
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
    layout = formats.parse(text, format)
    most = model.cfg.max_positions - 1  # the source pieces the model reads, EOS aside

    def fits(sentence: str) -> bool:
        return len(tokenizer.encode([sentence])[0]) <= most

    cuts, long = [], 0
    for run in layout.runs:
        spans, cut = fitted(run.text, split(run.text, lang), fits)
        cuts.append(spans)
        long += cut
    sentences = [run.text[a:b] for run, spans in zip(layout.runs, cuts, strict=True) for a, b in spans]
    return Prepared(layout, cuts, sentences, long)


def written(
    model, tokenizer, prepared: Prepared, read: list[str], found, result, method=None
) -> TranslatedDocument:
    """The document written back from its sentences' translations: `read`, the sentences as the
    model read them, `found` its Translations of them and `result` the same as printed (in each
    sentence's case); each run put back with the spacing between its sentences and its markup
    placed through the alignment `method` of what the model read and wrote (default:
    `seq2seq.align`'s)."""
    method = method or Method()
    layout, cuts, sentences = prepared.layout, prepared.cuts, prepared.sentences
    links = _links(model, tokenizer, layout.runs, cuts, read, found.best, method)
    out, unplaced, at = [], 0, 0
    for run, spans in zip(layout.runs, cuts, strict=True):
        n = len(spans)
        if n == 0:  # spaces alone: kept as they are
            out.append(run.text)
            continue
        spacing = [run.text[spans[k][1] : spans[k + 1][0]] for k in range(n - 1)] + [run.text[spans[-1][1] :]]
        placed = place(run, spans, result.best[at : at + n], links[at : at + n], spacing)
        out.append(run.text[: spans[0][0]] + placed.text)
        unplaced += placed.unplaced
        at += n
    done = TranslatedDocument(
        layout.render(out), len(sentences), unplaced, prepared.tags, result.truncated, prepared.long
    )
    done.sources, done.result = read, found  # what the model read and wrote, for its maps
    done.notices = _notices(done, method, model.cfg.max_positions - 1)
    return done


def _notices(done: TranslatedDocument, method, most: int) -> list[str]:
    """What the user is told of a translated document: tags kept at a sentence's end, tags placed
    without an alignment layer, sentences translated in parts or cut."""
    notices = []
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


def _links(model, tokenizer, runs: list[Run], cuts, sentences: list[str], translations: list[str], method):
    """Each sentence's links (source word, target word), for the sentences of runs with markup
    (the others need none: no alignment is computed for them)."""
    from seq2seq.alignment.api import align

    rule = placing_rule(method)
    wanted, at = [], 0
    for run, spans in zip(runs, cuts, strict=True):
        if run.pairs:
            wanted += range(at, at + len(spans))
        at += len(spans)
    links: list[set] = [set() for _ in sentences]
    todo = [i for i in wanted if translations[i].strip()]
    if todo:
        try:
            found = align(
                model,
                tokenizer,
                [sentences[i] for i in todo],
                [translations[i] for i in todo],
                method,
                *rule,
            )
        except Seq2SeqError:
            return links  # a sentence too long to align: its tags go to its end
        for i, alignment in zip(todo, found, strict=True):
            links[i] = alignment.links
    return links
