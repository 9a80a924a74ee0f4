"""`seq2seq translate`: sentences from the arguments, a file, a pipe (streamed, a group of lines at a
time) or a terminal (a prompt, a line at a time); exactly one output line per input line."""

import sys
from collections.abc import Iterator
from pathlib import Path

import typer

from seq2seq.cli import display
from seq2seq.cli.document import check_alone, read_document, translate_file
from seq2seq.cli.io import arguments, count_lines, line_groups, one_line, stdin_is_terminal
from seq2seq.cli.options import (
    DEVICE,
    QUANTIZE,
    RUN,
    check_precision,
    decode_parameters,
    decoding,
    run_dir,
    with_parameters,
)
from seq2seq.cli.outputs import LineWriter, Outputs
from seq2seq.cli.steer import Steer, Terms, TraceFile, check_count, prefix_lines, whole
from seq2seq.cli.views import PAGE_MB, Views
from seq2seq.documents.formats import format_of

GROUP_BATCHES = 8  # a streamed group is sorted by length into this many batches (Marian's maxi-batch)
PAGE_ALTERNATIVES = 5  # an --attention-html page lists this many alternatives at each output piece


def translate(
    text: list[str] | None = typer.Argument(
        None, metavar="TEXT...", help="Sentences; none: read --input or stdin."
    ),
    run: Path | None = RUN,
    input: Path | None = typer.Option(None, "--input", help="File with one sentence a line."),
    output: Path | None = typer.Option(None, "--output", help="Write translations here."),
    device: str = DEVICE,
    quantize: str | None = QUANTIZE,
    show_attention: bool = typer.Option(
        False, "--show-attention", help="Show each translation's cross-attention (on stderr)."
    ),
    attention_png: Path | None = typer.Option(
        None, "--attention-png", help="Draw all attention maps into FILE (several lines: FILE-<line>.png)."
    ),
    attention_html: Path | None = typer.Option(
        None,
        "--attention-html",
        help=f"The attention explorer of every line as one offline HTML file (a notice past {PAGE_MB} MB).",
    ),
    layer: int | None = typer.Option(None, "--layer", help="Layer of the maps, from 1 [default: last]."),
    head: int | None = typer.Option(None, "--head", help="Head of the maps, from 1 [default: their mean]."),
    prefix: str | None = typer.Option(None, "--prefix", help="Every translation starts with TEXT's pieces."),
    prefix_file: Path | None = typer.Option(
        None, "--prefix-file", help="One prefix a line of input (an empty line: none)."
    ),
    beam_trace: Path | None = typer.Option(
        None, "--beam-trace", help="Write each line's beam (kept, finished, pruned) to FILE as JSON lines."
    ),
    constraint: list[str] | None = typer.Option(
        None, "--constraint", help="Every translation holds TEXT's pieces (repeatable; beam search)."
    ),
    avoid: list[str] | None = typer.Option(
        None, "--avoid", help="No translation holds TEXT's pieces (repeatable; beam search)."
    ),
    constraints_file: Path | None = typer.Option(
        None,
        "--constraints-file",
        help='One line\'s constraints a line of input: a JSON list, {"include": [...], "avoid": [...]}, '
        "or terms separated by tabs (an empty line: none).",
    ),
    glossary: Path | None = typer.Option(
        None,
        "--glossary",
        help="Lines 'source term<TAB>target term': a line holding a source term (whole words) is "
        "translated with its target term.",
    ),
    ignore_case: bool = typer.Option(
        False, "--ignore-case", help="--glossary: match the source terms in any case."
    ),
    format: str | None = typer.Option(
        None,
        "--format",
        help="lines (a line in, a line out), text (paragraphs), markdown, html or srt: the input read "
        "and written whole as a document [default: by --input's suffix, else lines].",
    ),
    **given,
):
    """Translate sentences: exactly one output line per input line, in order. From a terminal with
    no TEXT or --input: a prompt, a translation per line entered (an empty line or Ctrl-D ends)."""
    from seq2seq.decoding.search import length_notices, output_room
    from seq2seq.runs.load import load_run

    run = run_dir(run)
    outputs = Outputs(
        input, prefix_file, constraints_file, glossary, run=run, stdin=input is None and not text
    )
    for flag, path in (
        ("--output", output),
        ("--attention-png", attention_png),
        ("--attention-html", attention_html),
        ("--beam-trace", beam_trace),
    ):
        outputs.claim(flag, path)
    views = Views(show_attention, attention_png, layer, head, attention_html, run, outputs)
    for name, value in (("--layer", layer), ("--head", head)):
        if value is not None and not (show_attention or attention_png):
            raise typer.BadParameter("goes with --show-attention or --attention-png", param_hint=name)
    if attention_png is not None:
        from seq2seq.views import plots

        plots.require()
    options = decoding(given)
    check_precision(quantize, options.bf16)
    document = format_of(input, format)
    if document != "lines":
        check_alone({"TEXT": text, "--nbest": options.nbest > 1, "--num-samples": options.num_samples > 1,
                     "--show-attention": show_attention, "--attention-png": attention_png,
                     "--attention-html": attention_html, "--beam-trace": beam_trace, "--prefix": prefix,
                     "--prefix-file": prefix_file, "--constraint": constraint, "--avoid": avoid,
                     "--constraints-file": constraints_file, "--glossary": glossary})  # fmt: skip
    if beam_trace is not None and options.sample:
        raise typer.BadParameter("records beam search; --sample has no beam", param_hint="--beam-trace")
    if document != "lines":
        source = read_document(input)  # read before anything is written: --output may be a pipe
        model, tokenizer = load_run(run, device, quantize=quantize, packed=True)
        translate_file(model, tokenizer, source, document, options, output)
        return
    texts = arguments(text) if text else None
    prefixes = prefix_lines(prefix, prefix_file)
    terms = Terms(constraint, avoid, constraints_file, glossary, ignore_case)
    if terms.given:
        options.check_terms()
    if prefixes is not None or terms.per_line is not None:  # read the input whole: the files must
        texts = texts or whole(input)  # pair up with it before anything is written
    if prefixes is not None:
        check_count(prefixes, len(texts), prefix_file)
    steer = Steer(prefix, prefixes, TraceFile(beam_trace), terms)
    live = texts is None and input is None and stdin_is_terminal()
    progress = output is not None and not live
    total = len(texts) if texts else count_lines(input) if input and progress else None
    with LineWriter(output) as writer:
        model, tokenizer = load_run(run, device, quantize=quantize, packed=True)
        for notice in length_notices(model, options):
            display.warn(notice)
        if terms.given:
            terms.check(tokenizer, len(texts) if texts else None, options.beam, output_room(model, options))
        if live:
            groups = prompted_lines()
        else:
            groups = iter([texts]) if texts else line_groups(input, GROUP_BATCHES * options.batch_size)
        done = 0  # input lines translated so far
        with display.line_progress(progress, total) as advance:
            try:
                for group in groups:
                    translate_group(model, tokenizer, group, done + 1, writer, options, views, steer)
                    done += len(group)
                    advance(len(group))
            except KeyboardInterrupt:
                if not live:
                    raise
                display.prompt("\n")  # Ctrl-C is one way to leave a live session, not an error
        views.finish()
        steer.trace.finish()


with_parameters(translate, decode_parameters())


def translate_group(model, tokenizer, lines, first, writer, options, views, steer) -> None:
    """Translate lines (the first is line `first` of the input), write them, then show or draw
    their attention."""
    from seq2seq.decoding.search import translate as translate_lines

    prefixes, terms = steer.of(first, len(lines)), steer.terms.of(first, lines)
    traced = steer.trace.path is not None
    result = translate_lines(model, tokenizer, lines, options, prefixes, traced, terms)
    if result.truncated:
        display.warn(
            f"{result.truncated} of lines {first}-{first + len(lines) - 1} were longer than the model's "
            f"{model.cfg.max_positions - 1} pieces and were truncated"
        )
    maps = {}
    if views.wanted:
        from seq2seq.decoding.attention import check_choice, maps_of_translations

        alternatives = PAGE_ALTERNATIVES if views.html is not None else 0
        maps = maps_of_translations(model, tokenizer, lines, result, options, prefixes, alternatives)
        if maps:  # a bad --layer/--head is refused before anything of this group is written
            check_choice(next(iter(maps.values())), views.layer, views.head)
    if traced:
        steer.trace.add(tokenizer, first, lines, prefixes, result.traces, terms)
    # a blank line is not translated: its one entry is the empty line, score 0
    if options.nbest > 1 or options.num_samples > 1:
        out = [
            f"{first - 1 + i} ||| {one_line(t)} ||| {s:.4f}"
            for i, hyps in enumerate(result.nbest)
            for t, s in (hyps or [("", 0.0)])
        ]
    else:
        out = [one_line(t) for t in result.best]
    writer.write(out)
    for number, m in maps.items():
        views.show(first - 1 + number, m)


def prompted_lines() -> Iterator[list[str]]:
    """Lines typed at a terminal, one at a time, until an empty line or Ctrl-D."""
    while True:
        display.prompt("> ")
        raw = sys.stdin.buffer.readline()
        if not raw:  # Ctrl-D: end the prompt's line
            display.prompt("\n")
            return
        try:
            line = raw.decode("utf-8").removesuffix("\n").removesuffix("\r")
        except UnicodeDecodeError:
            display.warn("that line is not valid UTF-8; type it again")
            continue
        if not line.strip():
            return
        yield [line]
