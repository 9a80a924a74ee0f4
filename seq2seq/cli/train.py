"""`seq2seq tokenize` and `seq2seq train`: the commands that build a run."""

import math
import signal
from pathlib import Path

import typer

from seq2seq.cli import display
from seq2seq.cli.options import CORPUS, DATA_DIR, DEVICE, RUN, one_of, run_dir
from seq2seq.errors import Seq2SeqError
from seq2seq.fields import RANGES
from seq2seq.training.config import DECAYS, TrainConfig

RECIPE = TrainConfig()  # the options' defaults are the recipe's: one place to change them


def tokenize(
    text: str | None = typer.Argument(None, help="Show how the run's tokenizer splits TEXT."),
    data_dir: str | None = DATA_DIR,
    corpus: str = CORPUS,
    src: str = typer.Option("en", help="Source language."),
    tgt: str = typer.Option("fr", help="Target language."),
    vocab_size: int = typer.Option(8000, help="Vocabulary size (a ceiling on small corpora)."),
    run: Path | None = RUN,
):
    """Train the joint SentencePiece model of a run, or show how it splits TEXT."""
    from seq2seq.data.tokenizer import Tokenizer
    from seq2seq.training.checkpoint import BEST, LAST, TOKENIZER

    run = run_dir(run, corpus, src, tgt)
    if text is not None:
        tokenizer = Tokenizer(run / TOKENIZER)
        display.pieces(text, tokenizer.pieces(text), tokenizer.encode([text])[0])
        return
    if (run / BEST).exists() or (run / LAST).exists():
        raise Seq2SeqError(f"{run} already has trained weights; a new tokenizer needs a new --run")
    if vocab_size < 8:
        raise typer.BadParameter("must be at least 8", param_hint="--vocab-size")
    from seq2seq.data.corpus import load_pairs
    from seq2seq.data.tokenizer import train_tokenizer
    from seq2seq.training.lock import run_lock

    with run_lock(run):
        pairs = load_pairs(corpus, "train", src, tgt, data_dir)  # all of them, as `train` does
        tokenizer = train_tokenizer((t for pair in pairs for t in pair), run / TOKENIZER, vocab_size)
    sample = pairs[0][0]
    display.tokenizer_trained(
        run / TOKENIZER, tokenizer.vocab_size, len(pairs), sample, tokenizer.pieces(sample)
    )


def finite(value: float | None) -> float | None:
    """The check a number option's range cannot make: inf passes `min=`, and nan every bound
    (defined here, before the options of `train` that use it)."""
    if value is not None and not math.isfinite(value):
        raise typer.BadParameter(f"{value} is not a finite number")
    return value


def recipe_option(name: str, help: str):
    """The option of the recipe's field `name`: its default, and the bounds config.json's value
    is held to (`fields.RANGES`), so the command line and a hand-edited run refuse the same values."""
    low, high = RANGES[name]
    return typer.Option(getattr(RECIPE, name), min=low, max=high, callback=finite, help=help)


def train(
    ctx: typer.Context,
    data_dir: str | None = DATA_DIR,
    corpus: str = CORPUS,
    src: str = typer.Option("en", help="Source language."),
    tgt: str = typer.Option("fr", help="Target language."),
    run: Path | None = RUN,
    preset: str = typer.Option("small", help="Model shape: tiny, small or base (transformer)."),
    arch: str = typer.Option("transformer", "--arch", help="transformer or rnn."),
    # the model options, read through ctx.params by the names the architectures' OPTIONS give them
    attention: str | None = typer.Option(None, help="rnn: bahdanau (additive; default) or luong."),
    score: str | None = typer.Option(None, help="rnn with luong attention: general (default) or dot."),
    cell: str | None = typer.Option(None, help="rnn: gru (default) or lstm."),
    d_model: int | None = typer.Option(None, min=2, help="Width, instead of the preset's."),
    layers: int | None = typer.Option(None, min=1, help="rnn: recurrent layers, encoder and decoder."),
    encoder_layers: int | None = typer.Option(None, min=1, help="transformer: encoder layers."),
    decoder_layers: int | None = typer.Option(None, min=1, help="transformer: decoder layers."),
    heads: int | None = typer.Option(None, min=1, help="transformer: attention heads."),
    ff: int | None = typer.Option(None, min=1, help="transformer: feed-forward width."),
    norm_first: bool | None = typer.Option(
        None,
        "--norm-first/--no-norm-first",
        help="transformer: LayerNorm before each sublayer (pre-LN, the presets') or, with "
        "--no-norm-first, after the residual add (post-LN, the 2017 paper's).",
    ),
    ffn: str | None = typer.Option(
        None,
        help="transformer: feed-forward block, swiglu (gated: the small preset's, 680 wide) or relu "
        "(the tiny and base presets'; at equal parameters relu is 3/2 as wide: --ffn relu --ff 1024 is "
        "the small preset before the gated block).",
    ),
    epochs: int | None = typer.Option(
        None, min=1, help="Epochs at most [default: 10, or no limit with --max-minutes]."
    ),
    max_steps: int | None = typer.Option(None, min=1, help="Optimizer steps at most."),
    max_minutes: float | None = typer.Option(
        None, min=0.01, callback=finite, help="Wall-clock budget, minutes."
    ),
    max_tokens: int = typer.Option(RECIPE.max_tokens, min=16, help="Batch size in pieces."),
    lr: float = typer.Option(RECIPE.lr, min=0.0, callback=finite, help="Peak learning rate."),
    warmup: int = typer.Option(RECIPE.warmup, min=1, help="Warmup steps."),
    cooldown: float = typer.Option(
        RECIPE.cooldown,
        min=0.0,
        max=1.0,
        callback=finite,
        help="The budget's last share over which the learning rate falls linearly to 0 (0: off; 1.0: "
        "the whole budget); a run stopped mid-budget resumes from the share it had used.",
    ),
    decay: str = typer.Option(
        RECIPE.decay,
        callback=lambda value: one_of(value, DECAYS),  # the flag named, not the recipe's field
        help="The learning rate between warmup and cooldown: rsqrt (falling as 1/sqrt(step)) or none "
        "(held at its peak; with --cooldown 1.0 a linear decay to 0 over the whole budget).",
    ),
    dropout: float = typer.Option(0.1, min=0.0, max=0.9, callback=finite, help="Dropout."),
    late_dropout: float = recipe_option(
        "late_dropout",
        "Late dropout: raise the dropout to this once the run has seen --late-dropout-from epochs, "
        "linearly over --late-dropout-over epochs (0: off; a --dropout of 0, or above this, stays as it "
        "is); for budgets that buy many epochs.",
    ),
    late_dropout_from: float = typer.Option(
        RECIPE.late_dropout_from, min=0.0, callback=finite, help="The epoch late dropout starts rising."
    ),
    late_dropout_over: float = typer.Option(
        RECIPE.late_dropout_over, min=0.0, callback=finite, help="Epochs late dropout takes to rise."
    ),
    label_smoothing: float = recipe_option("label_smoothing", "Label smoothing of the training loss."),
    weight_decay: float = recipe_option("weight_decay", "AdamW's weight decay (decoupled; every parameter)."),
    subword_alpha: float = recipe_option(
        "subword_alpha",
        "Sample source segmentations each epoch, P(x)^alpha (subword regularization; 0: off).",
    ),
    vocab_size: int = typer.Option(
        RECIPE.vocab_size, min=8, help="Vocabulary size, if the run has no tokenizer."
    ),
    patience: int = typer.Option(
        RECIPE.patience,
        min=0,
        help="Stop after this many validations without a better BLEU (0: off, use the whole budget).",
    ),
    average: int = typer.Option(
        RECIPE.average,
        min=0,
        max=1000,
        help="At the end, validate the mean of the last N validations' weights (0: off).",
    ),
    save_every_minutes: float = typer.Option(
        RECIPE.save_every_minutes,
        min=0.0,
        callback=finite,
        help="Save the training state this often, besides each validation.",
    ),
    device: str = DEVICE,
    seed: int = typer.Option(RECIPE.seed, min=0, max=2**31 - 1, help="Random seed."),
    fp32: bool = typer.Option(False, "--fp32", help="No bf16 autocast, even where it is fast."),
):
    """Train a model (and its tokenizer); rerunning resumes from the run's last checkpoint."""
    from seq2seq.models.registry import ARCHITECTURE_OPTIONS
    from seq2seq.training.distributed import is_main_process
    from seq2seq.training.resume import check_typed_options
    from seq2seq.training.train import train as train_run

    options = {name: ctx.params[name] for name in ARCHITECTURE_OPTIONS}  # those the registry names
    model_config = architecture_config(arch, preset, dropout, options)
    try:  # a combination of options the recipe refuses (TrainConfig.__post_init__)
        config = TrainConfig(
            corpus=corpus,
            src=src,
            tgt=tgt,
            vocab_size=vocab_size,
            max_tokens=max_tokens,
            lr=lr,
            warmup=warmup,
            cooldown=cooldown,
            decay=decay,
            label_smoothing=label_smoothing,
            weight_decay=weight_decay,
            subword_alpha=subword_alpha,
            late_dropout=late_dropout,
            late_dropout_from=late_dropout_from,
            late_dropout_over=late_dropout_over,
            epochs=epochs if epochs is not None else (None if max_minutes else RECIPE.epochs),
            max_steps=max_steps,
            max_minutes=max_minutes,
            patience=patience,
            average=average,
            save_every_minutes=save_every_minutes,
            seed=seed,
            device=device,
            bf16=not fp32,
        )
    except ValueError as e:
        raise typer.BadParameter(str(e)) from None
    run = run_dir(run, corpus, src, tgt)
    for notice in check_typed_options(run, typed_options(ctx)):
        display.warn(notice)
    stop_requested = install_stop_handlers()
    if not is_main_process():  # under torchrun rank 0 alone draws; the others only train
        train_run(run, config, model_config, data_dir, should_stop=stop_requested)
        return
    with display.TrainingDisplay(run) as reporter:
        final = train_run(run, config, model_config, data_dir, reporter, stop_requested)
    display.training_done(run, final)


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
