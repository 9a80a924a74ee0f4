"""The options several commands share, declared once, and the one rule for a run's directory."""

import dataclasses
import inspect
import math
import typing
from pathlib import Path

import typer

from seq2seq.decoding.options import GREEDY_HELP, OPTIONS, DecodeOptions, chosen
from seq2seq.errors import spelled_fields
from seq2seq.fields import option_default, option_names
from seq2seq.models.configs import CONFIGS
from seq2seq.training.config import TrainConfig

DATA_DIR = typer.Option(
    None, "--data-dir", envvar="SEQ2SEQ_DATA_DIR", help="Local folder in the Multi30k raw layout."
)
RUN = typer.Option(
    None, "--run", help="Run directory [default: runs/<corpus>-<src>-<tgt>: runs/multi30k-en-fr]."
)
QUANTIZE = typer.Option(
    None, "--quantize", help="int8: dynamic int8 linear layers on the CPU (fbgemm) [default: fp32]."
)


def finite(value: float | None) -> float | None:
    """The check a number option's range cannot make: inf passes `min=`, and nan every bound."""
    if value is not None and not math.isfinite(value):
        raise typer.BadParameter(f"{value} is not a finite number")
    return value


def field_option(f: dataclasses.Field, hint, bounds: bool = True) -> typer.Option:
    """The option a config field declares (`fields.option`): its default, help, flag, and the
    bounds or choices config.json's value is held to, so the command line and a hand-edited run
    refuse the same values (`bounds` False: the config's own check words the refusal)."""
    meta = f.metadata
    low, high = meta.get("range", (None, None)) if bounds else (None, None)
    callback = finite if float in typing.get_args(hint) or hint is float else None
    if "choices" in meta:
        callback = choice_of(meta["choices"])
    flags = [meta["flag"]] if meta["flag"] else []
    return typer.Option(
        option_default(f),
        *flags,
        min=low,
        max=high,
        callback=callback,
        help=meta["help"],
        envvar=meta.get("envvar"),
    )


def choice_of(choices: tuple[str, ...]):
    """A callback refusing a value outside `choices`, in click's words (naming the flag)."""

    def check(value: str) -> str:
        return one_of(value, choices)

    return check


def field_parameters(cls, names=None) -> list[inspect.Parameter]:
    """A keyword parameter for each field of the config `cls` that is an option (those with help),
    or for those of `names`: what `with_parameters` gives a command."""
    hints = typing.get_type_hints(cls)
    return [
        inspect.Parameter(
            f.name,
            inspect.Parameter.KEYWORD_ONLY,
            default=field_option(f, hints[f.name]),
            annotation=hints[f.name],
        )
        for f in dataclasses.fields(cls)
        if "help" in f.metadata and (names is None or f.name in names)
    ]


def shape_parameters() -> list[inspect.Parameter]:
    """A keyword parameter for each shape option of every architecture (its config's fields with
    help, `models/configs.py`), once per name (--d-model is every architecture's); unset: the
    preset's, so each is None until given."""
    parameters = {}
    for config in CONFIGS.values():
        hints = typing.get_type_hints(config)
        for name, field_name in option_names(config).items():
            f = next(f for f in dataclasses.fields(config) if f.name == field_name)
            hint = hints[field_name] | None
            parameters.setdefault(
                name,
                inspect.Parameter(
                    name, inspect.Parameter.KEYWORD_ONLY, default=field_option(f, hint), annotation=hint
                ),
            )
    return list(parameters.values())


def taken(cls, given: dict):
    """The options dataclass `cls` of a command (its fields: `field_parameters(cls)`), its values
    taken out of the command's `given` (its other options stay)."""
    return cls(**{f.name: given.pop(f.name) for f in dataclasses.fields(cls) if f.name in given})


def with_parameters(command, parameters: list[inspect.Parameter]):
    """`command` with `parameters` in place of its `**options`: what Typer reads its options from."""
    own = [
        p for p in inspect.signature(command).parameters.values() if p.kind != inspect.Parameter.VAR_KEYWORD
    ]
    command.__signature__ = inspect.Signature([*own, *parameters])
    return command


def decode_option(name: str, cls=DecodeOptions) -> typer.Option:
    """`translate` and `evaluate`'s option of the DecodeOptions field `name`; its range is
    DecodeOptions.check's to word, as for a library caller and the server."""
    f = next(f for f in dataclasses.fields(cls) if f.name == name)
    return field_option(f, typing.get_type_hints(cls)[name], bounds=False)


LENGTH_PENALTY, BATCH_SIZE = map(decode_option, ("length_penalty", "batch_size"))


def decode_parameters(names: tuple[str, ...] = OPTIONS) -> list[inspect.Parameter]:
    """--greedy and a keyword parameter for each DecodeOptions field of `names` (`decode_option`):
    the options a command takes as `**given` and turns into DecodeOptions with `decoding`."""
    hints = typing.get_type_hints(DecodeOptions)
    greedy = typer.Option(False, "--greedy", help=GREEDY_HELP)
    return [inspect.Parameter("greedy", inspect.Parameter.KEYWORD_ONLY, default=greedy, annotation=bool)] + [
        inspect.Parameter(
            name,
            inspect.Parameter.KEYWORD_ONLY,
            default=decode_option(name),
            annotation=hints[name] | None if name == "beam" else hints[name],
        )
        for name in names
    ]


def decoding(given: dict) -> DecodeOptions:
    """The DecodeOptions of a command's `decode_parameters`, taken out of `given` (its other
    options stay), checked, with the one beam rule (`options.chosen`)."""
    values = {name: given.pop(name) for name in OPTIONS if name in given}
    return chosen(values, given.pop("greedy", False))


POLICY = ("case", "avoid_exact")  # a request's fields that are options of the commands that translate


def request_parameters(names: tuple[str, ...] = POLICY) -> list[inspect.Parameter]:
    """The options of the TranslationRequest fields `names` (request/request.py declares them)."""
    from seq2seq.request.request import TranslationRequest  # no torch: its fields are declarations

    return field_parameters(TranslationRequest, names)


def request_policy(given: dict, names: tuple[str, ...] = POLICY) -> dict:
    """The request fields of `request_parameters(names)`, taken out of `given`."""
    return {name: given.pop(name) for name in names if name in given}


DEVICE = decode_option("device", TrainConfig)  # the device a run trains on is the one it decodes on


def one_of(value: str, choices, flag: str | None = None) -> str:
    """`value` if it is one of `choices` (names, or a dict keyed by them), else the usage error
    naming `flag` and what it takes (no flag: an option's callback, which click names itself)."""
    if value not in choices:
        raise typer.BadParameter(f"{value!r} is not one of {', '.join(choices)}", param_hint=flag)
    return value


def check_precision(quantize: str | None, bf16: bool) -> None:
    """--quantize and --bf16 are two answers to one question; refuse the pair, and unknown modes,
    before any work."""
    from seq2seq.models.quantize import QUANTIZATIONS

    if quantize is not None:
        one_of(quantize, QUANTIZATIONS, "--quantize")
    if quantize is not None and bf16:
        raise typer.BadParameter("int8 and bf16 do not combine; choose one", param_hint="--quantize")


def run_dir(run: Path | None, corpus: str = "multi30k", src: str = "en", tgt: str = "fr") -> Path:
    """The run a command works on: --run, or runs/<corpus>-<src>-<tgt> (`train`, `tokenize`) of the
    defaults (every other command: runs/multi30k-en-fr)."""
    from seq2seq.data.corpus import corpus_name

    return run or Path("runs") / f"{corpus_name(corpus)}-{src}-{tgt}"


# the library names fields (errors.FieldError); the command line spells each as its flag, here and
# nowhere else (a field not named here: --its-name)
FLAGS = {"lines": "TEXT", "prefixes": "--prefix", "include": "--constraint", "per_line": "--constraints-file",
         "trace": "--beam-trace"}  # fmt: skip


def spelled(error: Exception) -> str:
    """A library error in the command line's words: the fields it names as flags."""
    flags = spelled_fields(error, FLAGS, lambda name: "--" + name.replace("_", "-"))
    return (
        str(error) if flags is None else f"Invalid value for {', '.join(map(repr, flags))}: {error.message}"
    )
