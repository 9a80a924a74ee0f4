"""Config fields declared once (`option`, `ranged`: help, range, flag as the field's metadata), and
dataclasses from JSON that may come from anywhere (a run directory received from someone else):
every field of the type it is declared with, every number finite and within its range, so a bad
value is one clean error here rather than a traceback (or a silently wrong model) later."""

import math
import types
import typing
from dataclasses import MISSING, field, fields


def option(
    default, help: str, low=None, high=None, *, flag: str | None = None, choices=None, unset=MISSING, **more
):
    """A config field that is a command-line option: its one declaration. Its metadata holds the
    help, the allowed range (both ends inclusive; a `high` of None: no upper end) or choices, and
    the flag (`--name` unless told); the command's options and the checks of config.json
    (`from_json`) are both built from it.
    `unset`: the option's default where it is not the field's (None: decided from other options).
    `more`: what else a reader of the declaration needs (DecodeOptions: `served`, whether the
    server's requests take it)."""
    metadata = {"help": help, "flag": flag, "unset": unset, **more}
    if low is not None:
        metadata["range"] = (low, high)
    if choices is not None:
        metadata["choices"] = tuple(choices)
    return field(default=default, metadata=metadata)


def option_default(f) -> object:
    """What an option field defaults to where it is not given: its `unset`, else its default."""
    return f.default if f.metadata["unset"] is MISSING else f.metadata["unset"]


def option_names(cls) -> dict[str, str]:
    """The options of `cls`'s fields, by the name a command's parameter takes from its flag
    (`--heads` -> heads), each -> the field it sets."""
    names = {}
    for f in fields(cls):
        if "help" in f.metadata:
            flag = f.metadata["flag"] or f"--{f.name}"
            names[flag.split("/")[0].removeprefix("--").replace("-", "_")] = f.name
    return names


def ranged(default, low, high):
    """A config field that is no option but still comes from JSON: its allowed range only."""
    return field(default=default, metadata={"range": (low, high)})


def check_choices(config: object) -> None:
    """A ValueError for a field outside its declared choices (a dataclass's own __post_init__)."""
    for f in fields(config):
        value = getattr(config, f.name)
        if "choices" in f.metadata and value not in f.metadata["choices"]:
            raise ValueError(f"{f.name} must be one of {', '.join(f.metadata['choices'])}, not {value!r:.40}")


NAMES = {type(None): "null", int: "an integer", float: "a number", bool: "true or false", str: "a string"}


def from_json(cls: type, values: object, what: str) -> object:
    """`cls(**values)` once every value has its field's declared type and range; otherwise a
    ValueError naming `what` and the field. Unknown and missing fields are the caller's rule."""
    if not isinstance(values, dict):
        raise ValueError(f"{what} is not a JSON object")
    hints = typing.get_type_hints(cls)
    for f in fields(cls):
        if f.name in values:
            check(f.name, values[f.name], hints[f.name], what, f.metadata.get("range"))
    try:  # the dataclass's own checks of its fields together (a __post_init__)
        return cls(**values)
    except ValueError as e:
        raise ValueError(f"{what}: {e}") from None


def check(name: str, value: object, declared: object, what: str, bounds: tuple | None = None) -> None:
    """`value` of the type `declared`, finite, and within `bounds` (lowest, highest) if given."""
    if not _is_instance(value, declared):
        raise ValueError(f"{what}: {name} must be {_describe(declared)}, not {value!r:.40}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{what}: {name} must be finite, not {value}")
    if bounds is not None and isinstance(value, int | float) and not isinstance(value, bool):
        low, high = bounds
        if not low <= value <= (math.inf if high is None else high):
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
