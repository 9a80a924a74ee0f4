"""The options several commands share, declared once, and the one rule for a run's directory."""

import dataclasses
import functools
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


@dataclasses.dataclass(frozen=True)
class Group:
    """A command parameter standing for a group of options, declared as its default
    (`args: TranslateArgs = fields(TranslateArgs)`): Typer is shown `parameters` in its place
    (`command`, as cli/app.py registers each command) and the command is handed `build` of their
    values."""

    parameters: tuple[inspect.Parameter, ...]
    build: typing.Callable[[dict], object]


def fields(cls, names=None, build=None) -> Group:
    """The options of the config `cls`'s fields that are options (those with help), or of `names`;
    built into `cls` (or by `build`)."""
    hints = typing.get_type_hints(cls)
    return Group(
        tuple(
            keyword(f.name, field_option(f, hints[f.name]), hints[f.name])
            for f in dataclasses.fields(cls)
            if "help" in f.metadata and (names is None or f.name in names)
        ),
        build or (lambda values: cls(**values)),
    )


def keyword(name: str, default, annotation) -> inspect.Parameter:
    """A parameter Typer reads as an option (`default` one of typer.Option's)."""
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)


def shapes() -> Group:
    """The shape options of every architecture (its config's fields with help,
    `models/configs.py`), once per name (--d-model is every architecture's); unset: the preset's,
    so each is None until given. Built: a dict."""
    parameters = {}
    for config in CONFIGS.values():
        hints = typing.get_type_hints(config)
        for name, field_name in option_names(config).items():
            f = next(f for f in dataclasses.fields(config) if f.name == field_name)
            hint = hints[field_name] | None
            parameters.setdefault(name, keyword(name, field_option(f, hint), hint))
    return Group(tuple(parameters.values()), dict)


def command(function):
    """`function` as Typer reads it: each parameter whose default is a `Group` replaced by the
    options it stands for, and called with the group built from their values."""
    signature = inspect.signature(function)
    groups = {p.name: p.default for p in signature.parameters.values() if isinstance(p.default, Group)}

    @functools.wraps(function, updated=())
    def called(**values):
        for name, group in groups.items():
            values[name] = group.build({p.name: values.pop(p.name) for p in group.parameters})
        return function(**values)

    own = {p.name: (keyword(p.name, p.default, p.annotation),) for p in signature.parameters.values()}
    shown = [q for name in own for q in (groups[name].parameters if name in groups else own[name])]
    called.__signature__ = inspect.Signature(shown)
    called.__annotations__ = {p.name: p.annotation for p in shown}
    return called


def decode_option(name: str, cls=DecodeOptions) -> typer.Option:
    """`translate` and `evaluate`'s option of the DecodeOptions field `name`; its range is
    DecodeOptions.check's to word, as for a library caller and the server."""
    f = next(f for f in dataclasses.fields(cls) if f.name == name)
    return field_option(f, typing.get_type_hints(cls)[name], bounds=False)


LENGTH_PENALTY, BATCH_SIZE = map(decode_option, ("length_penalty", "batch_size"))


def decoding(names: tuple[str, ...] = OPTIONS) -> Group:
    """--greedy and an option for each DecodeOptions field of `names` (`decode_option`), built into
    DecodeOptions checked, with the one beam rule (`options.chosen`)."""
    hints = typing.get_type_hints(DecodeOptions) | {"beam": int | None}  # unset: the rule's
    greedy = keyword("greedy", typer.Option(False, "--greedy", help=GREEDY_HELP), bool)
    return Group(
        (greedy, *(keyword(name, decode_option(name), hints[name]) for name in names)),
        lambda values: chosen(values, values.pop("greedy")),
    )


POLICY = ("case", "avoid_exact")  # a request's fields that are options of the commands that translate


def request_fields(names: tuple[str, ...] = POLICY) -> Group:
    """The options of the TranslationRequest fields `names` (request/request.py declares them),
    built: a dict of them."""
    from seq2seq.request.request import TranslationRequest  # no torch: its fields are declarations

    return fields(TranslationRequest, names, dict)


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
