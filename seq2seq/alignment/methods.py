"""Alignment methods: each turns one sentence pair into a (target pieces, source pieces) score
matrix, EOS excluded, which `extract.py` merges into words and links. The methods never ask
which architecture they hold: the RNN's one alignment is its cross-attention's one layer and head.

    attention    the cross-attention of a layer (default the last) and a head (default their
                 mean), at the position that produced each target piece
    shift        the same weights one step later, where the piece is the decoder's input
                 ("Shift-Att", Chen et al. 2020): row t + 1 for piece t
    gradxinput   gradient x input over the source embeddings (attribution.py)
    ig           integrated gradients, `steps` steps from the zero embedding
    layer        the run's alignment layer (layer.py, trained by `align-train`): each target
                 piece's mass on each source piece, NULL's share left out
"""

from dataclasses import dataclass, field

import numpy as np

from seq2seq.alignment.attribution import attribution
from seq2seq.decoding.attention import AttentionMaps
from seq2seq.errors import FieldError
from seq2seq.models.protocol import Seq2SeqModel

METHODS = ("attention", "shift", "gradxinput", "ig", "layer")


@dataclass(frozen=True)
class Method:
    name: str = "attention"
    layer: int | None = None  # 1-based; None: the last (attention, shift)
    head: int | None = None  # 1-based; None: the mean over heads (attention, shift)
    steps: int = 32  # integrated gradients' steps
    aligner: object = field(default=None, compare=False)  # layer: the run's AlignLayer

    def __post_init__(self):
        if self.name not in METHODS:
            raise FieldError("method", f"must be one of {', '.join(METHODS)}, not {self.name!r}")
        if self.steps < 1:
            raise FieldError("steps", f"must be at least 1, not {self.steps}")

    @property
    def uses_attention(self) -> bool:
        return self.name in ("attention", "shift")

    def describe(self, maps: AttentionMaps | None = None) -> str:
        if self.name == "ig":
            return f"integrated gradients, {self.steps} steps"
        if self.name == "gradxinput":
            return "gradient x input"
        if self.name == "layer":
            return f"the run's alignment layer (links at {self.aligner.threshold:g} of a word's mass)"
        where = maps.describe("cross", self.layer, self.head) if maps is not None else "cross-attention"
        return f"{where}, shifted by one" if self.name == "shift" else where


def piece_scores(method: Method, maps: AttentionMaps, model: Seq2SeqModel, src: list[int], tgt: list[int]):
    """(T, S) scores of the pair `maps` describes; `src` its source ids (EOS included) and `tgt`
    its output ids (no EOS), which attribution needs."""
    if method.uses_attention:
        weights = maps.map("cross", method.layer, method.head).numpy()  # (T + 1, S + 1)
        rows = weights[1:] if method.name == "shift" else weights[:-1]
        return rows[:, :-1]
    if method.name == "layer":
        from seq2seq.alignment.layer import frozen_states

        (state,) = frozen_states(model, [src[:-1]], [tgt])
        return method.aligner(*state).exp()[:, :-1].detach().numpy()  # (T, S): NULL's share left out
    steps = method.steps if method.name == "ig" else None
    return attribution(model, src, tgt, steps)[:-1, :-1]


def all_heads(maps: AttentionMaps, shifted: bool) -> dict[tuple[int, int | None], np.ndarray]:
    """(layer, head or None for the mean) -> (T, S) scores, for every layer and head."""
    out = {}
    weights = maps.weights["cross"].numpy()  # (L, H, T + 1, S + 1)
    for layer in range(weights.shape[0]):
        for head in [None, *range(weights.shape[1])]:
            w = weights[layer].mean(0) if head is None else weights[layer, head]
            rows = w[1:] if shifted else w[:-1]
            out[(layer + 1, None if head is None else head + 1)] = rows[:, :-1]
    return out
