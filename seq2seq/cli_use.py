"""The commands that use a trained run: translate, evaluate, score, export. Plain functions that
`cli.py` registers on the app; like it, this layer alone prints or exits."""

import json
from pathlib import Path

import typer

from seq2seq import cli_display as display
from seq2seq.cli_io import arguments, numbered, one_line, read_lines, write_lines
from seq2seq.cli_options import BATCH_SIZE, BEAM, DATA_DIR, DEVICE, GREEDY, LENGTH_PENALTY
from seq2seq.errors import Seq2SeqError


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
    lines = arguments(text) if text else read_lines(input)
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

        maps = maps_of_translations(model, tokenizer, lines, result, batch_size)
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
