"""The command line: options -> config -> one library call. Only this layer prints or exits."""

import json
import signal
import sys
from pathlib import Path

import typer

from seq2seq import cli_display as display
from seq2seq.allocator import keep_freed_memory
from seq2seq.cli_io import numbered, one_line, read_lines, write_lines
from seq2seq.errors import Seq2SeqError

app = typer.Typer(
    help="Train and run a small encoder-decoder Transformer translator.",
    add_completion=False,
    pretty_exceptions_enable=False,
)

DATA_DIR = typer.Option(
    None, "--data-dir", envvar="SEQ2SEQ_DATA_DIR", help="Local folder in the Multi30k raw layout."
)
CORPUS = typer.Option("multi30k", help="multi30k, a path pattern with {split}, or a hub id[:config].")
RUN = typer.Option(None, "--run", help="Run directory [default: runs/<corpus>-<src>-<tgt>].")
BEAM = typer.Option(5, "--beam", help="Beam size.")
GREEDY = typer.Option(False, "--greedy", help="Greedy search (same as --beam 1).")
LENGTH_PENALTY = typer.Option(1.0, "--length-penalty", help="GNMT length penalty alpha.")
BATCH_SIZE = typer.Option(64, "--batch-size", help="Sentences decoded together.")
DEVICE = typer.Option("auto", "--device", help="auto, cpu or cuda.")


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
    from seq2seq.data import filter_pairs, load_pairs
    from seq2seq.tokenizer import train_tokenizer

    pairs, _ = filter_pairs(load_pairs(corpus, "train", src, tgt, data_dir))
    tokenizer = train_tokenizer((t for pair in pairs for t in pair), run / TOKENIZER, vocab_size)
    sample = pairs[0][0]
    display.tokenizer_trained(
        run / TOKENIZER, tokenizer.vocab_size, len(pairs), sample, tokenizer.pieces(sample)
    )


@app.command()
def train(
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
    device: str = DEVICE,
    seed: int = typer.Option(1, help="Random seed."),
    fp32: bool = typer.Option(False, "--fp32", help="No bf16 autocast, even where it is fast."),
):
    """Train a model (and its tokenizer); rerunning resumes from the run's last checkpoint."""
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
        seed=seed,
        device=device,
        bf16=not fp32,
    )
    run = default_run(run, corpus, src, tgt)
    stop_requested = install_stop_handlers()
    with display.TrainingDisplay(run) as reporter:
        final = train_run(run, config, model_config, data_dir, reporter, stop_requested)
    display.training_done(run, final)


@app.command()
def translate(
    text: list[str] | None = typer.Argument(None, help="Sentences; none: read --input or stdin."),
    run: Path = typer.Option(Path("runs/multi30k-en-fr"), "--run", help="Run directory."),
    beam: int = BEAM,
    greedy: bool = GREEDY,
    nbest: int = typer.Option(1, "--nbest", help="Print the K best as `index ||| text ||| score`."),
    length_penalty: float = LENGTH_PENALTY,
    min_len: int = typer.Option(0, "--min-len", help="Output pieces at least."),
    max_len: int | None = typer.Option(None, "--max-len", help="Output pieces at most."),
    batch_size: int = BATCH_SIZE,
    input: Path | None = typer.Option(None, "--input", help="File with one sentence a line."),
    output: Path | None = typer.Option(None, "--output", help="Write translations here."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Recompute the prefix every step."),
    device: str = DEVICE,
    show_attention: bool = typer.Option(
        False, "--show-attention", help="Show each translation's cross-attention (on stderr)."
    ),
    attention_png: Path | None = typer.Option(
        None, "--attention-png", help="Draw all attention maps into FILE (several lines: FILE-<line>.png)."
    ),
    layer: int | None = typer.Option(None, "--layer", help="Layer of the maps, from 1 [default: last]."),
    head: int | None = typer.Option(None, "--head", help="Head of the maps, from 1 [default: their mean]."),
):
    """Translate sentences: exactly one output line per input line, in order."""
    from seq2seq.checkpoint import load_run
    from seq2seq.decode import DecodeOptions
    from seq2seq.decode import translate as translate_lines
    from seq2seq.train import resolve_device

    views = show_attention or attention_png is not None
    for name, value in (("--layer", layer), ("--head", head)):
        if value is not None and not views:
            raise typer.BadParameter("goes with --show-attention or --attention-png", param_hint=name)
    if attention_png is not None:
        from seq2seq import plots

        plots.require()

    options = DecodeOptions(
        beam=1 if greedy else beam,
        nbest=nbest,
        length_penalty=length_penalty,
        min_len=min_len,
        max_len=max_len,
        use_cache=not no_cache,
        batch_size=batch_size,
    )
    options.check()
    lines = text if text else read_lines(input)
    model, tokenizer = load_run(run, resolve_device(device))
    result = translate_lines(model, tokenizer, lines, options)
    if result.truncated:
        display.warn(
            f"{result.truncated} line(s) longer than the model's "
            f"{model.cfg.max_positions - 1} pieces were truncated"
        )
    maps = {}
    if views:
        from seq2seq.attention import check_choice, maps_of_translations

        maps = maps_of_translations(model, tokenizer, lines, result)
        if maps:  # a bad --layer/--head is refused before anything is written
            check_choice(next(iter(maps.values())), layer, head)
    if nbest > 1:
        out = [f"{i} ||| {one_line(t)} ||| {s:.4f}" for i, hyps in enumerate(result.nbest) for t, s in hyps]
    else:
        out = [one_line(t) for t in result.best]
    write_lines(out, output)
    for number, m in maps.items():
        if show_attention:
            display.attention_heatmap(m, layer, head)
        if attention_png is not None:
            path = attention_png if len(maps) == 1 else numbered(attention_png, number)
            plots.attention_png(m, path, layer, head)


@app.command()
def evaluate(
    run: Path = typer.Option(Path("runs/multi30k-en-fr"), "--run", help="Run directory."),
    data_dir: str | None = DATA_DIR,
    split: str = typer.Option("test_2016_flickr", help="Corpus split to translate and score."),
    source: Path | None = typer.Option(None, "--source", help="Source file (with --reference)."),
    reference: Path | None = typer.Option(None, "--reference", help="Reference file."),
    beam: int = BEAM,
    greedy: bool = GREEDY,
    length_penalty: float = LENGTH_PENALTY,
    batch_size: int = BATCH_SIZE,
    output: Path | None = typer.Option(None, "--output", help="Write the hypotheses here."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    device: str = DEVICE,
):
    """Translate a test set and print BLEU and chrF with their sacreBLEU signatures."""
    from seq2seq.checkpoint import load_config, load_run
    from seq2seq.data import load_pairs
    from seq2seq.decode import DecodeOptions
    from seq2seq.evaluate import evaluate as evaluate_pairs
    from seq2seq.train import resolve_device

    options = DecodeOptions(beam=1 if greedy else beam, length_penalty=length_penalty, batch_size=batch_size)
    options.check()
    if (source is None) != (reference is None):
        raise typer.BadParameter("--source and --reference go together", param_hint="--source")
    if source is not None:
        sources, references = read_lines(source), read_lines(reference)
        if len(sources) != len(references):
            raise Seq2SeqError(f"{source} has {len(sources)} lines but {reference} has {len(references)}")
        pairs, what = list(zip(sources, references, strict=True)), f"{source}"
    else:
        cfg = load_config(run)["train"]
        pairs = load_pairs(cfg["corpus"], split, cfg["src"], cfg["tgt"], data_dir)
        what = f"{cfg['corpus']} {split} {cfg['src']}->{cfg['tgt']}"
    model, tokenizer = load_run(run, resolve_device(device))
    result = evaluate_pairs(model, tokenizer, pairs, options)
    if output is not None:
        write_lines([one_line(h) for h in result.hypotheses], output)
    report = {
        "bleu": round(result.scores.bleu, 2),
        "chrf": round(result.scores.chrf, 2),
        "signature": result.scores.signature,
        "bleu_signature": result.scores.bleu_signature,
        "chrf_signature": result.scores.chrf_signature,
        "sentences": result.scores.sentences,
        "seconds": round(result.seconds, 2),
        "beam": options.beam,
        "test_set": what,
        "run": str(run),
    }
    if as_json:
        print(json.dumps(report))
    else:
        display.scores(report)


@app.command()
def score(
    source: Path = typer.Option(..., "--source", help="Source sentences, one a line."),
    target: Path = typer.Option(..., "--target", help="Their translations, one a line."),
    run: Path = typer.Option(Path("runs/multi30k-en-fr"), "--run", help="Run directory."),
    length_penalty: float = LENGTH_PENALTY,
    batch_size: int = BATCH_SIZE,
    as_json: bool = typer.Option(False, "--json", help="One JSON object a line."),
    device: str = DEVICE,
):
    """The model's log-probability of given translations: a line `score total mean pieces` per pair
    (score = total / length penalty, the number `translate --nbest` prints for the same output)."""
    from seq2seq.checkpoint import load_run
    from seq2seq.forced import score_pairs
    from seq2seq.train import resolve_device

    if batch_size < 1:
        raise typer.BadParameter("must be at least 1", param_hint="--batch-size")
    sources, targets = read_lines(source), read_lines(target)
    if len(sources) != len(targets):
        raise Seq2SeqError(f"{source} has {len(sources)} lines but {target} has {len(targets)}")
    model, tokenizer = load_run(run, resolve_device(device))
    scores = score_pairs(model, tokenizer, sources, targets, length_penalty, batch_size)
    if as_json:
        out = [
            json.dumps({"score": s.score, "total": s.total, "mean": s.mean, "pieces": s.pieces})
            for s in scores
        ]
    else:
        out = [f"{s.score:.4f}\t{s.total:.4f}\t{s.mean:.4f}\t{s.pieces}" for s in scores]
    write_lines(out, None)


@app.command()
def export(
    output: Path = typer.Argument(..., help="The model directory to write."),
    run: Path = typer.Option(Path("runs/multi30k-en-fr"), "--run", help="Run directory."),
    to: str = typer.Option("ctranslate2", "--to", help="Engine: ctranslate2."),
    quantization: str | None = typer.Option(None, help="int8, int8_float32, bfloat16, ... [default: fp32]"),
    force: bool = typer.Option(False, "--force", help="Replace OUTPUT if it exists."),
):
    """Convert a run for another inference engine (CTranslate2), the same weights and vocabulary."""
    from seq2seq.export import export_ctranslate2

    if to != "ctranslate2":
        raise typer.BadParameter(f"{to!r} is not one of ctranslate2", param_hint="--to")
    out = export_ctranslate2(run, output, quantization, force)
    display.exported(out, quantization)


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
    rnn_options = {"attention": attention, "score": score, "cell": cell}
    if arch == "transformer":
        given = [f"--{name}" for name, value in rnn_options.items() if value is not None]
        if given:
            raise typer.BadParameter(f"{', '.join(given)} is for --arch rnn", param_hint="--arch")
        rnn_options = {}
    else:
        attention = rnn_options["attention"] = attention or "bahdanau"
        rnn_options["cell"] = cell or "gru"
        if attention == "luong" and score is None:
            rnn_options["score"] = "general"
    try:
        return preset_config(arch, preset, dropout=dropout, **rnn_options)
    except ValueError as e:
        raise typer.BadParameter(str(e)) from None


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
    except BrokenPipeError:  # `seq2seq translate ... | head`: the reader left, nothing to report
        sys.stderr.close()
        code = 0
    sys.exit(code if isinstance(code, int) else 0)
