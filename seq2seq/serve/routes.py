"""The routes of `seq2seq serve`, each small, over one `Served` state (the app's `state.served`):
what a request may ask, checked before anything is queued, then queued, awaited and answered."""

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, Response, StreamingResponse
from fastapi.routing import APIRoute

from seq2seq.decoding.options import GREEDY, SERVED, chosen
from seq2seq.decoding.prefix import prefix_ids
from seq2seq.decoding.search import DecodeOptions, Translations, output_limit, output_room
from seq2seq.decoding.terms import Terms, constraint_ids
from seq2seq.documents.case import folded, restored
from seq2seq.errors import Seq2SeqError
from seq2seq.serve import chunked_json
from seq2seq.serve.admission import PARSED, admit, answer, check_work, request_work
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
from seq2seq.trust.flags import answers, to_check
from seq2seq.views.explorer import maps_json


class ParsedOnce(APIRoute):
    """A route that validates the body Busy parsed and weighed (`PARSED`), never parsing it again:
    FastAPI reads a JSON body through `Request.json()`, which returns what it is given."""

    def get_route_handler(self):
        handle = super().get_route_handler()

        async def handler(request: Request):
            if PARSED in request.scope:
                request._json = request.scope[PARSED]
            return await handle(request)

        return handler


router = APIRouter(route_class=ParsedOnce)


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
        """The request's decode options, checked as the library checks them, within this server's beam."""
        asked = chosen(request.model_dump(include=set(SERVED)), request.greedy, self.beam)
        if asked.beam > self.limits["max_beam"]:
            raise Seq2SeqError(f"beam {asked.beam} is above this server's limit of {self.limits['max_beam']}")
        asked.check_for(self.model.cfg.vocab_size, output_limit(self.model))
        return asked

    def lines(self, text, count: int, what: str = "text", blank: bool = False) -> list[str]:
        return checked_lines(text, count, self.limits["max_chars"], what, blank)

    async def answer(self, http: Request, job: Job, prefixes: list | None):
        """Admit the job (a refusal costs little before the work is weighed), weigh it, queue it and
        wait for its answer."""
        admit(self.batcher, job.weight, self.limits["max_queue"])
        work = request_work(self.model, self.tokenizer, job.lines, job.options, prefixes)
        check_work(work, self.limits["max_work"])
        return await answer(http, self.batcher, job, self.limits["request_timeout_s"])

    def prefixes(self, prefix: str | list[str] | None, lines: int) -> tuple[list | None, list | None]:
        """The request's prefixes, one a line (one given for all), each a valid line of text (an
        empty one is no prefix), and their pieces: checked here, before anything is queued."""
        if prefix is None:
            return None, None
        prefixes = [prefix] * lines if isinstance(prefix, str) else prefix
        if len(prefixes) != lines:
            raise Seq2SeqError(f"{lines} lines but {len(prefixes)} prefixes; give one prefix a line")
        for number, text in enumerate(prefixes, start=1):
            if text.strip():
                self.lines(text, 1, f"prefix {number}")
        return prefixes, prefix_ids(self.tokenizer, prefixes, lines, output_limit(self.model))

    def terms(self, include, avoid, lines: int, asked: DecodeOptions) -> list | None:
        """Each line's terms (one list given for all, or one a line), checked here as the search
        would check them, before anything is queued."""
        if not include and not avoid:
            return None
        asked.check_terms()
        per_line = include if include and isinstance(include[0], list) else [include or []] * lines
        if len(per_line) != lines:
            raise Seq2SeqError(f"{lines} lines but {len(per_line)} lists of constraints; give one a line")
        terms = [Terms(tuple(own), tuple(avoid or ())) for own in per_line]
        constraint_ids(self.tokenizer, terms, lines, asked.beam, output_room(self.model, asked))
        return terms


def served(http: Request) -> Served:
    return http.app.state.served


@router.post(
    "/translate", response_model=TranslateResponse, response_model_exclude_none=True, responses=REQUEST_ERRORS
)
async def translate(request: TranslateRequest, http: Request) -> dict:
    """Translate one sentence or a list: the same output as `seq2seq translate` (n-best with scores)."""
    state = served(http)
    if request.format != "lines":
        return await document(state, http, request)
    lines, cases = folded(state.lines(request.text, state.limits["max_lines"]))  # as translate reads them
    prefixes, pieces = state.prefixes(request.prefix, len(lines))
    job = Job("translate", lines, state.options(request), prefixes=prefixes)
    job.terms = state.terms(request.constraints, request.avoid, len(lines), job.options)
    found: Translations = await state.answer(http, job, pieces)
    result = restored(found, cases)
    return {
        "translations": result.best,
        # a line the tokenizer reduces to nothing has no hypothesis: the empty one, as the CLI's
        "scores": [hyps[0][1] if hyps else 0.0 for hyps in result.nbest],
        "nbest": [[{"text": t, "score": s} for t, s in hyps or [("", 0.0)]] for hyps in result.nbest],
        "truncated": result.truncated,
        "confidence": await trusted(state, http, lines, found.best) if request.confidence else None,
    }


ALONE = ("prefix", "constraints", "avoid")  # what goes with lines, not with a document


async def document(state: Served, http: Request, request: TranslateRequest) -> dict:
    """`text` as one document of `format`, translated whole, as `seq2seq translate --format` does:
    read and cut into sentences here (a malformed document is refused before anything is queued),
    its sentences weighed as lines are, then translated together by the worker."""
    from seq2seq.documents.translate import prepare

    given = [name for name in ALONE if getattr(request, name) is not None]
    given += [name for name in ("nbest", "confidence") if getattr(request, name) not in (1, False)]
    if given or not isinstance(request.text, str):
        what = ", ".join(given) or "a list of lines"
        raise Seq2SeqError(f"{what} goes with format lines; a document is one text, translated whole")
    most = state.limits["max_chars"] * state.limits["max_lines"]
    if len(request.text) > most:
        raise HTTPException(
            413, f"the document has {len(request.text)} characters, above the limit of {most}"
        )
    prepared = prepare(state.model, state.tokenizer, request.text, request.format, state.info["src"])
    job = Job("document", prepared.sentences or [""], state.options(request))
    job.document = prepared
    done = await state.answer(http, job, None)
    return {"document": done.text, "sentences": done.sentences, "notices": done.notices}


@router.post(
    "/attention",
    response_class=Response,
    responses={200: {"content": {"application/json": {}}}, **REQUEST_ERRORS},
)
async def attention(request: AttentionRequest, http: Request) -> Response:
    """Every attention map of one sentence's translation (the model's own, or the given one)."""
    state = served(http)
    lines = state.lines(request.text, 1)
    forced = None if request.translation is None else state.lines(request.translation, 1, "translation")
    prefixes, pieces = state.prefixes(request.prefix, 1)
    if forced is not None and (prefixes is not None or request.beam_trace or request.sample):
        raise Seq2SeqError("a given translation is explained as it is: no prefix, beam_trace or sample")
    if request.beam_trace and request.sample:
        raise Seq2SeqError("beam_trace records beam search; sampling has no beam to record")
    job = Job("attention", lines, state.options(request), forced, prefixes)
    job.alternatives, job.trace = request.alternatives, request.beam_trace
    maps = (await state.answer(http, job, pieces))[0]
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
    todo, blanks = to_check(sources, translations)
    found = []
    if todo:
        job = Job("check", [sources[i] for i in todo], GREEDY, [translations[i] for i in todo])
        found = await state.answer(http, job, None)
    return answers(dict(zip(todo, found, strict=True)), blanks, state.calibration)


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
