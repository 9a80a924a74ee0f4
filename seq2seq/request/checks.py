"""The one place a request is refused: every combination of its fields is refused here in one
line naming the fields (FieldError), or honoured (`check_fields`, then `steering`, whose prefixes
and terms are tokenized once as they are checked). translator.py builds the Plan around them.
Piece ids are lists.
"""

from seq2seq.data.special import UNK_ID
from seq2seq.decoding.constraints import LineConstraints, Phrase
from seq2seq.decoding.prefix import prefix_ids
from seq2seq.decoding.rules import output_limit, output_room
from seq2seq.decoding.terms import Terms, constraint_ids, holds, line_terms, term_ids
from seq2seq.errors import FieldError, Seq2SeqError
from seq2seq.request.case import capital_first
from seq2seq.request.request import CASES, FORMATS, MAX_AVOID, MAX_INCLUDE, TranslationRequest


def check_fields(model, request: TranslationRequest) -> None:
    """What the fields decide together, before anything is read or tokenized: the terms counted
    (work bounded before it starts), the text valid Unicode, every option within its range."""
    _check_counts(request)
    _check_request(model, request)


def steering(model, tokenizer, request: TranslationRequest, lines: list[str]) -> tuple:
    """What steers the search of `lines` (the request's, or its document's sentences): each line's
    prefix pieces, its terms as given (its glossary's included) and as pieces (case variants too),
    each tokenized once and checked against the others and the room the output has."""
    options, n = request.options, len(lines)
    forced = _prefixes(model, tokenizer, request, n)
    if request.per_line is not None and len(request.per_line) != n:
        raise FieldError(
            "per_line", f"{n} lines but {len(request.per_line)} lists of constraints; give one a line"
        )
    terms = line_terms(lines, request.include, request.avoid, request.per_line, request.glossary)
    banked = None
    if terms is not None:
        try:
            options.check_terms()
        except Seq2SeqError as e:
            raise FieldError(("include", "avoid", "beam"), str(e)) from None
        _glossary_fits(request, lines)
        room = output_room(model, options)
        banked = _banked(tokenizer, terms, request.avoid_exact, options.beam, room)
        _fits(forced, banked, room)
    _no_repeats(banked, options.no_repeat_ngram)
    return forced, terms, banked


def _check_counts(request: TranslationRequest) -> None:
    """The terms counted before any loop reads them: work bounded before it starts."""
    own = request.per_line or ()
    for name, terms, most in (
        ("include", [request.include, *(t.include for t in own)], MAX_INCLUDE),
        ("avoid", [request.avoid, *(t.avoid for t in own)], MAX_AVOID),
    ):
        count = max(map(len, terms))
        if count > most:
            raise FieldError(name, f"{count} terms for a line, above the limit of {most}")


def _check_request(model, request: TranslationRequest) -> None:
    """What the fields decide together, before anything is tokenized."""
    options = request.options
    for number, line in enumerate(request.lines, start=1):
        try:
            line.encode("utf-8")
        except UnicodeEncodeError as e:
            what = "the document" if request.format != "lines" else f"line {number}"
            raise FieldError(
                "lines", f"{what} is not valid Unicode (a lone surrogate at {e.start})"
            ) from None
    if request.case not in CASES:
        raise FieldError("case", f"must be one of {', '.join(CASES)}, not {request.case!r:.40}")
    if request.format not in FORMATS:
        raise FieldError("format", f"must be one of {', '.join(FORMATS)}, not {request.format!r:.40}")
    options.check_for(model.cfg.vocab_size, output_limit(model))
    if request.trace and options.sample:
        raise FieldError(("trace", "sample"), "a beam's record needs beam search; sampling has no beam")
    if request.confidence and (options.nbest > 1 or options.num_samples > 1):
        raise FieldError(
            ("confidence", "nbest", "num_samples"), "checks the one translation of each line, not several"
        )
    if request.format != "lines":
        steering = {
            "prefixes": request.prefixes is not None, "include": bool(request.include),
            "avoid": bool(request.avoid), "per_line": request.per_line is not None,
            "glossary": request.glossary is not None, "confidence": request.confidence,
            "trace": request.trace, "nbest": options.nbest > 1, "num_samples": options.num_samples > 1,
        }  # fmt: skip
        given = tuple(name for name, value in steering.items() if value)
        if given or len(request.lines) != 1:
            raise FieldError(given or ("lines",), "goes with lines; a document is one text, translated whole")


def _glossary_fits(request: TranslationRequest, lines: list[str]) -> None:
    """A line whose glossary terms, with the other terms to include, need more rows than the beam
    has (a beam holds one fewer than its size), said in the glossary's words."""
    if request.glossary is None:
        return
    beam, own = request.options.beam, request.per_line
    for number, line in enumerate(lines, start=1):
        most = beam - 1 - len(request.include) - (len(own[number - 1].include) if own else 0)
        if (found := len(request.glossary.terms(line))) > most:
            raise FieldError(
                ("glossary", "beam"),
                f"line {number} holds {found} glossary terms; with the other terms a beam of {beam} "
                f"holds at most {most}: raise the beam",
            )


def _prefixes(model, tokenizer, request: TranslationRequest, n: int) -> list[list[int]] | None:
    if request.prefixes is None:
        return None
    return prefix_ids(tokenizer, request.prefixes, n, output_limit(model), request.options.max_len)


def variants(term: str) -> tuple[str, ...]:
    """A term to avoid as users mean it: as written, in lower case, Capitalized and in UPPER case."""
    return tuple(dict.fromkeys((term, term.lower(), capital_first(term), term.upper())))


def _banked(tokenizer, terms: list[Terms], exact: bool, beam: int, room: int) -> list[LineConstraints | None]:
    """Each line's terms as pieces, checked (`constraint_ids`); a term to avoid in its case
    variants too (unless `exact`), each that the tokenizer can spell and no term to include holds."""
    encoded: dict = {}  # text -> pieces: every term tokenized once in the request
    if not exact:
        terms = [Terms(t.include, _with_variants(tokenizer, t, encoded)) for t in terms]
    return constraint_ids(tokenizer, terms, len(terms), beam, room, encoded)


def _with_variants(tokenizer, terms: Terms, encoded: dict) -> tuple[str, ...]:
    included = [term_ids(tokenizer, t, encoded) for t in terms.include]
    out = list(terms.avoid)
    for term in terms.avoid:
        for variant in variants(term)[1:]:
            ids = term_ids(tokenizer, variant, encoded)
            if ids and UNK_ID not in ids and not any(holds(phrase, ids) for phrase in included):
                out.append(variant)
    return tuple(dict.fromkeys(out))


def _fits(forced: list[list[int]] | None, banked: list, room: int) -> None:
    """A prefix and the terms after it need room for both."""
    for number, (prefix, line) in enumerate(zip(forced or [[]] * len(banked), banked, strict=True), 1):
        need = len(prefix) + (line.pieces if line is not None else 0)
        if line is not None and prefix and need > room:
            raise FieldError(
                ("prefixes", "include", "max_len"),
                f"line {number}'s prefix and terms take {need} pieces, above the longest output ({room})",
            )
        if line is not None and prefix:
            _prefix_avoids(number, prefix, line.avoid)


def _prefix_avoids(number: int, prefix: list[int], avoid: tuple[Phrase, ...]) -> None:
    if any(holds(tuple(prefix), phrase) for phrase in avoid):
        raise FieldError(("prefixes", "avoid"), f"line {number}'s prefix holds a term to avoid")


def _no_repeats(banked: list[LineConstraints | None] | None, n: int) -> None:
    """A term that repeats an n-gram of `n` pieces: no search could both force and forbid it (a
    prefix is forced as it is, as CTranslate2 forces one)."""
    for number, line in enumerate(banked or [], start=1):
        for phrase in line.include if n >= 1 and line is not None else ():
            grams = [phrase[k : k + n] for k in range(len(phrase) - n + 1)]
            if len(set(grams)) < len(grams):
                raise FieldError(
                    ("include", "no_repeat_ngram"),
                    f"line {number}'s term repeats an n-gram of {n} pieces, which no-repeat-ngram forbids",
                )
