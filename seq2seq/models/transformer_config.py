"""The Transformer's shape (`TransformerConfig`: config.json's "model" section), its presets, the
`seq2seq train` options that set its fields, and the fields older runs lack; no torch here, so
the command line builds its options from it."""

from dataclasses import dataclass, field

from seq2seq.fields import option, option_names, ranged


@dataclass
class TransformerConfig:
    vocab_size: int = ranged(8000, 8, 1 << 20)
    # the shape `seq2seq train` sets over a preset: each field with help is a --flag (unset: the preset's)
    d_model: int = option(256, "Width, instead of the preset's.", 2, 1 << 15, unset=None)
    n_heads: int = option(4, "transformer: attention heads.", 1, 1024, flag="--heads", unset=None)
    n_encoder_layers: int = option(
        3, "transformer: encoder layers.", 1, 256, flag="--encoder-layers", unset=None
    )
    n_decoder_layers: int = option(
        3, "transformer: decoder layers.", 1, 256, flag="--decoder-layers", unset=None
    )
    d_ff: int = option(1024, "transformer: feed-forward width.", 1, 1 << 17, flag="--ff", unset=None)
    dropout: float = ranged(0.1, 0.0, 0.9)
    max_positions: int = ranged(256, 2, 1 << 16)  # longest source or target, in pieces, EOS/BOS included
    norm_first: bool = option(
        True,
        "transformer: LayerNorm before each sublayer (pre-LN, the presets') or, with --no-norm-first, "
        "after the residual add (post-LN, the 2017 paper's).",
        flag="--norm-first/--no-norm-first",
        unset=None,
    )
    tie_embeddings: bool = True  # output projection shares the joint embedding matrix
    ffn: str = option(  # models/feed_forward.py
        "relu",
        "transformer: feed-forward block, swiglu (gated: the small preset's, 680 wide) or relu (the tiny "
        "and base presets'; at equal parameters relu is 3/2 as wide: --ffn relu --ff 1024 is the small "
        "preset with a ReLU block), or silu (ReLU's block through SiLU: OPUS-MT's).",
        unset=None,
    )
    scale_embeddings: bool = True  # embeddings times sqrt(D) before the positions are added
    # the source's own embedding table of this many ids (separate vocabularies, as some Marian
    # models have: our ids below vocab_size are the target's, the source reads ids up to this);
    # None: the source shares the joint table
    source_vocab_size: int | None = None
    arch: str = field(default="transformer", init=False)  # names the class in config.json

    def __post_init__(self):
        if self.d_model % self.n_heads or self.d_model % 2:
            raise ValueError(f"d_model {self.d_model} must be even and a multiple of n_heads {self.n_heads}")
        from seq2seq.models.feed_forward import FFNS  # torch's: only where a config is built

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
OPTIONS = option_names(TransformerConfig)
# fields a config.json from before them lacks -> the value such runs were trained with
ADDED_SINCE = dict(ffn="relu", scale_embeddings=True, source_vocab_size=None)
