"""`seq2seq translate`: sentences from the arguments, a file, a pipe (streamed, a group of lines at a
time) or a terminal (a prompt, a line at a time); exactly one output line per input line. Or a
document (--format), read and written whole. Its own options are `TranslateArgs`' fields, the
decoding options DecodeOptions'; the lines are translated by cli/lines.py."""

from dataclasses import dataclass
from pathlib import Path

import typer

from seq2seq.cli import display
from seq2seq.cli.document import translate_document_file
from seq2seq.cli.lines import translate_lines
from seq2seq.cli.options import (
    DEVICE,
    QUANTIZE,
    RUN,
    check_precision,
    decoding,
    fields,
    one_of,
    request_fields,
    run_dir,
)
from seq2seq.decoding.options import DecodeOptions
from seq2seq.documents.formats import format_of
from seq2seq.fields import option
from seq2seq.files.reading import arguments
from seq2seq.files.writing import Outputs
from seq2seq.stream.steer import Steer
from seq2seq.stream.views import PAGE_MB, Views


@dataclass
class TranslateArgs:
    """`translate`'s own options (beside --run, --device, --quantize and the decoding options)."""

    input: Path | None = option(None, "File with one sentence a line.")
    output: Path | None = option(None, "Write translations here.")
    show_attention: bool = option(
        False, flag="--show-attention", help="Show each translation's cross-attention (on stderr)."
    )
    attention_png: Path | None = option(
        None, "Draw all attention maps into FILE (several lines: FILE-<line>.png)."
    )
    attention_html: Path | None = option(
        None, f"The attention explorer of every line as one offline HTML file (a notice past {PAGE_MB} MB)."
    )
    layer: int | None = option(None, "Layer of the maps, from 1 [default: last].")
    head: int | None = option(None, "Head of the maps, from 1 [default: their mean].")
    prefix: str | None = option(None, "Every translation starts with TEXT's pieces.")
    prefix_file: Path | None = option(None, "One prefix a line of input (an empty line: none).")
    beam_trace: Path | None = option(
        None, "Write each line's beam (kept, finished, pruned) to FILE as JSON lines."
    )
    constraint: list[str] | None = option(
        None, "Every translation holds TEXT's pieces (repeatable; beam search)."
    )
    avoid: list[str] | None = option(None, "No translation holds TEXT's pieces (repeatable; beam search).")
    constraints_file: Path | None = option(
        None,
        'One line\'s constraints a line of input: a JSON list, {"include": [...], "avoid": [...]}, '
        "or terms separated by tabs (an empty line: none).",
    )
    glossary: Path | None = option(
        None,
        "Lines 'source term<TAB>target term': a line holding a source term (whole words) is "
        "translated with its target term.",
    )
    ignore_case: bool = option(
        False, flag="--ignore-case", help="--glossary: match the source terms in any case."
    )
    format: str | None = option(
        None,
        "lines (a line in, a line out), text (paragraphs), markdown, html or srt: the input read "
        "and written whole as a document [default: by --input's suffix, else lines].",
    )
    confidence: str | None = option(
        None,
        "How far to trust each line: marks (the translation with (?) after each word to check, a "
        "tab, its score, a tab, its flags) or json (an object a line: translation, score, "
        "omission, hallucination, flags, words, uncovered).",
    )

    def outputs(self, run: Path, text: list[str] | None) -> Outputs:
        """What the command reads, and each file it writes claimed against it before any work."""
        outputs = Outputs(
            self.input, self.prefix_file, self.constraints_file, self.glossary, run=run,
            stdin=self.input is None and not text,
        )  # fmt: skip
        outputs.claim_fields(self, "output", "attention_png", "attention_html", "beam_trace")
        return outputs


def translate(
    text: list[str] | None = typer.Argument(
        None, metavar="TEXT...", help="Sentences; none: read --input or stdin."
    ),
    run: Path | None = RUN,
    device: str = DEVICE,
    quantize: str | None = QUANTIZE,
    args: TranslateArgs = fields(TranslateArgs),
    policy: dict = request_fields(),
    options: DecodeOptions = decoding(),
):
    """Translate sentences: exactly one output line per input line, in order. From a terminal with
    no TEXT or --input: a prompt, a translation per line entered (an empty line or Ctrl-D ends)."""
    run = run_dir(run)
    views = Views.of(args, run, args.outputs(run, text), display.attention_heatmap, display.warn)
    check_precision(quantize, options.bf16)
    document = format_of(args.input, args.format)
    if document != "lines":
        return translate_document_file(args, text, document, options, run, (device, quantize), views, policy)
    if args.confidence is not None:
        from seq2seq.stream.lines import CONFIDENCE

        one_of(args.confidence, CONFIDENCE, "--confidence")
    steer, texts = Steer.of(args, arguments(text) if text else None, options)
    translate_lines(args, texts, options, views, steer, (run, device, quantize), policy)
