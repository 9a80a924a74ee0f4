"""What `seq2seq import` reads from a Marian checkpoint's config files before it loads anything:
each field of config.json that shapes the model, of its type, finite and in its range; the
decoder's start piece; the languages."""

import json
import math
from pathlib import Path

from seq2seq.errors import Seq2SeqError

# config.json's fields that shape the model: (type, least value, greatest value or None); a field
# missing takes transformers' default, but one present must be of its type and in its range
SIZES = {
    "d_model": (int, 1, 65536),
    "encoder_layers": (int, 1, 1024),
    "decoder_layers": (int, 1, 1024),
    "encoder_attention_heads": (int, 1, 1024),
    "decoder_attention_heads": (int, 1, 1024),
    "encoder_ffn_dim": (int, 1, 1 << 20),
    "decoder_ffn_dim": (int, 1, 1 << 20),
    "max_position_embeddings": (int, 2, 1 << 20),
    "vocab_size": (int, 2, 1 << 24),
    "decoder_vocab_size": (int, 2, 1 << 24),
    "pad_token_id": (int, 0, None),
    "eos_token_id": (int, 0, None),
    "decoder_start_token_id": (int, 0, None),
    "dropout": (float, 0.0, 1.0),
    "scale_embedding": (bool, None, None),
    "share_encoder_decoder_embeddings": (bool, None, None),
}
REQUIRED = ("d_model", "encoder_layers", "decoder_layers", "encoder_attention_heads", "vocab_size")


def check_fields(path: Path, config: dict) -> None:
    """Each shaping field of config.json of its type (a bool is no number here, nor a number a
    bool), finite and in its range, so that the import fails in one line before anything is
    loaded rather than inside transformers or with a run no command loads."""
    for name in REQUIRED:
        if name not in config:
            raise Seq2SeqError(f"{path}: {name} is missing")
    architectures = config.get("architectures")
    if architectures is not None and not (
        isinstance(architectures, list) and all(isinstance(a, str) for a in architectures)
    ):
        raise Seq2SeqError(
            f"{path}: architectures must be a list of class names, not {_shown(architectures)}"
        )
    for name, (kind, low, high) in SIZES.items():
        if name not in config:
            continue
        value = config[name]
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if kind is bool:
            typed = isinstance(value, bool)
        else:
            typed = number and (kind is float or isinstance(value, int))
        if not typed or (number and not math.isfinite(value)):
            raise Seq2SeqError(f"{path}: {name} must be {_KINDS[kind]}, not {_shown(value)}")
        if (low is not None and value < low) or (high is not None and value > high):
            bound = f"from {low}" + (f" to {high}" if high is not None else " up")
            raise Seq2SeqError(f"{path}: {name} is {value}; it must be {bound}")


_KINDS = {int: "a whole number", float: "a finite number", bool: "true or false"}


def _shown(value) -> str:
    """A config value as a message quotes it: a container by its kind (it may nest deeply)."""
    if isinstance(value, (list, dict)):
        return "a list" if isinstance(value, list) else "an object"
    return json.dumps(value)[:40]


def decoder_start(source: Path, config: dict, vocab: dict[str, int]) -> str:
    """The piece the decoder starts with: PAD in OPUS-MT, our BOS in our own exports."""
    pieces = [piece for piece, i in vocab.items() if i == config.get("decoder_start_token_id")]
    if not pieces:
        raise Seq2SeqError(
            f"{source}: decoder_start_token_id {config.get('decoder_start_token_id')} is no piece"
        )
    return pieces[0]


def languages_of(source: Path, src: str | None, tgt: str | None) -> tuple[str, str, str]:
    """("multi30k", src, tgt): the languages from the options, else the tokenizer's config."""
    try:
        recorded = json.loads((source / "tokenizer_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):
        recorded = {}
    recorded = recorded if isinstance(recorded, dict) else {}  # a list, a number: says nothing
    src = src or recorded.get("source_lang")
    tgt = tgt or recorded.get("target_lang")
    if not isinstance(src, str) or not isinstance(tgt, str):
        raise Seq2SeqError(f"{source} does not say its languages; give --src and --tgt")
    return "multi30k", src, tgt
