"""One translation request, whatever door it comes through (`translate`, `evaluate`, the server, a
document, the Python API): its fields, and the one error that names them (`FieldError`). No torch
here: the command line builds its options from these fields. checks.py checks a request as a whole.
"""

from dataclasses import dataclass, field

from seq2seq.decoding.options import DecodeOptions
from seq2seq.fields import option

CASES = ("auto", "keep")
# terms a line may carry, counted before any is read: a term to include takes a row of the beam
# (64 at most, on the server too), and every term to avoid is matched at every step of the search
MAX_INCLUDE = 64
MAX_AVOID = 256
FORMATS = ("lines", "text", "markdown", "html", "srt")


@dataclass
class TranslationRequest:
    """What to translate and how: lines (or, with a document `format`, one text), the decoding
    options, what steers the search (prefixes, terms to include and avoid, a glossary) and what to
    say of the answer (confidence, the beam's record). The fields with help are options of the
    commands that translate (`--case`, `--avoid-exact`); the server's request names them alike."""

    lines: list[str]
    options: DecodeOptions = field(default_factory=DecodeOptions)
    prefixes: list[str] | None = None  # one a line ("": none)
    include: tuple[str, ...] = ()  # terms every line's translation holds
    avoid: tuple[str, ...] = ()  # terms no line's translation holds
    per_line: list | None = None  # each line's own terms to include and avoid (decoding/terms.py's Terms)
    glossary: object = None  # a decoding/terms.py Glossary: a line holding a source term holds its target
    case: str = option(
        "auto",
        "auto: ALL-CAPS and Title-Case lines read in sentence case and written back in theirs; "
        "keep: every line searched as it is.",
        choices=CASES,
    )
    avoid_exact: bool = option(
        False,
        "--avoid: only the terms as written [default: also in lower case, Capitalized and UPPER].",
        flag="--avoid-exact",
    )
    confidence: bool = False  # each line's trust (trust/flags.py's answer), of its best translation
    trace: bool = False  # each line's beam, recorded
    format: str = "lines"  # a document format: `lines` holds its one text
    lang: str = "en"  # the source language, whose rules cut a document's sentences
