"""`translate`'s lines: from the arguments, a file or pipe (a group of lines at a time, sorted by
length within it) or a terminal prompt, each group translated (seq2seq/stream), written, then its
attention shown or drawn; exactly one output line per input line, in order."""

import sys
from collections.abc import Iterator

from seq2seq.cli import display
from seq2seq.files.reading import count_lines, line_groups, stdin_is_terminal
from seq2seq.files.writing import LineWriter

GROUP_BATCHES = 8  # a streamed group is sorted by length into this many batches (Marian's maxi-batch)


def translate_lines(
    args, texts: list[str] | None, options, views, steer, loading: tuple, policy: dict
) -> None:
    """Translate `texts` (None: --input's lines, or standard input's) with `options`, writing to
    args.output as they come; `loading`, the run, device and quantization to load the model from
    once the output is open; `policy`, the request's case and avoid_exact."""
    from seq2seq.runs.load import load_run
    from seq2seq.stream.lines import LineTranslator

    live = texts is None and args.input is None and stdin_is_terminal()
    progress = args.output is not None and not live
    total = len(texts) if texts else count_lines(args.input) if args.input and progress else None
    with LineWriter(args.output) as writer:
        run, device, quantize = loading
        model, tokenizer = load_run(run, device, quantize=quantize, packed=True)
        translator = LineTranslator(model, tokenizer, options, steer, views, confidence_of(args, run), policy)
        for notice in translator.notices(texts or None):
            display.warn(notice)
        if live:
            groups = prompted_lines()
        else:
            groups = iter([texts]) if texts else line_groups(args.input, GROUP_BATCHES * options.batch_size)
        with display.line_progress(progress, total) as advance:
            translate_groups(groups, live, advance, translator, (writer, views))
        views.finish()
        steer.trace.finish()


def translate_groups(groups: Iterator[list[str]], live: bool, advance, translator, out: tuple) -> None:
    """Each group in turn, translated, written to `out`'s writer, then its maps shown by `out`'s
    views; Ctrl-C ends a live session, and is an interruption anywhere else."""
    writer, views = out
    done = 0  # input lines translated so far
    try:
        for lines in groups:
            group = translator.translate(lines, done + 1)
            for notice in group.notices:
                display.warn(notice)
            writer.write(group.output_lines())
            for number, maps in group.maps.items():
                views.show(number, maps, group.marks.get(number))
            done += len(lines)
            advance(len(lines))
    except KeyboardInterrupt:
        if not live:
            raise
        display.prompt("\n")  # Ctrl-C is one way to leave a live session, not an error


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


def confidence_of(args, run) -> tuple | None:
    """--confidence's form, and the run's trust calibration (the package's where it has none)."""
    from seq2seq.trust.calibration import Calibration

    return None if args.confidence is None else (args.confidence, Calibration.of_run(run))
