"""`seq2seq tokenize` and `seq2seq train`: the commands that build a run."""

import signal
from pathlib import Path

import typer

from seq2seq.cli import display
from seq2seq.cli.options import (
    DATA_DIR,
    RUN,
    fields,
    finite,
    one_of,
    run_dir,
    shapes,
)
from seq2seq.errors import Seq2SeqError
from seq2seq.training.config import TrainConfig

# the recipe's fields that `tokenize` takes too
TOKENIZE = ("corpus", "src", "tgt", "vocab_size", "tokenizer_sentences", "seed", "stream")


def tokenize(
    text: str | None = typer.Argument(None, help="Show how the run's tokenizer splits TEXT."),
    data_dir: str | None = DATA_DIR,
    run: Path | None = RUN,
    recipe: dict = fields(TrainConfig, TOKENIZE, dict),
):
    """Train the joint SentencePiece model of a run, or show how it splits TEXT."""
    from seq2seq.data.opener import open_tokenizer
    from seq2seq.runs.files import BEST, LAST, TOKENIZER

    corpus, src, tgt, vocab_size, sentences, seed, stream = (recipe[name] for name in TOKENIZE)
    try:  # what the recipe refuses of these (TrainConfig.__post_init__)
        TrainConfig(**recipe)
    except ValueError as e:
        raise typer.BadParameter(str(e)) from None
    run = run_dir(run, corpus, src, tgt)
    if text is not None:
        tokenizer = open_tokenizer(run / TOKENIZER)
        display.pieces(text, tokenizer.pieces(text), tokenizer.encode([text])[0])
        return
    if (run / BEST).exists() or (run / LAST).exists():
        raise Seq2SeqError(f"{run} already has trained weights; a new tokenizer needs a new --run")
    from seq2seq.data.corpus import stream_pairs
    from seq2seq.data.streamed import first_pairs
    from seq2seq.data.tokenizer import train_tokenizer
    from seq2seq.runs.lock import run_lock

    # as `train` reads them
    pairs = (
        first_pairs(corpus, src, tgt, sentences)
        if stream
        else stream_pairs(corpus, "train", src, tgt, data_dir)
    )
    counted = Counted(pairs)
    with run_lock(run):
        texts = (t for pair in counted for t in pair)
        tokenizer = train_tokenizer(texts, run / TOKENIZER, vocab_size, sentences=sentences, seed=seed)
    sample = counted.first[0]
    pieces = tokenizer.pieces(sample)
    display.tokenizer_trained(run / TOKENIZER, tokenizer.vocab_size, counted.count, sample, pieces)


class Counted:
    """A stream of pairs that counts them and keeps the first as it passes."""

    def __init__(self, pairs):
        self.pairs, self.count, self.first = pairs, 0, None

    def __iter__(self):
        for pair in self.pairs:
            self.count += 1
            self.first = self.first or pair
            yield pair


def train(
    ctx: typer.Context,
    data_dir: str | None = DATA_DIR,
    run: Path | None = RUN,
    preset: str = typer.Option("small", help="Model shape: tiny, small or base (transformer)."),
    arch: str = typer.Option("transformer", "--arch", help="transformer or rnn."),
    dropout: float = typer.Option(0.1, min=0.0, max=0.9, callback=finite, help="Dropout."),
    recipe: dict = fields(TrainConfig, build=dict),  # TrainConfig's fields
    shape: dict = shapes(),  # the model's shape: the architectures' configs' fields
):
    """Train a model (and its tokenizer); rerunning resumes from the run's last checkpoint."""
    from seq2seq.training.distributed import is_main_process
    from seq2seq.training.resume import check_typed_options
    from seq2seq.training.train import train as train_run

    model_config = architecture_config(arch, preset, dropout, shape)
    if recipe["epochs"] is None and recipe["max_minutes"] is None:
        recipe["epochs"] = TrainConfig.epochs  # a time budget alone has no epoch limit
    try:  # a combination of options the recipe refuses (TrainConfig.__post_init__)
        config = TrainConfig(**recipe)
    except ValueError as e:
        raise typer.BadParameter(str(e)) from None
    run = run_dir(run, config.corpus, config.src, config.tgt)
    typed = typed_options(ctx)
    check_typed(typed, config)
    for notice in check_typed_options(run, typed):
        display.warn(notice)
    stop_requested = install_stop_handlers()
    if not is_main_process():  # under torchrun rank 0 alone draws; the others only train
        train_run(run, config, model_config, data_dir, should_stop=stop_requested)
        return
    with display.TrainingDisplay(run) as reporter:
        final = train_run(run, config, model_config, data_dir, reporter, stop_requested)
    display.training_done(run, final)


def check_typed(typed: dict[str, object], config: TrainConfig) -> None:
    """What the options typed cannot ask of this recipe: a part size without --stream, a model
    shape or vocabulary beside --init-from (whose run has both)."""
    from seq2seq.models.registry import ARCHITECTURE_OPTIONS

    if "stream_part" in typed and not config.stream:
        raise typer.BadParameter(
            "a part is what --stream reads at a time; give --stream", param_hint="--stream-part"
        )
    shaped = [
        name for name in ("preset", "arch", "dropout", "vocab_size", *ARCHITECTURE_OPTIONS) if name in typed
    ]
    if config.init_from is not None and shaped:
        flag = "--" + shaped[0].replace("_", "-")
        raise typer.BadParameter(
            f"the model and tokenizer are those of --init-from {config.init_from}", param_hint=flag
        )


def architecture_config(arch: str, preset: str, dropout: float, options: dict[str, object]):
    """The model config the options describe: the preset's shape, with the model options given
    (those not None) set over it. An option the architecture does not have is an error, never
    silently ignored."""
    from seq2seq.models.registry import ARCHITECTURES, preset_config
    from seq2seq.training.resume import option_name

    architecture = ARCHITECTURES[one_of(arch, ARCHITECTURES, "--arch")]
    one_of(preset, architecture.presets, "--preset")
    given = {name: value for name, value in options.items() if value is not None}
    if foreign := [name for name in given if name not in architecture.options]:
        flags = ", ".join(option_name(name, given[name]) for name in foreign)
        verb = "is not an option" if len(foreign) == 1 else "are not options"
        raise typer.BadParameter(f"{flags} {verb} of --arch {arch}", param_hint="--arch")
    try:
        return preset_config(arch, preset, dropout=dropout, **architecture.fields(given))
    except ValueError as e:
        raise typer.BadParameter(str(e)) from None


def typed_options(ctx: typer.Context) -> dict[str, object]:
    """The options the user typed (or set through the environment), not those left at defaults:
    what a resumed run must honour or refuse."""
    sources = {name: getattr(ctx.get_parameter_source(name), "name", "") for name in ctx.params}
    return {n: ctx.params[n] for n, source in sources.items() if source in ("COMMANDLINE", "ENVIRONMENT")}


def install_stop_handlers():
    """Ctrl-C or SIGTERM asks training to stop after the current step and save (validating
    nothing: a resumed run must be the run never stopped); a second Ctrl-C stops at once."""
    requested = []

    def handler(signum, frame):
        requested.append(signum)
        signal.signal(signum, signal.SIG_DFL)

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, handler)
    return lambda: bool(requested)
