"""`translate`'s lines: from the arguments, a file or pipe (a group of lines at a time, sorted by
length within it) or a terminal prompt, each group translated, written, then its attention shown
or drawn; exactly one output line per input line, in order."""

import sys
from collections.abc import Iterator

from seq2seq.cli import display
from seq2seq.files.reading import count_lines, line_groups, one_line, stdin_is_terminal
from seq2seq.files.writing import LineWriter

GROUP_BATCHES = 8  # a streamed group is sorted by length into this many batches (Marian's maxi-batch)
PAGE_ALTERNATIVES = 5  # an --attention-html page lists this many alternatives at each output piece


def translate_lines(args, texts: list[str] | None, options, views, steer, loading: tuple) -> None:
    """Translate `texts` (None: --input's lines, or standard input's) with `options`, writing to
    args.output as they come; `loading`, the run, device and quantization to load the model from
    once the output is open."""
    from seq2seq.decoding.search import length_notices, output_room
    from seq2seq.runs.load import load_run

    live = texts is None and args.input is None and stdin_is_terminal()
    progress = args.output is not None and not live
    total = len(texts) if texts else count_lines(args.input) if args.input and progress else None
    with LineWriter(args.output) as writer:
        run, device, quantize = loading
        model, tokenizer = load_run(run, device, quantize=quantize, packed=True)
        for notice in length_notices(model, options):
            display.warn(notice)
        if steer.terms.given:
            lines = len(texts) if texts else None
            steer.terms.check(tokenizer, lines, options.beam, output_room(model, options))
        if live:
            groups = prompted_lines()
        else:
            groups = iter([texts]) if texts else line_groups(args.input, GROUP_BATCHES * options.batch_size)
        with display.line_progress(progress, total) as advance:
            translate_groups(groups, live, advance, (model, tokenizer, writer, options, views, steer))
        views.finish()
        steer.trace.finish()


def translate_groups(groups: Iterator[list[str]], live: bool, advance, work: tuple) -> None:
    """Each group in turn (`work`: what `translate_group` takes beside the lines); Ctrl-C ends a
    live session, and is an interruption anywhere else."""
    done = 0  # input lines translated so far
    try:
        for group in groups:
            translate_group(*work[:2], group, done + 1, *work[2:])
            done += len(group)
            advance(len(group))
    except KeyboardInterrupt:
        if not live:
            raise
        display.prompt("\n")  # Ctrl-C is one way to leave a live session, not an error


def translate_group(model, tokenizer, lines, first, writer, options, views, steer) -> None:
    """Translate lines (the first is line `first` of the input), write them, then show or draw
    their attention."""
    from seq2seq.decoding.search import translate

    prefixes, terms = steer.prefixes_of(first, len(lines)), steer.terms.of(first, lines)
    traced = steer.trace.path is not None
    result = translate(model, tokenizer, lines, options, prefixes, traced, terms)
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
    writer.write(output_lines(result, first, options))
    for number, m in maps.items():
        views.show(first - 1 + number, m)


def output_lines(result, first: int, options) -> list[str]:
    """A line per input line, or with --nbest or --num-samples `index ||| text ||| score` for each
    hypothesis; a blank line is not translated: its one entry is the empty line, score 0."""
    if options.nbest > 1 or options.num_samples > 1:
        return [
            f"{first - 1 + i} ||| {one_line(t)} ||| {s:.4f}"
            for i, hyps in enumerate(result.nbest)
            for t, s in (hyps or [("", 0.0)])
        ]
    return [one_line(t) for t in result.best]


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
