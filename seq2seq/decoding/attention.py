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
from seq2seq.decoding.search import DecodeOptions, Translations, source_ids, translate
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

    def layers(self, kind: str) -> int:
        return self.weights[kind].size(0)

    def heads(self, kind: str) -> int:
        return self.weights[kind].size(1)

    def map(self, kind: str, layer: int | None = None, head: int | None = None) -> Tensor:
        """(rows, cols) for one layer (1-based; default the last) and one head (1-based; default
        the mean over heads)."""
        check_choice(self, layer, head)
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

    def _repr_html_(self) -> str:
        """In a notebook: the offline explorer of these maps, inline (no network)."""
        from seq2seq.views.explorer import notebook, page, sentence_json  # a display, never at import

        return notebook(page([sentence_json(self)], self.source_text))


def check_choice(maps: AttentionMaps, layer: int | None, head: int | None) -> None:
    """A one-line error naming the valid range when --layer or --head is out of it."""
    for kind in maps.weights:
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
) -> AttentionMaps:
    """The maps of one sentence: of the model's own translation (searched with `options`), or of a
    given `translation` (forced decoding: what would the model attend to for this output?)."""
    translations = None if translation is None else [translation]
    return attention_batch(model, tokenizer, [source], translations, options)[0]


def attention_batch(
    model: Seq2SeqModel,
    tokenizer,
    sources: list[str],
    translations: list[str] | None = None,
    options: DecodeOptions | None = None,
) -> list[AttentionMaps]:
    """`attention` for many sentences, decoded and teacher-forced in batches."""
    options = options or DecodeOptions()
    if translations is None:
        result = translate(model, tokenizer, sources, options)
        return attention_of(model, tokenizer, sources, result.best, result.tokens, options.batch_size)
    if len(translations) != len(sources):
        raise Seq2SeqError(f"{len(sources)} sources but {len(translations)} translations")
    targets = tokenizer.encode(translations)
    return attention_of(model, tokenizer, sources, translations, targets, options.batch_size)


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
    model: Seq2SeqModel, tokenizer, lines: list[str], result: Translations, batch_size: int = 64
) -> dict[int, AttentionMaps]:
    """Line number (from 1) -> the maps of the translation `translate` chose for it, for every
    non-blank line."""
    todo = [i for i, hyps in enumerate(result.nbest) if hyps]  # the lines translate did not leave blank
    maps = attention_of(
        model,
        tokenizer,
        [lines[i] for i in todo],
        [result.best[i] for i in todo],
        [result.tokens[i] for i in todo],
        batch_size,
    )
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
