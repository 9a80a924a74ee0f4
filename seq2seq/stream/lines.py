"""`translate`'s lines, a group at a time: each group searched with its prefixes and terms, its
beam recorded, and the maps of its translations made for the views; the command writes the output
lines and shows the maps. Exactly one output line per input line (with --nbest or --num-samples,
a line per hypothesis: `index ||| text ||| score`, Moses' and fairseq's n-best format), ALL-CAPS
and Title-Case lines in their case (request/case.py); with
--confidence, each line's translation with its trust (seq2seq/trust): marked text or JSON."""

import json
from dataclasses import dataclass, field

from seq2seq.decoding.search import DecodeOptions, Translations, length_notices
from seq2seq.files.reading import one_line
from seq2seq.stream.steer import Steer

PAGE_ALTERNATIVES = 5  # an --attention-html page lists this many alternatives at each output piece


@dataclass
class Group:
    """One group of input lines, translated: `first` is the number of its first line in the input."""

    first: int
    lines: list[str]
    result: Translations
    options: DecodeOptions
    maps: dict = field(default_factory=dict)  # line number in the input -> AttentionMaps
    notices: list[str] = field(default_factory=list)
    confidence: str | None = None  # "marks" or "json": how `answers` are written
    answers: list[dict] | None = None  # with --confidence: each line's (trust/flags.py's answer)
    marks: dict = field(default_factory=dict)  # with answers and maps: line number -> piece_marks

    def output_lines(self) -> list[str]:
        """A line per input line, or with --nbest or --num-samples `index ||| text ||| score` for
        each hypothesis; a blank line is not translated: its one entry is the empty line, score 0.
        With answers, each line's translation marked (`marked`) or as JSON (`translation` first)."""
        if self.answers is not None:
            from seq2seq.trust.flags import marked

            if self.confidence == "json":
                return [
                    json.dumps({"translation": t, **a}, ensure_ascii=False)
                    for t, a in zip(self.result.best, self.answers, strict=True)
                ]
            return [one_line(marked(t, a)) for t, a in zip(self.result.best, self.answers, strict=True)]
        if self.options.nbest > 1 or self.options.num_samples > 1:
            return [
                f"{self.first - 1 + i} ||| {one_line(t)} ||| {s:.4f}"
                for i, hyps in enumerate(self.result.nbest)
                for t, s in (hyps or [("", 0.0)])
            ]
        return [one_line(t) for t in self.result.best]


CONFIDENCE = ("marks", "json")


class LineTranslator:
    """A loaded model's translation of input lines, group by group, each group one request
    (request/) steered by `steer`; with `views` (their `layer`, `head` and whether a page wants
    alternatives) each group's maps too; with `confidence` ("marks" or "json", and a trust
    Calibration) each line's trust; `policy`, the request's other fields (case, avoid_exact)."""

    def __init__(
        self, model, tokenizer, options: DecodeOptions, steer: Steer, views=None, confidence=None, policy=None
    ):
        from seq2seq.request.translator import Translator

        self.model, self.tokenizer, self.options, self.steer, self.views = (
            model, tokenizer, options, steer, views,
        )  # fmt: skip
        self.confidence, calibration = confidence or (None, None)
        self.policy = policy or {}
        self.translator = Translator(model, tokenizer, calibration)

    def notices(self, texts: list[str] | None) -> list[str]:
        """What to say before the first line (an output limit past the model's), after what can be
        checked of the terms (`texts`: the input's lines where it is read whole) has been."""
        self.steer.terms.check(self.translator, self.options, texts, self.policy)
        return list(length_notices(self.model, self.options))

    def translate(self, lines: list[str], first: int) -> Group:
        """Lines `first`.. of the input, translated, recorded, and mapped for the views."""
        request = self.steer.request(lines, first, self.options, self.policy)
        request.confidence = self.confidence is not None
        answer = self.translator.translate(request)
        checked, found = answer.plan, answer.found
        group = Group(first, lines, answer.result, self.options, confidence=self.confidence)
        group.answers = answer.answers
        if found.truncated:
            group.notices.append(
                f"{found.truncated} of lines {first}-{first + len(lines) - 1} were longer than the "
                f"model's {self.model.cfg.max_positions - 1} pieces and were truncated"
            )
        if self.views is not None and self.views.wanted:
            group.maps = self._maps(group.first, checked, found)
            if group.answers is not None:
                from seq2seq.trust.flags import piece_marks

                for number, m in group.maps.items():
                    answer = group.answers[number - first]
                    group.marks[number] = piece_marks(answer, m.source, m.target, self.translator.calibration)
        if request.trace:
            self.steer.trace.add(self.tokenizer, first, lines, request.prefixes, found.traces, checked.terms)
        return group

    def _maps(self, first: int, checked, found) -> dict:
        """The maps of what the model read and wrote (the lines from `first`), its target pieces
        in each line's printed case, keyed by line number in the input; a bad layer or head is
        refused before anything of the group is written."""
        from seq2seq.decoding.attention import check_choice, maps_of_translations

        alternatives = PAGE_ALTERNATIVES if self.views.html is not None else 0
        model, tokenizer, prefixes = self.model, self.tokenizer, checked.request.prefixes
        maps = maps_of_translations(
            model, tokenizer, checked.read, found, self.options, prefixes, alternatives
        )
        maps = self.translator.shown(checked, maps)
        if maps:
            check_choice(next(iter(maps.values())), self.views.layer, self.views.head)
        return {first - 1 + number: m for number, m in maps.items()}
