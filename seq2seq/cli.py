"""The command line: options -> config -> one library call. Only this layer prints or exits."""

import os
import signal
import sys
from pathlib import Path

import typer

from seq2seq import cli_display as display
from seq2seq.allocator import keep_freed_memory
from seq2seq.cli_io import ReaderLeft
from seq2seq.cli_options import CORPUS, DATA_DIR, DEVICE, RUN
from seq2seq.cli_serve import serve
from seq2seq.cli_translate import translate
from seq2seq.cli_use import evaluate, export, score
from seq2seq.errors import Seq2SeqError

app = typer.Typer(
    help="Train and run a small encoder-decoder Transformer translator.",
    add_completion=False,
    pretty_exceptions_enable=False,
)


def default_run(run: Path | None, corpus: str, src: str, tgt: str) -> Path:
    from seq2seq.data import corpus_name

    return run or Path("runs") / f"{corpus_name(corpus)}-{src}-{tgt}"


@app.command()
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
    from seq2seq.checkpoint import BEST, LAST, TOKENIZER
    from seq2seq.tokenizer import Tokenizer

    run = default_run(run, corpus, src, tgt)
    if text is not None:
        tokenizer = Tokenizer(run / TOKENIZER)
        display.pieces(text, tokenizer.pieces(text), tokenizer.encode([text])[0])
        return
    if (run / BEST).exists() or (run / LAST).exists():
        raise Seq2SeqError(f"{run} already has trained weights; a new tokenizer needs a new --run")
    if vocab_size < 8:
        raise typer.BadParameter("must be at least 8", param_hint="--vocab-size")
    from seq2seq.data import load_pairs
    from seq2seq.lock import run_lock
    from seq2seq.tokenizer import train_tokenizer

    with run_lock(run):
        pairs = load_pairs(corpus, "train", src, tgt, data_dir)  # all of them, as `train` does
        tokenizer = train_tokenizer((t for pair in pairs for t in pair), run / TOKENIZER, vocab_size)
    sample = pairs[0][0]
    display.tokenizer_trained(
        run / TOKENIZER, tokenizer.vocab_size, len(pairs), sample, tokenizer.pieces(sample)
    )


@app.command()
def train(
    ctx: typer.Context,
    data_dir: str | None = DATA_DIR,
    corpus: str = CORPUS,
    src: str = typer.Option("en", help="Source language."),
    tgt: str = typer.Option("fr", help="Target language."),
    run: Path | None = RUN,
    preset: str = typer.Option("small", help="Model shape: tiny, small or base (transformer)."),
    arch: str = typer.Option("transformer", "--arch", help="transformer or rnn."),
    attention: str | None = typer.Option(None, help="rnn: bahdanau (additive; default) or luong."),
    score: str | None = typer.Option(None, help="rnn with luong attention: general (default) or dot."),
    cell: str | None = typer.Option(None, help="rnn: gru (default) or lstm."),
    epochs: int | None = typer.Option(
        None, min=1, help="Epochs at most [default: 10, or no limit with --max-minutes]."
    ),
    max_steps: int | None = typer.Option(None, min=1, help="Optimizer steps at most."),
    max_minutes: float | None = typer.Option(None, min=0.01, help="Wall-clock budget, minutes."),
    max_tokens: int = typer.Option(3072, min=16, help="Batch size in pieces."),
    lr: float = typer.Option(1e-3, min=0.0, help="Peak learning rate."),
    warmup: int = typer.Option(800, min=1, help="Warmup steps."),
    dropout: float = typer.Option(0.1, min=0.0, max=0.9, help="Dropout."),
    vocab_size: int = typer.Option(8000, min=8, help="Vocabulary size, if the run has no tokenizer."),
    patience: int = typer.Option(5, min=1, help="Validations without improvement before stopping."),
    save_every_minutes: float = typer.Option(
        5.0, min=0.0, help="Save the training state this often, besides each validation."
    ),
    device: str = DEVICE,
    seed: int = typer.Option(1, help="Random seed."),
    fp32: bool = typer.Option(False, "--fp32", help="No bf16 autocast, even where it is fast."),
):
    """Train a model (and its tokenizer); rerunning resumes from the run's last checkpoint."""
    from seq2seq.distributed import is_main_process
    from seq2seq.train import TrainConfig
    from seq2seq.train import train as train_run

    model_config = architecture_config(arch, preset, attention, score, cell, dropout)
    config = TrainConfig(
        corpus=corpus,
        src=src,
        tgt=tgt,
        vocab_size=vocab_size,
        max_tokens=max_tokens,
        lr=lr,
        warmup=warmup,
        epochs=epochs if epochs is not None else (None if max_minutes else 10),
        max_steps=max_steps,
        max_minutes=max_minutes,
        patience=patience,
        save_every_minutes=save_every_minutes,
        seed=seed,
        device=device,
        bf16=not fp32,
    )
    run = default_run(run, corpus, src, tgt)
    refuse_unhonoured_options(ctx, run, config)
    stop_requested = install_stop_handlers()
    if not is_main_process():  # under torchrun rank 0 alone draws; the others only train
        train_run(run, config, model_config, data_dir, should_stop=stop_requested)
        return
    with display.TrainingDisplay(run) as reporter:
        final = train_run(run, config, model_config, data_dir, reporter, stop_requested)
    display.training_done(run, final)


for command in (translate, evaluate, score, export, serve):  # the commands that use a trained run
    app.command()(command)


# --- helpers the commands share -----------------------------------------------------------------


def architecture_config(arch: str, preset: str, attention, score, cell, dropout: float):
    """The model config the options describe; an option the architecture does not have is an
    error, never silently ignored."""
    from seq2seq.model import ARCHITECTURES, preset_config

    if arch not in ARCHITECTURES:
        raise typer.BadParameter(f"{arch!r} is not one of {', '.join(ARCHITECTURES)}", param_hint="--arch")
    presets = ARCHITECTURES[arch][2]
    if preset not in presets:
        raise typer.BadParameter(f"{preset!r} is not one of {', '.join(presets)}", param_hint="--preset")
    given = {k: v for k, v in {"attention": attention, "score": score, "cell": cell}.items() if v is not None}
    if arch == "transformer" and given:
        raise typer.BadParameter(
            f"{', '.join(f'--{k}' for k in given)} is for --arch rnn", param_hint="--arch"
        )
    try:
        return preset_config(arch, preset, dropout=dropout, **given)
    except ValueError as e:
        raise typer.BadParameter(str(e)) from None


MODEL_OPTIONS = ("preset", "arch", "attention", "score", "cell", "dropout")


def refuse_unhonoured_options(ctx: typer.Context, run: Path, config) -> None:
    """A resumed run keeps its model and recipe; only the limits (--epochs, --max-steps, ...) are
    the new command's. An option given to change the rest is refused, never silently ignored."""
    from dataclasses import fields

    from seq2seq import checkpoint as ckpt
    from seq2seq.model import ARCHITECTURES
    from seq2seq.train import LIMITS, stored_train_config

    sources = {n: getattr(ctx.get_parameter_source(n), "name", "") for n in ctx.params}
    given = {n for n, source in sources.items() if source in ("COMMANDLINE", "ENVIRONMENT")}
    if not (run / ckpt.LAST).is_file():
        if "vocab_size" in given and (run / ckpt.TOKENIZER).is_file():
            from seq2seq.tokenizer import Tokenizer

            pieces = Tokenizer(run / ckpt.TOKENIZER).vocab_size
            if pieces != config.vocab_size:  # a ceiling SentencePiece may not have reached: say, not refuse
                display.warn(f"--vocab-size is not used: {run} already has a tokenizer of {pieces} pieces")
        return
    stored = stored_train_config(run)
    for name in sorted(given & {f.name for f in fields(stored)} - set(LIMITS)):
        if getattr(config, name) != getattr(stored, name):
            raise Seq2SeqError(
                f"{run} was started with --{name.replace('_', '-')} {getattr(stored, name)}; a resumed "
                "run keeps it (start a new --run to change it)"
            )
    stored_model = ckpt.model_config(ckpt.load_config(run))
    for name in [n for n in MODEL_OPTIONS if n in given]:
        value = ctx.params[name]
        if name == "preset":  # the shape that preset gives the run's own architecture
            shape = ARCHITECTURES[stored_model.arch][2].get(value)
            same = shape is not None and all(getattr(stored_model, k) == v for k, v in shape.items())
        else:
            same = getattr(stored_model, name, None) == value
        if not same:
            raise Seq2SeqError(
                f"{run} holds another model than --{name} {value} describes; a resumed run keeps its "
                "model (start a new --run to change it)"
            )


def install_stop_handlers():
    """Ctrl-C or SIGTERM asks training to stop after the current step, validate and save; a
    second Ctrl-C stops at once."""
    requested = []

    def handler(signum, frame):
        requested.append(signum)
        signal.signal(signum, signal.SIG_DFL)

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, handler)
    return lambda: bool(requested)


# click's UsageError, wherever this Typer version keeps click (newer releases vendor it)
UsageError = typer.BadParameter.__mro__[1]


def main() -> None:
    """Run the app with every error as one line on stderr: exit 2 for bad input or usage."""
    if len(sys.argv) == 1:
        sys.argv.append("--help")
    keep_freed_memory()
    try:
        code = app(standalone_mode=False)
    except UsageError as e:
        hint = f" (see `{e.ctx.command_path} --help`)" if e.ctx else ""
        display.error(e.format_message() + hint)
        code = 2
    except Seq2SeqError as e:
        display.error(str(e))
        code = 2
    except typer.Abort:  # Ctrl-C outside training
        display.error("interrupted")
        code = 130
    except ReaderLeft:  # `seq2seq translate ... | head`: the reader left, nothing to report
        # what is still buffered would fail again at exit (status 120): send it nowhere instead
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 0
    except Exception as e:  # torch's OutOfMemoryError; torch is imported by then if it can occur
        torch = sys.modules.get("torch")
        if torch is None or not isinstance(e, torch.cuda.OutOfMemoryError):
            raise
        display.error(
            "out of GPU memory: lower --max-tokens (train) or --batch-size (translate, evaluate, "
            "score); the run's last checkpoint is kept"
        )
        code = 2
    sys.exit(code if isinstance(code, int) else 0)
