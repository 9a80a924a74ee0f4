"""Attention maps of translations: what each output piece attended to, ready to draw or to study.

The weights come from the model's own code: after search, one teacher-forced pass over the chosen
output (`model.attention`), so the maps are exactly what the decoder computed for that output and
normal decoding never keeps them. Any architecture that implements `attention(src, tgt_in)` can
be drawn; the views only see an `AttentionMaps` (weights + piece labels).

Shapes: L layers, H heads, S source pieces (EOS included), T output pieces (EOS included).
"""

from dataclasses import dataclass

import torch
from torch import Tensor

from seq2seq.data.batch import pad
from seq2seq.data.special import BOS_ID, EOS_ID
from seq2seq.decoding.alternatives import Position, alternatives_of
from seq2seq.decoding.search import DecodeOptions, Translations, source_ids, translate
from seq2seq.decoding.trace import best_nodes, with_pieces
from seq2seq.errors import Seq2SeqError
from seq2seq.models.protocol import Seq2SeqModel

# What each kind is called, and which pieces label its rows and its columns.
KINDS = {
    "encoder": ("encoder self-attention", "source", "source"),
    "decoder": ("decoder masked self-attention", "target", "target_inputs"),
    "cross": ("cross-attention", "target", "source"),
}


@dataclass
class AttentionMaps:
    """One sentence's attention: weights (L, H, rows, cols) by kind, and the labels."""

    source_text: str
    translation: str
    source: list[str]  # source pieces + "</s>"
    target: list[str]  # output pieces + "</s>": each row is the position that produced this piece
    target_inputs: list[str]  # "<s>" + output pieces: what the decoder read at each position
    weights: dict[str, Tensor]  # a subset of KINDS; a Transformer has all three
    alternatives: list[Position] | None = None  # per row of `target`, when asked (alternatives.py)
    forced: int = 0  # how many leading output pieces a prefix forced
    # when asked: {"beam": K, "nodes": the beam's nodes (trace.py) with their pieces, "nbest": the
    # ids of the K best finished nodes, best first}
    beam: dict | None = None

    def layers(self, kind: str) -> int:
        return self.weights[kind].size(0)

    def heads(self, kind: str) -> int:
        return self.weights[kind].size(1)

    def map(self, kind: str, layer: int | None = None, head: int | None = None) -> Tensor:
        """(rows, cols) for one layer (1-based; default the last) and one head (1-based; default
        the mean over heads)."""
        check_choice(self, layer, head, (kind,))
        weights = self.weights[kind][(layer or self.layers(kind)) - 1]  # (H, rows, cols)
        return weights.mean(0) if head is None else weights[head - 1]

    def describe(self, kind: str, layer: int | None = None, head: int | None = None) -> str:
        """What `map(kind, layer, head)` shows, in words: "cross-attention, layer 3 of 3, ..."."""
        n_layers, n_heads = self.layers(kind), self.heads(kind)
        heads = f"mean of {n_heads} heads" if head is None and n_heads > 1 else f"head {head or 1}"
        return f"{KINDS[kind][0]}, layer {layer or n_layers} of {n_layers}, {heads}"

    def labels(self, kind: str) -> tuple[list[str], list[str]]:
        _, rows, cols = KINDS[kind]
        return getattr(self, rows), getattr(self, cols)


def check_choice(
    maps: AttentionMaps, layer: int | None, head: int | None, kinds: tuple[str, ...] | None = None
) -> None:
    """A one-line error naming the valid range when --layer or --head is out of it, for each of
    `kinds` that is shown (default: every kind the maps hold)."""
    for kind in kinds or tuple(maps.weights):
        for name, value, count in (("layer", layer, maps.layers(kind)), ("head", head, maps.heads(kind))):
            if value is not None and not 1 <= value <= count:
                title = KINDS[kind][0]
                raise Seq2SeqError(f"--{name} must be between 1 and {count} (the {title}'s {name}s)")


def attention(
    model: Seq2SeqModel,
    tokenizer,
    source: str,
    translation: str | None = None,
    options: DecodeOptions | None = None,
    prefix: str | None = None,
    alternatives: int = 0,
    trace: bool = False,
) -> AttentionMaps:
    """The maps of one sentence: of the model's own translation (searched with `options`, starting
    with `prefix`), or of a given `translation` (forced decoding: what would the model attend to
    for this output?); with the alternatives at each position and the beam (`attention_batch`)."""
    given, prefixes = (None if x is None else [x] for x in (translation, prefix))
    return attention_batch(model, tokenizer, [source], given, options, prefixes, alternatives, trace)[0]


def attention_batch(
    model: Seq2SeqModel,
    tokenizer,
    sources: list[str],
    translations: list[str] | None = None,
    options: DecodeOptions | None = None,
    prefixes: list[str] | None = None,
    alternatives: int = 0,
    trace: bool = False,
) -> list[AttentionMaps]:
    """`attention` for many sentences, decoded and teacher-forced in batches. The model's own
    translations may start with `prefixes` (one per sentence) and keep their beam (`trace`);
    `alternatives` > 0 adds that many alternatives at every output position."""
    options = options or DecodeOptions()
    if translations is None:
        result = translate(model, tokenizer, sources, options, prefixes, trace)
        maps = attention_of(model, tokenizer, sources, result.best, result.tokens, options.batch_size)
        return steered(
            maps, model, tokenizer, sources, result.tokens, options, prefixes, result.traces, alternatives
        )
    if len(translations) != len(sources):
        raise Seq2SeqError(f"{len(sources)} sources but {len(translations)} translations")
    targets = tokenizer.encode(translations, "target")
    maps = attention_of(model, tokenizer, sources, translations, targets, options.batch_size)
    return steered(maps, model, tokenizer, sources, targets, options, alternatives=alternatives)


def steered(
    maps: list[AttentionMaps],
    model: Seq2SeqModel,
    tokenizer,
    sources: list[str],
    targets: list[list[int]],
    options: DecodeOptions,
    prefixes: list[str] | None = None,
    traces: list[list[dict]] | None = None,
    alternatives: int = 0,
) -> list[AttentionMaps]:
    """The maps with what a page draws of the search that made them, in place: how many pieces
    the prefixes forced, the beam's nodes, and `alternatives` at each output position."""
    if prefixes is not None:
        for m, ids in zip(maps, tokenizer.encode(prefixes, "target"), strict=True):
            m.forced = len(ids)
    for m, nodes in zip(maps, traces, strict=True) if traces is not None else ():
        nodes = with_pieces(tokenizer, nodes)
        m.beam = {"beam": options.beam, "nodes": nodes, "nbest": best_nodes(nodes, options.beam)}
    if alternatives > 0:
        src_ids, _ = source_ids(model, tokenizer, sources)
        cut = [t[: model.cfg.max_positions - 1] for t in targets]
        found = alternatives_of(model, tokenizer, src_ids, cut, alternatives, options.batch_size)
        for m, positions in zip(maps, found, strict=True):
            m.alternatives = positions
    return maps


@torch.inference_mode()
def attention_of(
    model: Seq2SeqModel,
    tokenizer,
    sources: list[str],
    translations: list[str],
    targets: list[list[int]],
    batch_size: int = 64,
    src_ids: list[list[int]] | None = None,
) -> list[AttentionMaps]:
    """The maps of given output ids (EOS excluded), e.g. the hypotheses a search chose; `src_ids`:
    the sources as `source_ids` gives them, where the caller has them already."""
    targets = [t[: model.cfg.max_positions - 1] for t in targets]  # room for BOS
    if src_ids is None:
        src_ids, _ = source_ids(model, tokenizer, sources)
    pieces = tokenizer.id_pieces
    maps = []
    for start in range(0, len(sources), batch_size):
        chunk = slice(start, start + batch_size)
        weights = _teacher_forced(model, src_ids[chunk], targets[chunk])
        for source, translation, s, t, w in zip(
            sources[chunk], translations[chunk], src_ids[chunk], targets[chunk], weights, strict=True
        ):
            maps.append(
                AttentionMaps(source, translation, pieces(s), pieces([*t, EOS_ID]), pieces([BOS_ID, *t]), w)
            )
    return maps


def maps_of_translations(
    model: Seq2SeqModel,
    tokenizer,
    lines: list[str],
    result: Translations,
    options: DecodeOptions,
    prefixes: list[str] | None = None,
    alternatives: int = 0,
) -> dict[int, AttentionMaps]:
    """Line number (from 1) -> the maps of the translation `translate` chose for it, for every
    non-blank line; `steered` with the prefixes, the result's traces and `alternatives`."""
    todo = [i for i, hyps in enumerate(result.nbest) if hyps]  # the lines translate did not leave blank
    sources, tokens = [lines[i] for i in todo], [result.tokens[i] for i in todo]
    maps = attention_of(model, tokenizer, sources, [result.best[i] for i in todo], tokens, options.batch_size)
    picked = [None if x is None else [x[i] for i in todo] for x in (prefixes, result.traces)]
    steered(maps, model, tokenizer, sources, tokens, options, *picked, alternatives)
    return {i + 1: m for i, m in zip(todo, maps, strict=True)}


def _teacher_forced(
    model: Seq2SeqModel, src_ids: list[list[int]], targets: list[list[int]]
) -> list[dict[str, Tensor]]:
    """One pass over a padded batch; each sentence's weights cut back to its own rows and columns."""
    device = next(model.parameters()).device
    src = pad(src_ids).to(device)
    tgt_in = pad([[BOS_ID, *t] for t in targets]).to(device)
    weights = {kind: w.float().cpu() for kind, w in model.attention(src, tgt_in).items()}
    out = []
    for i, (s, t) in enumerate(zip(src_ids, targets, strict=True)):
        size = {"source": len(s), "target": len(t) + 1, "target_inputs": len(t) + 1}
        one = {}
        for kind, w in weights.items():
            _, rows, cols = KINDS[kind]
            one[kind] = w[i, :, :, : size[rows], : size[cols]].clone()  # (L, H, rows, cols)
        out.append(one)
    return out


def cross_layers(model: Seq2SeqModel) -> int:
    """How many layers of cross-attention the model has (the RNN's one alignment: one), read from
    the maps of a one-piece pass."""
    with torch.inference_mode():
        (weights,) = _teacher_forced(model, [[EOS_ID]], [[]])
    return weights["cross"].shape[0]
