"""`translate --format text|markdown|html|srt` (or a file of one of those suffixes): the document
read whole, translated (seq2seq/documents) and written whole: to --output, or standard output."""

from pathlib import Path

from seq2seq.cli import display
from seq2seq.errors import Seq2SeqError
from seq2seq.files.reading import _open, _read_some
from seq2seq.files.writing import OutputFile

MAX_DOCUMENT = 16 << 20  # bytes: a document is read, parsed and placed whole, in memory


def read_document(path: Path | None) -> str:
    """A document's text: UTF-8 (a byte-order mark dropped), never binary (refused at the first
    chunk that holds a NUL), at most MAX_DOCUMENT bytes; one line naming the file and line
    otherwise."""
    name = str(path) if path else "standard input"
    with _open(path, name) as stream:
        chunks, size = [], 0
        while data := _read_some(stream, name):
            if b"\x00" in data:
                raise Seq2SeqError(f"{name} holds NUL bytes: a binary file, not a document")
            size += len(data)
            if size > MAX_DOCUMENT:
                raise Seq2SeqError(
                    f"{name} is above {MAX_DOCUMENT >> 20} MiB, the most a document may be; split it"
                )
            chunks.append(data)
    raw = b"".join(chunks)
    try:
        return raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        raise Seq2SeqError(f"{name}: line {line} is not valid UTF-8") from None


def translate_document_file(
    args, text, format: str, options, run: Path, loading: tuple, views, policy
) -> None:
    """`translate`'s document: alone (no TEXT, nor the views that go with lines), read, translated
    and written whole through the one request; the notices (tags kept at a sentence's end,
    sentences cut) on stderr; with --attention-html, the explorer of its sentences."""
    from seq2seq.alignment.runs import placing_method  # tags placed through the run's best reading
    from seq2seq.request.request import TranslationRequest
    from seq2seq.request.translator import Translator
    from seq2seq.runs.load import load_run
    from seq2seq.runs.recipe import stored_languages

    check_alone(
        {"TEXT": text, "--show-attention": args.show_attention, "--attention-png": args.attention_png}
    )
    source = read_document(args.input)  # read before anything is written: --output may be a pipe
    steering = {
        "prefixes": [args.prefix] if args.prefix is not None else args.prefix_file and [],
        "include": tuple(args.constraint or ()), "avoid": tuple(args.avoid or ()),
        "per_line": [] if args.constraints_file is not None else None, "glossary": args.glossary,
        "confidence": args.confidence is not None, "trace": args.beam_trace is not None,
    }  # fmt: skip
    lang = stored_languages(run)[1]  # sentences are cut by the source language's rules
    request = TranslationRequest([source], options, format=format, lang=lang, **steering, **policy)
    device, quantize = loading
    model, tokenizer = load_run(run, device, quantize=quantize, packed=True)
    translator = Translator(model, tokenizer)
    checked = translator.check(request)
    if checked.document.tags:  # the alignment read only to place tags
        translator.markup = placing_method(run, model, tokenizer)
    with display.line_progress(True, len(checked.read), "sentences") as advance:  # on a terminal
        found = translator.search([checked], progress=advance)[0]
    done = translator.finish(checked, found).document
    for notice in done.notices:
        display.warn(notice)
    with OutputFile(args.output) as out:  # standard output for None
        out.write(done.text.encode("utf-8"))
    if views.html is not None:
        sentence_views(translator, checked, done, views)


def sentence_views(translator, checked, done, views) -> None:
    """--attention-html: the explorer page of the document's sentences, each with its maps (the
    translation as printed)."""
    from seq2seq.decoding.attention import maps_of_translations
    from seq2seq.stream.lines import PAGE_ALTERNATIVES

    model, tokenizer, options = translator.model, translator.tokenizer, checked.options
    maps = maps_of_translations(model, tokenizer, done.sources, done.result, options, None, PAGE_ALTERNATIVES)
    for number, m in translator.shown(checked, maps).items():
        views.show(number, m)
    views.finish()


def check_alone(given: dict[str, object]) -> None:
    """The views that go with lines, not with a document: refused in one line, naming the option
    (what steers the search is the request's to refuse)."""
    for flag, value in given.items():
        if value:
            raise Seq2SeqError(f"{flag} goes with --format lines, not with a document")
