"""The RNN's shape (`RNNConfig`: config.json's "model" section), its presets and the `seq2seq
train` options that set its fields; no torch here, so the command line builds its options from it."""

from dataclasses import dataclass, field

from seq2seq.fields import option, option_names, ranged


@dataclass
class RNNConfig:
    vocab_size: int = ranged(8000, 8, 1 << 20)
    # the shape `seq2seq train` sets over a preset: each field with help is a --flag (unset: the preset's)
    # embeddings, decoder state and encoder states h_j (both ways)
    d_model: int = option(256, "Width, instead of the preset's.", 2, 1 << 15, unset=None)
    n_layers: int = option(
        2, "rnn: recurrent layers, encoder and decoder.", 1, 256, flag="--layers", unset=None
    )
    cell: str = option("gru", "rnn: gru (default) or lstm.", unset=None)
    attention: str = option("bahdanau", "rnn: bahdanau (additive; default) or luong.", unset=None)
    score: str | None = option(None, "rnn with luong attention: general (default) or dot.")
    dropout: float = ranged(0.1, 0.0, 0.9)
    max_positions: int = ranged(256, 2, 1 << 16)  # longest source or target, in pieces, EOS/BOS included
    arch: str = field(default="rnn", init=False)  # names the class in config.json

    def __post_init__(self):
        if self.attention == "luong" and self.score is None:
            self.score = "general"  # the best-scoring of the paper's global attentions
        if self.cell not in ("gru", "lstm"):
            raise ValueError(f"unknown cell {self.cell!r}; use gru or lstm")
        if self.attention == "bahdanau" and self.score is not None:
            raise ValueError("bahdanau attention is additive; --score (dot or general) is for luong")
        if self.attention == "luong" and self.score not in ("dot", "general"):
            raise ValueError(f"luong attention scores by dot or general, not {self.score!r}")
        if self.attention not in ("bahdanau", "luong"):
            raise ValueError(f"unknown attention {self.attention!r}; use bahdanau or luong")
        if self.attention == "bahdanau" and self.d_model % 2:
            raise ValueError(f"d_model {self.d_model} must be even: each direction of the encoder has half")


PRESETS = {
    "tiny": dict(d_model=128, n_layers=1),
    "small": dict(d_model=384, n_layers=2),  # 7.5M parameters, about the Transformer's small
}
# `seq2seq train` options that set one field over the preset -> that field
OPTIONS = option_names(RNNConfig)
