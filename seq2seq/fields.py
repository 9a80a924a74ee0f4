"""Dataclasses from JSON that may come from anywhere (a run directory received from someone else):
every field of the type it is declared with, every number finite and within its range, so a bad
value is one clean error here rather than a traceback (or a silently wrong model) later."""

import math
import types
import typing
from dataclasses import fields

# A field's allowed range, by name, wherever it occurs: (lowest, highest), both inclusive.
RANGES = {
    "vocab_size": (8, 1 << 20),
    "d_model": (2, 1 << 15),
    "n_heads": (1, 1024),
    "n_encoder_layers": (1, 256),
    "n_decoder_layers": (1, 256),
    "n_layers": (1, 256),
    "d_ff": (1, 1 << 17),
    "dropout": (0.0, 0.9),
    "max_positions": (2, 1 << 16),
    "max_tokens": (16, 1 << 24),
    "lr": (0.0, 10.0),
    "warmup": (1, 1 << 31),
    "label_smoothing": (0.0, 0.9),
    "weight_decay": (0.0, 10.0),
    "subword_alpha": (0.0, 1.0),
    "late_dropout": (0.0, 0.9),
    "late_dropout_from": (0.0, 1e9),
    "late_dropout_over": (0.0, 1e9),
    "clip_norm": (0.0, 1e6),
    "average": (0, 1000),
    "epochs": (1, 1 << 31),
    "max_steps": (1, 1 << 40),
    "max_minutes": (0.0, 1e9),
    "patience": (0, 1 << 31),  # 0: off
    "save_every_minutes": (0.0, 1e9),
    "world_size": (1, 1 << 20),
    "seed": (0, (1 << 31) - 1),
}


NAMES = {type(None): "null", int: "an integer", float: "a number", bool: "true or false", str: "a string"}


def from_json(cls: type, values: object, what: str) -> object:
    """`cls(**values)` once every value has its field's declared type and range; otherwise a
    ValueError naming `what` and the field. Unknown and missing fields are the caller's rule."""
    if not isinstance(values, dict):
        raise ValueError(f"{what} is not a JSON object")
    hints = typing.get_type_hints(cls)
    for f in fields(cls):
        if f.name in values:
            check(f.name, values[f.name], hints[f.name], what)
    try:  # the dataclass's own checks of its fields together (a __post_init__)
        return cls(**values)
    except ValueError as e:
        raise ValueError(f"{what}: {e}") from None


def check(name: str, value: object, declared: object, what: str) -> None:
    if not _is_instance(value, declared):
        raise ValueError(f"{what}: {name} must be {_describe(declared)}, not {value!r:.40}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{what}: {name} must be finite, not {value}")
    if name in RANGES and isinstance(value, int | float) and not isinstance(value, bool):
        low, high = RANGES[name]
        if not low <= value <= high:
            raise ValueError(f"{what}: {name} must be between {low} and {high}, not {value}")


def _is_instance(value: object, declared: object) -> bool:
    if isinstance(declared, types.UnionType) or typing.get_origin(declared) is typing.Union:
        return any(_is_instance(value, option) for option in typing.get_args(declared))
    if declared is type(None):
        return value is None
    if declared is float:  # JSON writes 1.0 as 1.0, but a hand-edited file may say 1
        return isinstance(value, int | float) and not isinstance(value, bool)
    if declared is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, declared)


def _describe(declared: object) -> str:
    if isinstance(declared, types.UnionType) or typing.get_origin(declared) is typing.Union:
        return " or ".join(_describe(option) for option in typing.get_args(declared))
    return NAMES.get(declared, getattr(declared, "__name__", str(declared)))
