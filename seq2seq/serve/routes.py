"""The routes of `seq2seq serve`, each small, over one `Served` state (the app's `state.served`):
what a request may ask, checked before anything is queued, then queued, awaited and answered."""

import asyncio
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, Response, StreamingResponse

from seq2seq.decoding.options import GREEDY, SERVED, chosen
from seq2seq.decoding.rules import most_work
from seq2seq.decoding.search import DecodeOptions, output_limit, source_ids
from seq2seq.decoding.terms import Terms
from seq2seq.errors import FieldError, Seq2SeqError
from seq2seq.request.request import TranslationRequest
from seq2seq.request.translator import Answer
from seq2seq.serve import chunked_json
from seq2seq.serve.admission import admit, answer, check_work
from seq2seq.serve.batcher import Batcher, Job
from seq2seq.serve.errors import REQUEST_ERRORS, errors
from seq2seq.serve.lines import checked_lines
from seq2seq.serve.requests import (
    AttentionRequest,
    CheckRequest,
    DecodeFields,
    TranslateRequest,
    TranslateResponse,
)
from seq2seq.trust.calibration import Calibration
from seq2seq.trust.flags import answers, checkable
from seq2seq.views.explorer import maps_json

router = APIRouter()


@dataclass
class Served:
    """What every route reads: the run, the batcher its worker decodes with, the limits."""

    model: object
    tokenizer: object
    batcher: Batcher
    info: dict  # /info: the run, this server's limits, defaults and batching
    beam: int  # the beam of a request that names none
    limits: dict  # max_lines, max_chars, max_beam, max_work, max_queue, request_timeout_s, ...
    json_thread: ThreadPoolExecutor  # builds /attention's bodies
    explorer: str  # the page at /
    calibration: Calibration  # when the trust flags are raised (the run's, else the package's)

    def options(self, request: DecodeFields) -> DecodeOptions:
        """The request's decode options, built once (their ranges checked as they are built, the
        rest by the request's one check), within this server's beam; then the request admitted by
        its weight (its lines x beam) before any line of it is checked or tokenized: a refusal
        costs the parse alone."""
        asked = chosen(request.model_dump(include=set(SERVED)), request.greedy, self.beam)
        if asked.beam > self.limits["max_beam"]:
            most = self.limits["max_beam"]
            raise FieldError("beam", f"{asked.beam} is above this server's limit of {most}")
        lines = len(request.text) if isinstance(request.text, list) else 1
        admit(self.batcher, lines * asked.rows, self.limits["max_queue"])
        return asked

    def lines(self, text, count: int, what: str = "text", blank: bool = False) -> list[str]:
        return checked_lines(text, count, self.limits["max_chars"], what, blank)

    async def answer(self, http: Request, job: Job, work: int):
        """Admit the job (a refusal costs little before the work is weighed), weigh its `work`
        (rows x output pieces at most), queue it and wait for its answer."""
        admit(self.batcher, job.weight, self.limits["max_queue"])
        check_work(work, self.limits["max_work"])
        future = self.batcher.submit(job)
        return await answer(http, self.batcher, future, self.limits["request_timeout_s"])

    def prefixes(self, prefix: str | list[str] | None, lines: int = 1) -> list[str] | None:
        """The request's prefixes, one a line (one given for all), each a valid line of text (an
        empty one is no prefix); their pieces are the request check's to make."""
        if prefix is None:
            return None
        prefixes = [prefix] * lines if isinstance(prefix, str) else prefix
        for number, text in enumerate(prefixes, start=1):
            if text.strip():
                self.lines(text, 1, f"prefix {number}")
        return prefixes

    async def checked(self, request: TranslationRequest):
        """The request's one check (request/checks.py), off the event loop (a document is parsed and
        cut into sentences there) and within the request's deadline."""
        timeout = self.limits["request_timeout_s"]
        try:
            return await asyncio.wait_for(asyncio.to_thread(self.batcher.translator.check, request), timeout)
        except TimeoutError:
            raise HTTPException(504, f"the request was not read within this server's {timeout:g} s") from None

    def translation_request(self, request: TranslateRequest) -> TranslationRequest:
        """The body as the library's request: its lines (or document) checked against this server's
        limits, its fields named as the library names them."""
        options = self.options(request)  # admitted first: a refusal checks no line
        if request.format != "lines":
            most = self.limits["max_chars"] * self.limits["max_lines"]
            if isinstance(request.text, str) and len(request.text) > most:
                raise HTTPException(
                    413, f"the document has {len(request.text)} characters, above the limit of {most}"
                )
            if isinstance(request.text, list):
                raise FieldError("lines", "a list of lines goes with format lines; a document is one text")
            lines = [request.text]
        else:
            lines = self.lines(request.text, self.limits["max_lines"])
        include, per_line = request.constraints or (), None
        if include and isinstance(include[0], list):
            include, per_line = (), [Terms(tuple(own)) for own in include]
        return TranslationRequest(
            lines, options, self.prefixes(request.prefix, len(lines)), tuple(include),
            tuple(request.avoid or ()), per_line, case=request.case, avoid_exact=request.avoid_exact,
            confidence=request.confidence, format=request.format, lang=self.info["src"],
        )  # fmt: skip


def served(http: Request) -> Served:
    return http.app.state.served


@router.post(
    "/translate", response_model=TranslateResponse, response_model_exclude_none=True, responses=REQUEST_ERRORS
)
async def translate(request: TranslateRequest, http: Request) -> dict:
    """Translate one sentence or a list, or one document: the same output as `seq2seq translate`
    (n-best with scores), through the library's one request check and entry point."""
    state = served(http)
    checked = await state.checked(state.translation_request(request))
    job = Job("translate", checked.read, checked.options, plan=checked)
    answer: Answer = await state.answer(http, job, checked.work(state.model))
    if answer.document is not None:
        done = answer.document
        return {"document": done.text, "sentences": done.sentences, "notices": done.notices}
    result = answer.result
    return {
        "translations": result.best,
        # a line the tokenizer reduces to nothing has no hypothesis: the empty one, as the CLI's
        "scores": [hyps[0][1] if hyps else 0.0 for hyps in result.nbest],
        "nbest": [[{"text": t, "score": s} for t, s in hyps or [("", 0.0)]] for hyps in result.nbest],
        "truncated": result.truncated,
        "confidence": answer.answers,
    }


@router.post(
    "/attention",
    response_class=Response,
    responses={200: {"content": {"application/json": {}}}, **REQUEST_ERRORS},
)
async def attention(request: AttentionRequest, http: Request) -> Response:
    """Every attention map of one sentence's translation (the model's own, or the given one)."""
    state = served(http)
    options = state.options(request)  # admitted first: a refusal checks no line
    lines = state.lines(request.text, 1)
    forced = None if request.translation is None else state.lines(request.translation, 1, "translation")
    prefixes = state.prefixes(request.prefix, 1)
    if forced is not None and (prefixes is not None or request.beam_trace or request.sample):
        raise Seq2SeqError("a given translation is explained as it is: no prefix, beam_trace or sample")
    case = "keep" if forced is not None else request.case  # a given pair is explained as given
    asked = TranslationRequest(lines, options, prefixes, case=case, trace=request.beam_trace)
    checked = await state.checked(asked)  # the one check, as /translate's
    job = Job("attention", checked.read, options, forced, prefixes)
    job.alternatives, job.trace = request.alternatives, request.beam_trace
    found = await state.answer(http, job, checked.work(state.model))  # its pieces, read once
    maps = state.batcher.translator.shown(checked, {1: found[0]})[1]
    # sent as it is built: megabytes of weights are never held whole, nor copied in one call
    body = chunked_json.streamed(state.json_thread, lambda: maps_json(maps, lists=False))
    return StreamingResponse(body, media_type="application/json")


@router.post("/check", responses=REQUEST_ERRORS)
async def check(request: CheckRequest, http: Request) -> list[dict]:
    """How far to trust translations, anyone's: an object a pair, as `seq2seq check --json` prints."""
    state = served(http)
    sources = state.lines(request.source, state.limits["max_lines"], blank=True)  # a blank side is flagged
    translations = state.lines(request.translation, state.limits["max_lines"], "translation", blank=True)
    if len(translations) != len(sources):
        raise Seq2SeqError(f"{len(sources)} sources but {len(translations)} translations; give one a source")
    return await trusted(state, http, sources, translations)


async def trusted(state: Served, http: Request, sources: list[str], translations: list[str]) -> list[dict]:
    """Each pair's trust, as `seq2seq check --json` answers: the pairs with no blank side checked
    by the worker (a job of its own)."""
    todo, blanks, cut = checkable(state.model, state.tokenizer, sources, translations)
    found = []
    if todo:
        lines = [sources[i] for i in todo]
        job = Job("check", lines, GREEDY, [translations[i] for i in todo])
        ids, _ = source_ids(state.model, state.tokenizer, lines)
        found = await state.answer(http, job, most_work(ids, GREEDY, output_limit(state.model), None))
    return answers(dict(zip(todo, found, strict=True)), blanks, state.calibration, cut)


@router.get("/health")
async def health(http: Request) -> dict:
    """Up, and how many requests are waiting for the model or being decoded."""
    return {"status": "ok", "pending": served(http).batcher.pending}


@router.get("/info", responses=errors(400, 401))
async def about(http: Request) -> dict:
    """The run (architecture, languages, shape, vocabulary, validation BLEU) and this server's limits."""
    return served(http).info


@router.api_route("/", methods=["GET", "HEAD"], response_class=HTMLResponse, include_in_schema=False)
async def explorer_page(http: Request) -> str:
    return served(http).explorer
