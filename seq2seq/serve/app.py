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
in a request is ever a path: the run is the one loaded at start. The bodies are requests.py's, the
routes routes.py's; `create_app` wires them over one state.
"""

import asyncio
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager

from fastapi import FastAPI

from seq2seq.errors import Seq2SeqError
from seq2seq.serve.admission import Busy
from seq2seq.serve.batcher import Batcher
from seq2seq.serve.connections import IDLE_SECONDS, GuardedH11
from seq2seq.serve.errors import BodyCheck, add_error_handlers
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
from seq2seq.serve.routes import Served, router
from seq2seq.trust.calibration import Calibration
from seq2seq.views.explorer import page

# /attention's bodies are built in one thread, not the loop's pool of several: building JSON holds
# Python's lock, so a second thread builds nothing faster and only makes one more thread the event
# loop must win the lock from before it can answer anyone
JSON_THREADS = 1


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
    calibration: Calibration | None = None,
    markup=None,
) -> FastAPI:
    """The app serving one loaded run; `calibration`: the trust flags' (None: the package's);
    `markup`: how a document's tags are placed (an alignment Method; None: `seq2seq.align`'s)."""
    limits = limits_of(tokenizer, max_lines, max_chars, max_work, max_queue, request_timeout)
    if beam > limits["max_beam"]:  # else every request that names no beam would be refused
        raise Seq2SeqError(f"--beam {beam} is above this server's limit of {limits['max_beam']}")
    calibration = calibration or Calibration.read()
    batcher = Batcher(model, tokenizer, max_batch, max_wait_ms, on_batch, markup, calibration)
    info = run_info | {"limits": limits, "defaults": {"beam": beam}}
    info["batching"] = {"max_batch": max_batch, "max_wait_ms": max_wait_ms}
    json_thread = ThreadPoolExecutor(JSON_THREADS, thread_name_prefix="seq2seq-json")
    served = Served(model, tokenizer, batcher, info, beam, limits, json_thread, page(), calibration)
    app = FastAPI(
        title="seq2seq",
        summary="Translate, and see the attention of a translation.",
        description=described(limits, api_key is not None),
        lifespan=lifespan(served),
    )
    app.state.served, app.state.batcher = served, batcher  # the batcher: the server sheds its queue
    guard(app, served, api_key, loopback_only)
    app.include_router(router)
    return app


def limits_of(tokenizer, max_lines, max_chars, max_work, max_queue, request_timeout) -> dict:
    """What the server holds a request, and each connection, to (as /info says)."""
    return {
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


def described(limits: dict, keyed: bool) -> str:
    return (
        f"Limits: {limits['max_lines']} lines a request, {limits['max_chars']} characters a line, a beam "
        f"of {limits['max_beam']} at most, {MAX_BODY} bytes a body. Every error is one JSON line, "
        '{"error": "..."}.' + (" Every route but /health needs Authorization: Bearer KEY." if keyed else "")
    )


def lifespan(served: Served):
    """The batcher's worker runs while the app is up; at the end it answers what is queued."""

    @asynccontextmanager
    async def span(_app):
        served.batcher.start()
        yield
        await asyncio.to_thread(served.batcher.stop)
        served.json_thread.shutdown()

    return span


def guard(app: FastAPI, served: Served, api_key: str | None, loopback_only: bool) -> None:
    """The middleware every request passes, the last added first: the body is checked (size,
    UTF-8) as it is read; Busy refuses a request to decode, before its body is read, while the
    queue is full."""
    limits = served.limits
    app.add_middleware(Busy, batcher=served.batcher, max_queue=limits["max_queue"])
    app.add_middleware(BodyCheck, limit=MAX_BODY)
    if api_key is not None:
        app.add_middleware(ApiKey, key=api_key)
    if loopback_only:
        app.add_middleware(HostCheck)
    app.add_middleware(SecurityHeaders, page=served.explorer)
    add_error_handlers(app)
