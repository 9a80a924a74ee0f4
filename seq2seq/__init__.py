"""seq2seq: a small encoder-decoder Transformer translator built around cross-attention.

>>> import seq2seq
>>> model, tokenizer = seq2seq.load_run("runs/multi30k-en-fr")
>>> seq2seq.translate(model, tokenizer, ["The cat sat on the mat."], seq2seq.DecodeOptions()).best
>>> maps = seq2seq.attention(model, tokenizer, "A dog runs.")  # or with a given translation
>>> maps.weights["cross"].shape  # (layers, heads, output pieces + EOS, source pieces + EOS)
"""

from seq2seq.decoding.attention import AttentionMaps, attention, attention_batch
from seq2seq.decoding.search import DecodeOptions, translate
from seq2seq.errors import Seq2SeqError
from seq2seq.training.checkpoint import load_run

__version__ = "0.1.0"
__all__ = [
    "AttentionMaps",
    "DecodeOptions",
    "Seq2SeqError",
    "__version__",
    "attention",
    "attention_batch",
    "load_run",
    "translate",
]
