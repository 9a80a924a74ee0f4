"""`seq2seq.align`: word alignments of sentence pairs, from the model's cross-attention or from
attribution, for given translations (forced through the decoder) or for the model's own.

>>> result = seq2seq.align(model, tokenizer, ["A dog runs ."], ["Un chien court ."])
>>> result[0].pharaoh()  # "0-0 1-1 2-2 3-3": source word first, 0-based
"""

from dataclasses import dataclass, replace

import numpy as np

from seq2seq.alignment.extract import extract, word_scores
from seq2seq.alignment.methods import Method, all_heads, piece_scores
from seq2seq.alignment.pharaoh import Link, Links
from seq2seq.alignment.score import AlignmentScore, score
from seq2seq.alignment.words import piece_words
from seq2seq.data.special import EOS_ID
from seq2seq.data.tokenizer import is_blank
from seq2seq.decoding.attention import AttentionMaps, attention_of
from seq2seq.decoding.options import DecodeOptions
from seq2seq.decoding.search import translate
from seq2seq.errors import FieldError, Seq2SeqError
from seq2seq.models.protocol import Seq2SeqModel


@dataclass
class Alignment:
    """One pair's words, its links (source word, target word) and the word scores they came from."""

    source_words: list[str]
    target_words: list[str]
    links: set[Link]
    scores: np.ndarray  # (target words, source words)
    method: str  # what the scores are, in words
    maps: AttentionMaps | None = None  # the pair's attention (None for a blank line)
    ids: tuple[list[int], list[int]] = ([], [])  # source ids (EOS included), output ids (no EOS)
    # (S,) and (T,) the word of each source and output piece (EOS excluded)
    words_of_pieces: tuple[np.ndarray, np.ndarray] = (np.zeros(0, dtype=np.int64),) * 2

    def pharaoh(self) -> str:
        return Links.of(self.links).pharaoh()


def align(
    model: Seq2SeqModel,
    tokenizer,
    sources: list[str],
    targets: list[str] | None = None,
    method: Method = Method(),
    rule: str = "argmax",
    threshold: float = 0.5,
    options: DecodeOptions | None = None,
    sides: tuple[str, str] = ("source", "target"),
) -> list[Alignment]:
    """One `Alignment` per source line, in order. Words are the whitespace tokens of the lines;
    without `targets` the model's translations (searched with `options`) are aligned. A line
    longer than the model reads is refused, not cut: its last words could have no links, and a
    gold link to them would count as missed. `sides`: what the user calls the sources and the
    targets, for that error (a reverse run aligns the pairs turned round)."""
    options = options or DecodeOptions()
    forced = targets is not None
    if forced and len(targets) != len(sources):
        raise Seq2SeqError(f"{len(sources)} source lines but {len(targets)} target lines; they must pair up")
    for n, source in enumerate(sources, start=1):
        if forced and (is_blank(source) != is_blank(targets[n - 1])):
            side = "source" if is_blank(source) else "target"
            raise Seq2SeqError(f"line {n}: the {side} is blank and the other side is not")
    todo = [i for i, source in enumerate(sources) if not is_blank(source)]
    texts = [sources[i] for i in todo]
    encoded = tokenizer.encode(texts)
    _check_lengths(model, encoded, todo, sides[0])
    if forced:
        outputs = [targets[i] for i in todo]
        out_ids = tokenizer.encode(outputs, "target")
        _check_lengths(model, out_ids, todo, sides[1])
    else:
        result = translate(model, tokenizer, texts, options)
        outputs, out_ids = result.best, result.tokens
    src_ids = [[*ids, EOS_ID] for ids in encoded]
    maps = attention_of(model, tokenizer, texts, outputs, out_ids, options.batch_size, src_ids)
    found = {
        i: _one(method, rule, threshold, model, m, s, t, i + 1)
        for i, m, s, t in zip(todo, maps, src_ids, out_ids, strict=True)
    }
    empty = np.zeros((0, 0))
    return [found.get(i) or Alignment([], [], set(), empty, method.describe()) for i in range(len(sources))]


# How two directions' word scores (f: the target word's look at the source word, r: the source
# word's at the target word, both in [0, 1]) become one: their mean keeps a link either direction
# holds strongly; the harmonic mean and the product need both (agreement, as Mask-Align asks of
# its two directions), the product scaled down most.
COMBINATIONS = {
    "mean": lambda f, r: (f + r) / 2,
    "harmonic": lambda f, r: np.divide(2 * f * r, f + r, out=np.zeros_like(f), where=(f + r) > 0),
    "product": lambda f, r: f * r,
}


def symmetrized(
    forward: list[Alignment],
    reverse: list[Alignment],
    rule: str = "intersect",
    threshold: float = 0.5,
    combine: str = "mean",
) -> list[Alignment]:
    """Each pair aligned by two models that translate opposite ways, as eflomal's two directions
    are: `forward` aligns the pairs (source, target), `reverse` the same pairs turned round
    (target, source). A pair's word scores are the forward scores and the reverse ones turned
    round (how much the target word looks at the source word, and the source word at the target
    word) combined by `combine` (COMBINATIONS), and `rule` extracts its links (extract.py). The
    result keeps the forward alignment's maps, which the pictures draw the links over."""
    if combine not in COMBINATIONS:
        raise FieldError("combine", f"must be one of {', '.join(COMBINATIONS)}, not {combine!r}")
    if len(forward) != len(reverse):
        raise Seq2SeqError(f"{len(forward)} pairs one way but {len(reverse)} the other")
    out = []
    for number, (f, r) in enumerate(zip(forward, reverse, strict=True), start=1):
        if not (f.source_words and f.target_words):  # a blank line, or a translation to nothing
            out.append(f)
            continue
        same_words = (f.source_words, f.target_words) == (r.target_words, r.source_words)
        if not same_words or f.scores.shape != r.scores.T.shape:
            raise Seq2SeqError(f"line {number}: the two directions read different words")
        scores = COMBINATIONS[combine](f.scores, r.scores.T)  # (n target words, m source words)
        method = f"{combine} of {f.method} and the reverse {r.method}"
        out.append(replace(f, links=extract(scores, rule, threshold), scores=scores, method=method))
    return out


def _check_lengths(model: Seq2SeqModel, out_ids: list[list[int]], lines: list[int], side: str) -> None:
    limit = model.cfg.max_positions - 1
    for i, ids in zip(lines, out_ids, strict=True):
        if len(ids) > limit:
            raise Seq2SeqError(f"{side} line {i + 1} has {len(ids)} pieces; the model's limit is {limit}")


def _one(method, rule, threshold, model, maps: AttentionMaps, src, tgt, number: int) -> Alignment:
    sw, tw = pair_words(maps, number)
    scores = word_scores(piece_scores(method, maps, model, src, tgt), sw, tw)
    return Alignment(
        maps.source_text.split(),
        maps.translation.split(),
        extract(scores, rule, threshold),
        scores,
        method.describe(maps),
        maps,
        (src, tgt),
        (sw, tw),
    )


def pair_words(maps: AttentionMaps, number: int) -> tuple[np.ndarray, np.ndarray]:
    """(S,) and (T,) the word of each source and target piece (EOS excluded); a one-line error
    when the tokenizer's words are not the line's whitespace tokens."""
    sw, tw = piece_words(maps.source[:-1]), piece_words(maps.target[:-1])
    for side, text, pieces in (("source", maps.source_text, sw), ("target", maps.translation, tw)):
        counted, words = int(pieces.max(initial=-1)) + 1, len(text.split())
        if counted != words:
            raise Seq2SeqError(
                f"line {number}: the tokenizer reads {counted} {side} words where whitespace gives {words}"
            )
    return sw, tw


def head_scores(
    model: Seq2SeqModel,
    tokenizer,
    sources: list[str],
    targets: list[str] | None,
    gold: list[Links],
    shifted: bool,
    rule: str = "argmax",
    threshold: float = 0.5,
    options: DecodeOptions | None = None,
) -> tuple[dict[tuple[int, int | None], AlignmentScore], list[Alignment]]:
    """{(layer, head, None for the mean of heads): AlignmentScore} of every layer and head's
    attention (shifted or not) against `gold`, and the pairs' alignments (their words)."""
    first = align(
        model,
        tokenizer,
        sources,
        targets,
        Method("shift" if shifted else "attention"),
        rule,
        threshold,
        options,
    )
    found: dict[tuple[int, int | None], list[set[Link]]] = {}
    for number, a in enumerate(first, start=1):
        if a.maps is None:  # a blank pair: no links in any head
            for links in found.values():
                links.append(set())
            continue
        for key, pieces in all_heads(a.maps, shifted).items():
            links = extract(word_scores(pieces, *a.words_of_pieces), rule, threshold)
            found.setdefault(key, [set()] * (number - 1)).append(links)
    return {key: score(links, gold) for key, links in found.items()}, first


def head_name(shifted: bool, layer: int, head: int | None) -> str:
    """How a row of the heads table is named: "attention layer 2 head 1", "... mean of heads"."""
    return f"{'shift' if shifted else 'attention'} layer {layer} " + (
        "mean of heads" if head is None else f"head {head}"
    )
