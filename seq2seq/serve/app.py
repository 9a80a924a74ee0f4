"""The HTTP API of `seq2seq serve`: the only module that imports the web framework (FastAPI).

    POST /translate   {"text": "..." or ["...", ...], "prefix": optional (one, or one a line), beam,
                      greedy, nbest, length_penalty, min_len, max_len, sample, temperature, top_k,
                      top_p, epsilon, num_samples, seed, constraints, avoid}
                      -> {"translations", "scores", "nbest", "truncated"}: what `seq2seq translate` prints
    POST /attention   {"text": "...", "translation": optional (forced), "prefix": optional,
                      "alternatives": k, "beam_trace": bool, decode options}
                      -> every attention map of that sentence, the k alternatives at each output
                      position and the beam when asked (seq2seq/views/explorer.py's JSON)
    GET  /health, GET /info, GET / (the attention explorer), /docs and /openapi.json (FastAPI's own)

Every bad request is answered 4xx with {"error": "one line"}, and the server keeps serving. Nothing
in a request is ever a path: the run is the one loaded at start.
"""

import asyncio
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import MISSING, fields
from typing import get_type_hints

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, create_model

from seq2seq.decoding.alternatives import MAX_ALTERNATIVES
from seq2seq.decoding.options import GREEDY_HELP, SERVED, chosen
from seq2seq.decoding.prefix import prefix_ids
from seq2seq.decoding.search import DecodeOptions, Translations, output_limit, output_room
from seq2seq.decoding.terms import Terms, constraint_ids
from seq2seq.errors import Seq2SeqError
from seq2seq.serve import chunked_json
from seq2seq.serve.admission import Busy, admit, answer, check_work, request_work
from seq2seq.serve.batcher import Batcher, Job
from seq2seq.serve.connections import IDLE_SECONDS, GuardedH11
from seq2seq.serve.errors import REQUEST_ERRORS, BodyCheck, add_error_handlers, errors
from seq2seq.serve.guard import ApiKey, HostCheck, SecurityHeaders
from seq2seq.serve.limits import (
    MAX_BEAM,
    MAX_BODY,
    MAX_CHARS,
    MAX_LINES,
    MAX_QUEUE,
    MAX_WORK,
    REQUEST_TIMEOUT,
)
from seq2seq.serve.lines import checked_lines
from seq2seq.views.explorer import maps_json, page


def decode_field(f, hint) -> tuple:
    """The request field of a DecodeOptions field: its type, default, range and help (the bounds
    DecodeOptions.check words more precisely, e.g. a temperature above 0, stay its own)."""
    low, high = f.metadata.get("range", (None, None))
    default = f.default if f.metadata["unset"] is MISSING else f.metadata["unset"]
    extra = {"allow_inf_nan": False} if hint is float else {"lt": 2**63} if f.name == "seed" else {}
    hint = hint | None if default is None else hint
    return hint, Field(default, ge=low, le=high, description=f.metadata["help"], **extra)


# How to decode: every DecodeOptions field the server takes (`served`), but the n-best, which only
# /translate does; the defaults are `seq2seq translate`'s (the beam is the server's --beam)
DecodeFields = create_model(
    "DecodeFields",
    __config__=ConfigDict(extra="forbid", strict=True),
    greedy=(bool, Field(False, description=GREEDY_HELP)),
    **{
        f.name: decode_field(f, hint)
        for f in fields(DecodeOptions)
        if f.name in SERVED and f.name != "nbest"
        for hint in [get_type_hints(DecodeOptions)[f.name]]
    },
)


class TranslateRequest(DecodeFields):
    text: str | list[str] = Field(description="One sentence, or a list of them (one line each).")
    prefix: str | list[str] | None = Field(
        None, description="The text each translation starts with: one for all, or one a line (as text)."
    )
    nbest: int = Field(1, ge=1, description=DecodeOptions.__dataclass_fields__["nbest"].metadata["help"])
    constraints: list[str] | list[list[str]] | None = Field(
        None, description="Terms every translation must hold (beam search), or one list of terms a line."
    )
    avoid: list[str] | None = Field(None, description="Terms no translation may hold (beam search).")


class AttentionRequest(DecodeFields):
    text: str = Field(description="One sentence.")
    translation: str | None = Field(
        None, description="A translation to explain (forced) instead of the model's."
    )
    prefix: str | None = Field(None, description="The text the model's translation starts with.")
    alternatives: int = Field(
        5, ge=0, le=MAX_ALTERNATIVES, description="The most likely pieces listed at each output position."
    )
    beam_trace: bool = Field(False, description="Also the beam search as a tree (kept, finished, pruned).")


class Hypothesis(BaseModel):
    text: str
    score: float


class TranslateResponse(BaseModel):
    translations: list[str]
    scores: list[float]  # the best hypothesis' score: log-probability / length penalty
    nbest: list[list[Hypothesis]]
    truncated: int  # lines longer than the model's longest source, cut to it


def create_app(
    model,
    tokenizer,
    run_info: dict,
    *,
    beam: int = 5,
    max_batch: int = 64,
    max_wait_ms: float = 5.0,
    max_lines: int = MAX_LINES,
    max_chars: int = MAX_CHARS,
    on_batch=None,
    api_key: str | None = None,
    loopback_only: bool = False,
    max_queue: int = MAX_QUEUE,
    max_work: int = MAX_WORK,
    request_timeout: float = REQUEST_TIMEOUT,
) -> FastAPI:
    """The app serving one loaded run; its batcher's worker runs while the app is up."""
    batcher = Batcher(model, tokenizer, max_batch, max_wait_ms, on_batch)
    limits = {
        "max_lines": max_lines,
        "max_chars": max_chars,
        "max_beam": min(MAX_BEAM, tokenizer.vocab_size),
        "max_work": max_work,  # lines x beam x output pieces, a request
        "max_queue": max_queue,  # lines x beam, queued and decoding
        "request_timeout_s": request_timeout,
        "connections": {  # what the server's h11 protocol holds each connection to (connections.py)
            "max": GuardedH11.max_connections,
            "header_timeout_s": GuardedH11.header_seconds,
            "body_timeout_s": GuardedH11.body_seconds,
            "idle_timeout_s": IDLE_SECONDS,
        },
    }
    if beam > limits["max_beam"]:  # else every request that names no beam would be refused
        raise Seq2SeqError(f"--beam {beam} is above this server's limit of {limits['max_beam']}")
    info = run_info | {
        "limits": limits,
        "defaults": {"beam": beam},
        "batching": {"max_batch": max_batch, "max_wait_ms": max_wait_ms},
    }
    explorer = page()
    # /attention's bodies are built in one thread, not the loop's pool of several: building JSON
    # holds Python's lock, so a second thread builds nothing faster and only makes one more thread
    # the event loop must win the lock from before it can answer anyone
    json_thread = ThreadPoolExecutor(1, thread_name_prefix="seq2seq-json")

    @asynccontextmanager
    async def lifespan(_app):
        batcher.start()
        yield
        await asyncio.to_thread(batcher.stop)  # answers what is queued, then ends the worker
        json_thread.shutdown()

    app = FastAPI(
        title="seq2seq",
        summary="Translate, and see the attention of a translation.",
        description=(
            f"Limits: {max_lines} lines a request, {max_chars} characters a line, a beam of "
            f"{limits['max_beam']} at most, {MAX_BODY} bytes a body. Every error is one JSON line, "
            '{"error": "..."}.'
            + (" Every route but /health needs Authorization: Bearer KEY." if api_key else "")
        ),
        lifespan=lifespan,
    )
    # the last added runs first: the body is checked as Busy reads it to weigh the request
    app.add_middleware(
        Busy,
        batcher=batcher,
        max_queue=max_queue,
        default_beam=beam,
        max_lines=max_lines,
        max_beam=limits["max_beam"],
    )
    app.add_middleware(BodyCheck, limit=MAX_BODY)
    if api_key is not None:
        app.add_middleware(ApiKey, key=api_key)
    if loopback_only:
        app.add_middleware(HostCheck)
    app.add_middleware(SecurityHeaders, page=explorer)
    add_error_handlers(app)
    app.state.batcher = batcher  # the server sheds its queue when told to stop

    def options(request: DecodeFields) -> DecodeOptions:
        asked = chosen(request.model_dump(include=set(SERVED)), request.greedy, beam)
        if asked.beam > limits["max_beam"]:
            raise Seq2SeqError(f"beam {asked.beam} is above this server's limit of {limits['max_beam']}")
        asked.check_for(model.cfg.vocab_size, output_limit(model))
        return asked

    @app.post("/translate", response_model=TranslateResponse, responses=REQUEST_ERRORS)
    async def translate(request: TranslateRequest, http: Request) -> dict:
        """Translate one sentence or a list: the same output as `seq2seq translate` (n-best with scores)."""
        lines = checked_lines(request.text, max_lines, max_chars)
        prefixes, pieces = request_prefixes(request.prefix, len(lines), max_chars)
        job = Job("translate", lines, options(request), prefixes=prefixes)
        job.terms = request_terms(request.constraints, request.avoid, len(lines), job.options)
        admit(batcher, job.weight, max_queue)  # before the work is weighed: a refusal costs little
        check_work(request_work(model, tokenizer, lines, job.options, pieces), max_work)
        result: Translations = await answer(http, batcher, job, request_timeout)
        return {
            "translations": result.best,
            # a line the tokenizer reduces to nothing has no hypothesis: the empty one, as the CLI's
            "scores": [hyps[0][1] if hyps else 0.0 for hyps in result.nbest],
            "nbest": [[{"text": t, "score": s} for t, s in hyps or [("", 0.0)]] for hyps in result.nbest],
            "truncated": result.truncated,
        }

    @app.post(
        "/attention",
        response_class=Response,
        responses={200: {"content": {"application/json": {}}}, **REQUEST_ERRORS},
    )
    async def attention(request: AttentionRequest, http: Request) -> Response:
        """Every attention map of one sentence's translation (the model's own, or the given one)."""
        lines = checked_lines(request.text, 1, max_chars)
        forced = (
            None
            if request.translation is None
            else checked_lines(request.translation, 1, max_chars, "translation")
        )
        prefixes, pieces = request_prefixes(request.prefix, 1, max_chars)
        if forced is not None and (prefixes is not None or request.beam_trace or request.sample):
            raise Seq2SeqError("a given translation is explained as it is: no prefix, beam_trace or sample")
        if request.beam_trace and request.sample:
            raise Seq2SeqError("beam_trace records beam search; sampling has no beam to record")
        job = Job("attention", lines, options(request), forced, prefixes)
        job.alternatives, job.trace = request.alternatives, request.beam_trace
        admit(batcher, job.weight, max_queue)
        check_work(request_work(model, tokenizer, lines, job.options, pieces), max_work)
        maps = (await answer(http, batcher, job, request_timeout))[0]
        # sent as it is built: megabytes of weights are never held whole, nor copied in one call
        body = chunked_json.streamed(json_thread, lambda: maps_json(maps, lists=False))
        return StreamingResponse(body, media_type="application/json")

    def request_terms(include, avoid, lines: int, asked: DecodeOptions) -> list | None:
        """Each line's terms (one list given for all, or one a line), checked here as the search
        would check them, before anything is queued."""
        if not include and not avoid:
            return None
        asked.check_terms()
        per_line = include if include and isinstance(include[0], list) else [include or []] * lines
        if len(per_line) != lines:
            raise Seq2SeqError(f"{lines} lines but {len(per_line)} lists of constraints; give one a line")
        terms = [Terms(tuple(own), tuple(avoid or ())) for own in per_line]
        constraint_ids(tokenizer, terms, lines, asked.beam, output_room(model, asked))
        return terms

    def request_prefixes(
        prefix: str | list[str] | None, lines: int, limit: int
    ) -> tuple[list | None, list | None]:
        """The request's prefixes, one a line (one given for all), each a valid line of text (an
        empty one is no prefix), and their pieces: checked here, before anything is queued."""
        if prefix is None:
            return None, None
        prefixes = [prefix] * lines if isinstance(prefix, str) else prefix
        if len(prefixes) != lines:
            raise Seq2SeqError(f"{lines} lines but {len(prefixes)} prefixes; give one prefix a line")
        for number, text in enumerate(prefixes, start=1):
            if text.strip():
                checked_lines(text, 1, limit, f"prefix {number}")
        return prefixes, prefix_ids(tokenizer, prefixes, lines, output_limit(model))

    @app.get("/health")
    async def health() -> dict:
        """Up, and how many requests are waiting for the model or being decoded."""
        return {"status": "ok", "pending": batcher.pending}

    @app.get("/info", responses=errors(400, 401))
    async def about() -> dict:
        """The run (architecture, languages, shape, vocabulary, validation BLEU) and this server's limits."""
        return info

    @app.api_route("/", methods=["GET", "HEAD"], response_class=HTMLResponse, include_in_schema=False)
    async def explorer_page() -> str:
        return explorer

    return app
