"""The Transformer's shape (`TransformerConfig`: config.json's "model" section), its presets, the
`seq2seq train` options that set its fields, and the fields older runs lack."""

from dataclasses import dataclass, field

from seq2seq.fields import ranged
from seq2seq.models.feed_forward import FFNS


@dataclass
class TransformerConfig:
    vocab_size: int = ranged(8000, 8, 1 << 20)
    d_model: int = ranged(256, 2, 1 << 15)
    n_heads: int = ranged(4, 1, 1024)
    n_encoder_layers: int = ranged(3, 1, 256)
    n_decoder_layers: int = ranged(3, 1, 256)
    d_ff: int = ranged(1024, 1, 1 << 17)
    dropout: float = ranged(0.1, 0.0, 0.9)
    max_positions: int = ranged(256, 2, 1 << 16)  # longest source or target, in pieces, EOS/BOS included
    norm_first: bool = True  # pre-LN; False gives the original paper's post-LN "Add & Norm"
    tie_embeddings: bool = True  # output projection shares the joint embedding matrix
    ffn: str = "relu"  # the feed-forward block: relu, silu or swiglu (models/feed_forward.py)
    scale_embeddings: bool = True  # embeddings times sqrt(D) before the positions are added
    # the source's own embedding table of this many ids (separate vocabularies, as some Marian
    # models have: our ids below vocab_size are the target's, the source reads ids up to this);
    # None: the source shares the joint table
    source_vocab_size: int | None = None
    arch: str = field(default="transformer", init=False)  # names the class in config.json

    def __post_init__(self):
        if self.d_model % self.n_heads or self.d_model % 2:
            raise ValueError(f"d_model {self.d_model} must be even and a multiple of n_heads {self.n_heads}")
        if self.ffn not in FFNS:
            raise ValueError(f"ffn must be one of {', '.join(FFNS)}, not {self.ffn!r}")
        if self.source_vocab_size is not None and self.source_vocab_size < self.vocab_size:
            raise ValueError(
                f"source_vocab_size {self.source_vocab_size} is below vocab_size {self.vocab_size}"
            )


PRESETS = {
    "tiny": dict(d_model=128, n_heads=4, n_encoder_layers=2, n_decoder_layers=2, d_ff=512),
    # gated, at the parameters of a 1024-wide ReLU block (feed_forward.py)
    "small": dict(d_model=256, n_heads=4, n_encoder_layers=3, n_decoder_layers=3, d_ff=680, ffn="swiglu"),
    "base": dict(d_model=512, n_heads=8, n_encoder_layers=6, n_decoder_layers=6, d_ff=2048),
}
# `seq2seq train` options that set one field over the preset -> that field
OPTIONS = dict(
    d_model="d_model", heads="n_heads", ff="d_ff", encoder_layers="n_encoder_layers",
    decoder_layers="n_decoder_layers", norm_first="norm_first", ffn="ffn",
)  # fmt: skip
# fields a config.json from before them lacks -> the value such runs were trained with
ADDED_SINCE = dict(ffn="relu", scale_embeddings=True, source_vocab_size=None)
