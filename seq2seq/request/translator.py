"""The one entry point every front door calls: `Translator(model, tokenizer).translate(request)`.
A request is checked as a whole and tokenized (`check`: checks.py's refusals, a document
prepared, the lines read in the case their policy says: a `Plan`), searched (`search`: several
plans of equal options in one call, as the server batches them), then finished (`finish`): its
case restored around the text forced into it, detokenized, its trust and a document's markup as
asked. The same request gets the same text through every door."""

from dataclasses import dataclass, replace

from seq2seq.decoding.constraints import LineConstraints
from seq2seq.decoding.options import DecodeOptions
from seq2seq.decoding.rules import most_work, output_limit
from seq2seq.decoding.search import Terms, Translations, decode, fit_sources, searchable
from seq2seq.request.case import AS_IS, folded, restored
from seq2seq.request.checks import check_fields, steering
from seq2seq.request.request import TranslationRequest


@dataclass
class Plan:
    """A request checked and tokenized: what the search reads and what it is held to. Piece ids
    are lists."""

    request: TranslationRequest
    read: list[str]  # each line as the model reads it (in sentence case where the policy folds)
    cases: list[str]  # each line's case, restored after the search
    ids: list[list[int]]  # each line's source pieces, cut to the model's longest source, EOS last
    todo: list[int]  # the lines searched (the others are blank)
    truncated: int  # lines cut to the model's longest source
    forced: list[list[int]] | None  # each line's prefix pieces
    terms: list[Terms] | None  # each line's terms as given (its glossary's included)
    banked: list[LineConstraints | None] | None  # each line's terms as pieces, case variants too
    document: object = None  # documents/translate.py's Prepared: `read` holds its sentences

    @property
    def options(self) -> DecodeOptions:
        return self.request.options

    def kept(self, i: int) -> tuple[str, ...]:
        """The text forced into line i's translation, which its case leaves as it is."""
        prefix = (self.request.prefixes[i],) if self.request.prefixes is not None else ()
        return prefix + (self.terms[i].include if self.terms is not None else ())

    def work(self, model) -> int:
        """Rows x output pieces at most: what searching it may cost (a server's admission unit)."""
        return most_work(self.ids, self.options, output_limit(model), self.forced)


@dataclass
class Answer:
    """A request's answer: `result` as printed, and what the model read and wrote to get it."""

    plan: Plan
    result: Translations  # each line's hypotheses as printed (in its case, forced text as given)
    found: Translations  # as the model wrote them, of `plan.read`
    answers: list[dict] | None = None  # with confidence: each line's trust, its words as printed
    document: object = None  # a document's TranslatedDocument (documents/translate.py)

    @property
    def best(self) -> list[str]:
        return self.result.best


class Translator:
    """A loaded run's translations: `calibration`, when its trust flags are raised (None: the
    package's); `markup`, how a document's tags are placed (an alignment Method; None:
    `seq2seq.align`'s)."""

    def __init__(self, model, tokenizer, calibration=None, markup=None):
        self.model, self.tokenizer = model, tokenizer
        self._calibration, self.markup = calibration, markup

    @property
    def calibration(self):
        if self._calibration is None:
            from seq2seq.trust.calibration import Calibration

            self._calibration = Calibration.read()
        return self._calibration

    def translate(self, request: TranslationRequest) -> Answer:
        """The request checked, searched and finished."""
        checked = self.check(request)
        return self.finish(checked, self.search([checked])[0])

    def check(self, request: TranslationRequest) -> Plan:
        """The request checked as a whole (checks.py) and tokenized, each line read in the case its
        policy says; a document's text read and cut into sentences once the request has passed."""
        model, tokenizer = self.model, self.tokenizer
        check_fields(model, request)
        lines, document = request.lines, None
        if request.format != "lines":
            from seq2seq.documents.translate import prepare

            document = prepare(model, tokenizer, lines[0], request.format, request.lang)
            lines = document.sentences or [""]
        forced, terms, banked = steering(model, tokenizer, request, lines)
        if request.case == "auto":
            read, cases = folded(lines)
        else:
            read, cases = list(lines), [AS_IS] * len(lines)
        ids, cut = fit_sources(model, tokenizer.encode(read))
        todo = searchable(read, ids)
        return Plan(request, read, cases, ids, todo, sum(cut), forced, terms, banked, document)

    def refuse(self, request: TranslationRequest) -> None:
        """The request's refusals alone (checks.py), its lines read for nothing else: what the
        command line checks of a whole input before its first group is translated (lines only)."""
        check_fields(self.model, request)
        steering(self.model, self.tokenizer, request, request.lines)

    def search(self, plans: list[Plan], batch_size: int | None = None, progress=None) -> list[Translations]:
        """Plans of equal options searched together (their lines in one length-sorted pass), each
        one's Translations of what the model read; `progress(n)` told as lines are done."""
        first = plans[0]
        options = first.options if batch_size is None else replace(first.options, batch_size=batch_size)
        ids, todo, at = [], [], 0
        for p in plans:
            todo += [at + i for i in p.todo]
            ids += p.ids
            at += len(p.ids)
        forced = _joined([p.forced for p in plans], [p.ids for p in plans], [])
        banked = _joined([p.banked for p in plans], [p.ids for p in plans], None)
        trace = any(p.request.trace for p in plans)
        found = decode(
            self.model, self.tokenizer, ids, todo, options, forced, trace, banked, progress=progress
        )
        out, at = [], 0
        for p in plans:
            n = len(p.ids)
            traces = None if found.traces is None else found.traces[at : at + n]
            out.append(Translations(found.nbest[at : at + n], found.tokens[at : at + n], p.truncated, traces))
            at += n
        return out

    def finish(self, checked: Plan, found: Translations) -> Answer:
        """What the model wrote, as printed: each line in its case around the text forced into it;
        its trust, a document written back, as the request asks."""
        kept = [checked.kept(i) for i in range(len(checked.read))]
        result = restored(found, checked.cases, kept)
        answer = Answer(checked, result, found)
        if checked.request.confidence:
            answer.answers = self.trust(checked.read, found.best, result.best, checked.options)
        if checked.document is not None:
            from seq2seq.documents.translate import written

            model, tokenizer = self.model, self.tokenizer
            done = written(model, tokenizer, checked.document, checked.read, found, result, self.markup)
            answer.document = done
        return answer

    def shown(self, checked: Plan, maps: dict) -> dict:
        """Maps of what the model read and wrote (AttentionMaps by line number from 1), their
        translation and target pieces as the line is printed (in its case, forced text as given)."""
        from seq2seq.request.case import forced_spans, restore, restore_pieces

        for number, m in maps.items():
            case, kept = checked.cases[number - 1], checked.kept(number - 1)
            m.translation = restore(m.translation, case, forced_spans(m.translation, kept))
            m.target, m.target_inputs = restore_pieces(m.target, case), restore_pieces(m.target_inputs, case)
        return maps

    def trust(self, sources: list[str], translations: list[str], printed=None, options=None) -> list[dict]:
        """Each pair's trust (trust/flags.py's answer) of what the model read and wrote; with
        `printed`, each answer's words as printed (in the line's case)."""
        from seq2seq.trust.flags import check_translations

        batch = (options or DecodeOptions()).batch_size
        answers = check_translations(
            self.model, self.tokenizer, sources, translations, self.calibration, batch_size=batch
        )
        for answer, text in zip(answers, printed or [], strict=False):
            words = text.split()
            if len(words) == len(answer["words"]):
                for word, shown in zip(answer["words"], words, strict=True):
                    word["word"] = shown
        return answers


def _joined(parts: list, rows: list[list], empty) -> list | None:
    """Each plan's per-line list joined into the batch's (a plan without one: `empty` a line);
    None when no plan has one."""
    if all(part is None for part in parts):
        return None
    return [
        x
        for part, r in zip(parts, rows, strict=True)
        for x in (part if part is not None else [empty] * len(r))
    ]


def translate(
    model,
    tokenizer,
    lines: list[str],
    options: DecodeOptions | None = None,
    prefixes: list[str] | None = None,
    trace: bool = False,
    constraints=None,
    case: str = "auto",
) -> Translations:
    """`seq2seq.translate`: lines translated as `seq2seq translate` prints them (ALL-CAPS and
    Title-Case lines in their case, `case` "keep": searched as they are); `prefixes`, one a line;
    `constraints`, each line's Terms (beam search); `trace`, each line's beam recorded."""
    request = TranslationRequest(
        list(lines), options or DecodeOptions(), prefixes, per_line=constraints, case=case, trace=trace
    )
    return Translator(model, tokenizer).translate(request).result


def translate_document(
    model,
    tokenizer,
    text: str,
    format: str,
    options: DecodeOptions | None = None,
    method=None,
    lang: str = "en",
):
    """`seq2seq.translate_document`: `text` of `format` (text, markdown, html or srt) translated
    whole, its structure kept; inline markup placed through the alignment `method` (default:
    `seq2seq.align`'s; the commands give the run's alignment layer where it has one); sentences cut
    by the rules of `lang`, the source language. A TranslatedDocument (documents/translate.py)."""
    request = TranslationRequest([text], options or DecodeOptions(), format=format, lang=lang)
    return Translator(model, tokenizer, markup=method).translate(request).document
