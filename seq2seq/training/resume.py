"""Resume: the one owner of what a rerun of `train` continues with. A run keeps its model and its
recipe; only the limits of the new invocation (`LIMITS`) are the new command's; an option typed to
change the rest is refused, never silently ignored. The training state a checkpoint carries is
typed (`TrainingState`) and checked when it is read."""

import math
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

from seq2seq.errors import Seq2SeqError
from seq2seq.fields import from_json
from seq2seq.models.registry import ARCHITECTURE_OPTIONS, ARCHITECTURES, ModelConfig
from seq2seq.runs import files as ckpt
from seq2seq.runs.recipe import train_section
from seq2seq.training.config import (
    ADDED,
    LIMITS,
    OLDER_RECIPES,
    PATHS,
    REMOVED,
    REMOVED_SINCE,
    TrainConfig,
    located,
)

# `seq2seq train` options that describe the model: a resumed run keeps the one it has. The preset
# comes last, so that a refusal names the shape option that differs rather than the preset under it.
MODEL_OPTIONS = ("arch", "dropout", *ARCHITECTURE_OPTIONS, "preset")

# the state's `stream` (training/streaming.py): the place of the part a streamed run trains on
PLACE = {"part": int, "start": (dict, type(None)), "offset": int, "digest": str}


@dataclass
class TrainingState:
    """Where training stands, saved with every checkpoint so a rerun continues at the next batch."""

    step: int = 0  # optimizer steps taken
    epoch: int = 0  # epochs completed
    batch: int = 0  # batches of the current epoch already trained
    best_bleu: float = -1.0  # the best validation BLEU so far (-1: none yet)
    bad_validations: int = 0  # validations in a row without a better BLEU (patience)
    validated_step: int = 0  # the step of the last validation
    validation_seconds: float = 0.0  # what the last validation cost (0: not measured yet)
    # the share of the schedule's budget used when saved (Loop.progress): a run stopped mid-budget
    # resumes its learning rate from here, not from the peak (schedule.budget_progress)
    progress: float = 0.0
    # a streamed corpus (training/streaming.py): the place of the part being trained (None: the
    # epoch's start) and the stream's length in pairs, once an epoch has read it (0: not yet)
    stream: dict | None = None
    stream_length: int = 0

    @classmethod
    def from_json(cls, values: object, where: Path) -> "TrainingState":
        """The state a checkpoint's JSON describes; anything else is one clean error. States saved
        before `validated_step` existed count as validated at their step."""
        if not isinstance(values, dict) or set(values) - {f.name for f in fields(cls)}:
            raise Seq2SeqError(f"{where} has a trainer state this version does not know")
        values = {"validated_step": values.get("step", 0), **values}
        check_place(values.get("stream"), where)
        for f in fields(cls):
            if f.name == "stream":
                continue
            value = values.get(f.name, f.default)
            number = isinstance(value, int | float) and not isinstance(value, bool)
            if not number or (f.type is int and not isinstance(value, int)) or not math.isfinite(value):
                raise Seq2SeqError(f"{where}: the trainer state's {f.name} is not a number ({value!r})")
            if value < (-1 if f.name == "best_bleu" else 0):
                raise Seq2SeqError(f"{where}: the trainer state's {f.name} is negative ({value!r})")
        return cls(**values)

    def to_json(self) -> dict:
        return asdict(self)


def check_place(value: object, where: Path) -> None:
    """A saved `stream` is None or a place as StreamedEpochs writes it (a first part begins at the
    stream's start, a later one at a position); else one line."""
    if value is None:
        return
    good = isinstance(value, dict) and set(value) == set(PLACE)
    good = good and all(isinstance(value[k], t) and not isinstance(value[k], bool) for k, t in PLACE.items())
    good = good and value["part"] >= 0 and value["offset"] >= 0
    first = good and value["part"] == 0
    if not good or first != (value["start"] is None) or (first and value["offset"] != 0):
        raise Seq2SeqError(f"{where}: the trainer state's stream place is not one this version writes")


def stored_train_config(run_dir: Path) -> TrainConfig:
    """The training config a run recorded, which a resumed run continues with. A field this
    version lacks is an error (the run is from elsewhere); a run written before one of today's
    fields existed, or with a lever since removed, is refused in one line naming the commit that
    trains it (its recipe is not emulated)."""
    values, where = train_section(run_dir)
    values = {**ADDED, **values}
    names = {f.name for f in fields(TrainConfig)}
    unknown = sorted(set(values) - names - set(REMOVED))
    if unknown:
        raise Seq2SeqError(
            f"{where}: the 'train' section has fields this version does not know: {_names(unknown)}"
        )
    used = [name for name in REMOVED if values.get(name, REMOVED[name]) != REMOVED[name]]
    missing = sorted(names - set(values) - set(LIMITS))
    if used or missing:
        said = ", ".join(f"{name} {values[name]!r:.40}" for name in used)
        why = f"trained with {said}" if used else f"its 'train' section has no {', '.join(missing)}"
        commit = next((REMOVED_SINCE[name] for name in used if name in REMOVED_SINCE), OLDER_RECIPES)
        raise Seq2SeqError(
            f"{run_dir} is a run of an older recipe ({why}); seq2seq at commit {commit} "
            "trains and resumes it (docs/experiments.md)"
        )
    try:
        kept = {name: value for name, value in values.items() if name in names}
        return from_json(TrainConfig, kept, f"{where}: the 'train' section")
    except ValueError as e:
        raise Seq2SeqError(str(e)) from None


def is_resumable(run_dir: Path) -> bool:
    return (Path(run_dir) / ckpt.LAST).is_file()


def continued(
    run_dir: Path, config: TrainConfig, model_config: ModelConfig
) -> tuple[TrainConfig, ModelConfig]:
    """What a run trains with: for a new run what was asked; for a resumed one its own recipe and
    model with this invocation's limits."""
    if not is_resumable(run_dir):
        return config, model_config
    stored = stored_train_config(run_dir)
    limits = {name: getattr(config, name) for name in LIMITS}
    return replace(stored, **limits), ckpt.model_config(ckpt.load_config(run_dir))


def check_typed_options(run_dir: Path, typed: dict[str, object]) -> list[str]:
    """Refuse (Seq2SeqError) an option the user typed that a resumed run cannot honour; return
    notices for those it need not refuse. `typed` holds only what was on the command line, by
    option name (`max_steps`, `preset`, ...)."""
    run_dir = Path(run_dir)
    if not is_resumable(run_dir):
        return _vocabulary_notices(run_dir, typed)
    stored = stored_train_config(run_dir)
    for name in sorted(set(typed) & {f.name for f in fields(stored)} - set(LIMITS)):
        value, asked = getattr(stored, name), typed[name]
        if (located(asked) if name in PATHS else asked) != value:
            started = f"without {option_name(name)}" if value is None else f"with {flag(name, value)}"
            raise Seq2SeqError(
                f"{run_dir} was started {started}; a resumed run keeps it (start a new --run to change it)"
            )
    model = ckpt.model_config(ckpt.load_config(run_dir))
    for name in [n for n in MODEL_OPTIONS if n in typed]:
        differences = _model_differences(model, name, typed)
        if differences:
            option = flag(name, typed[name])
            raise Seq2SeqError(
                f"{run_dir} holds another model than {option} describes ({'; '.join(differences)}); "
                "a resumed run keeps its model (start a new --run to change it)"
            )
    return []


def _model_differences(model: ModelConfig, name: str, typed: dict[str, object]) -> list[str]:
    """How the run's model differs from what the typed option `name` describes (none: the same),
    field by field, so that a refusal says what changed (the `small` preset's feed-forward block,
    say, since a run was started). A preset describes the fields it sets, with the typed shape
    options over them (`--preset small --heads 8`); the fields it leaves alone are the run's own
    (`--preset tiny` resumes a run trained with `--preset tiny --cell lstm`)."""
    architecture = ARCHITECTURES[model.arch]
    if name == "preset":
        preset = architecture.presets.get(typed[name])
        if preset is None:
            return [f"{model.arch} has no preset {typed[name]}"]
        shape = preset | architecture.fields(typed)
    else:
        shape = {architecture.options.get(name, name): typed[name]}  # --heads sets n_heads
    return [
        f"its {field} is {getattr(model, field)}, not {value}"
        if hasattr(model, field)
        else f"{model.arch} has no {field}"
        for field, value in shape.items()
        if getattr(model, field, None) != value
    ]


def _vocabulary_notices(run_dir: Path, typed: dict[str, object]) -> list[str]:
    """A run that has a tokenizer but no checkpoint keeps its tokenizer: --vocab-size is a ceiling
    SentencePiece may not have reached, so a differing one is said, not refused."""
    if "vocab_size" not in typed or not (run_dir / ckpt.TOKENIZER).is_file():
        return []
    from seq2seq.data.opener import open_tokenizer

    pieces = open_tokenizer(run_dir / ckpt.TOKENIZER).vocab_size
    if pieces == typed["vocab_size"]:
        return []
    return [f"--vocab-size is not used: {run_dir} already has a tokenizer of {pieces} pieces"]


def flag(name: str, value: object) -> str:
    """The option as the user typed it, so a refusal quotes their words: `--heads 8`, and a
    switch by its own name (`--no-norm-first`, never `--norm-first False`)."""
    if isinstance(value, bool):
        return option_name(name, value)
    return f"{option_name(name)} {value}"


def option_name(name: str, value: object = None) -> str:
    """`heads` -> `--heads`; a switch turned off is its `--no-` form."""
    return f"--{'no-' if value is False else ''}{name.replace('_', '-')}"


def _names(names: list[str]) -> str:
    """Field names from a file, as one line: a name that is not a plain word is quoted."""
    return ", ".join(n if n.isidentifier() else repr(n)[:40] for n in names[:10]) + (
        " ..." if len(names) > 10 else ""
    )
