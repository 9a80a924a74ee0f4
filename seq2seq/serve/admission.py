"""What the server takes on, and for how long it waits: overload is an answer, not a pile-up.

- A request's work is counted before it is queued: lines x beam x the output pieces each line may
  take (its max_len, or max_len_a x its source pieces + max_len_b, at most the model's longest
  output). One above `max_work` is refused (413) however few characters it has.
- The queue holds at most `max_queue` of lines x beam, submitted and not answered; beyond it the
  answer is 503 with `Retry-After`, the seconds the queue takes at the rate seen lately.
- A request waits at most `timeout` seconds (504 after it), and no longer than its client stays:
  either way its future is cancelled, so the worker drops it if it has not started it.
- A refusal is cheap: `Busy` parses a request's raw body (one C-speed `json.loads`), weighs it and
  refuses it there, before the framework routes, validates and checks it. What it parsed is kept
  in the request's scope (`PARSED`): the route validates that, never parsing the body again. Under a flood
  most requests are refused, so that cost is the event loop's, and every client's wait.
"""

import asyncio
import json
import math

import torch
from starlette.exceptions import HTTPException
from starlette.requests import Request

from seq2seq.data.batch import pad
from seq2seq.decoding.options import MAX_SAMPLES, DecodeOptions, chosen
from seq2seq.decoding.prefix import prefix_ids
from seq2seq.decoding.search import max_lengths, output_limit, source_ids
from seq2seq.errors import Seq2SeqError
from seq2seq.serve.batcher import Batcher, Job, rows_per_line
from seq2seq.serve.guard import refuse


def request_work(
    model, tokenizer, lines: list[str], options: DecodeOptions, prefixes: list[str] | None = None
) -> int:
    """Lines x beam (or samples) x output pieces at most, for `lines` decoded with `options` (and
    their prefixes): the output limits the search itself sets (`max_lengths`)."""
    ids, _ = source_ids(model, tokenizer, lines)
    forced = None if prefixes is None else prefix_ids(tokenizer, prefixes, len(lines), output_limit(model))
    return work_of(model, ids, options, forced)


def plan_work(model, plan) -> int:
    """`request_work` of a checked request (request/plan.py's Plan): its pieces, tokenized once."""
    return work_of(model, plan.ids, plan.options, plan.forced)


def work_of(model, ids: list[list[int]], options: DecodeOptions, forced: list[list[int]] | None) -> int:
    lens = None if forced is None else torch.tensor([len(p) for p in forced])
    return rows_per_line(options) * int(max_lengths(pad(ids), options, output_limit(model), lens).sum())


def check_work(work: int, max_work: int) -> None:
    if work > max_work:
        raise HTTPException(
            413,
            f"this request is {work} units of work (lines x beam x output pieces), above this server's "
            f"limit of {max_work}: send fewer lines, a smaller beam or a lower max_len",
        )


def admit(batcher: Batcher, weight: int, max_queue: int) -> None:
    """Refuse (503, with the seconds to wait) work of `weight` that the queue has no room for; a
    queue with nothing in it takes anything (the work limit bounds a request)."""
    if batcher.closing:
        raise HTTPException(503, "the server is stopping; retry later", {"Retry-After": "5"})
    if batcher.pending_work + weight > max_queue and batcher.pending_work > 0:
        queued, wait = batcher.pending_work, max(1, math.ceil(batcher.seconds_for(batcher.pending_work)))
        raise HTTPException(
            503,
            f"the server is busy ({queued} of its {max_queue} lines x beam queued); retry in {wait} s",
            {"Retry-After": str(wait)},
        )


async def answer(request: Request, batcher: Batcher, job: Job, timeout: float):
    """Queue `job` and wait for its answer, its deadline or its client's leaving, whichever comes
    first."""
    future = batcher.submit(job)
    answered = asyncio.wrap_future(future)
    gone = asyncio.ensure_future(_client_gone(request))
    try:
        done, _ = await asyncio.wait({answered, gone}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        gone.cancel()
    if future.cancelled() and batcher.shedding:  # the server stopped before it reached this job
        raise HTTPException(503, "the server is stopping; retry later", {"Retry-After": "5"})
    if answered in done:
        return answered.result()
    future.cancel()  # dropped from the queue if the worker has not taken it
    answered.cancel()
    if gone in done:  # nobody to answer; the status is for the log alone
        raise HTTPException(499, "the client closed the connection")
    raise HTTPException(504, f"no answer within this server's {timeout:g} s a request; the work was dropped")


PARSED = "seq2seq.json"  # the scope's key of the body Busy parsed


def weight_of(fields: object, default_beam: int, max_lines: int, max_beam: int) -> int | None:
    """What a decode request's parsed body will weigh in the queue (its lines x beam, or x
    samples, as `Job.weight`); None when the fields that weigh it are not a JSON object's, or of
    the wrong type, or out of range: the app then says what is wrong."""
    if not isinstance(fields, dict):
        return None
    text, beam = fields.get("text"), fields.get("beam")
    greedy, sample, samples = (
        fields.get("greedy", False),
        fields.get("sample", False),
        fields.get("num_samples", 1),
    )
    lines = len(text) if isinstance(text, list) else 1 if isinstance(text, str) else 0
    if not 0 < lines <= max_lines or type(greedy) is not bool or type(sample) is not bool:
        return None
    if beam is not None and not (type(beam) is int and 1 <= beam <= max_beam):
        return None
    if not (type(samples) is int and 1 <= samples <= MAX_SAMPLES):
        return None
    try:
        asked = chosen({"beam": beam, "sample": sample, "num_samples": samples}, greedy, default_beam)
    except Seq2SeqError:  # sampling with a beam: the app says so
        return None
    return lines * rows_per_line(asked)


class Busy:
    """ASGI middleware: a request to decode that the queue has no room for is refused (503) before
    the app parses it: while the queue is full, before its body is read; else once its raw body is
    weighed (`weight_of`). The app admits it again, by its parsed fields, as the authority."""

    PATHS = ("/translate", "/attention")

    def __init__(
        self, app, batcher: Batcher, max_queue: int, default_beam: int, max_lines: int, max_beam: int
    ):
        self.app, self.batcher, self.max_queue = app, batcher, max_queue
        self.weigh = {"default_beam": default_beam, "max_lines": max_lines, "max_beam": max_beam}

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["path"] not in self.PATHS:
            return await self.app(scope, receive, send)
        messages = []
        try:
            admit(self.batcher, 1, self.max_queue)  # no room even for the least a request can weigh
            if scope["method"] == "POST" and _is_json(scope):
                messages = await _read_body(receive)
                weight = weight_of(_parsed(scope, messages), **self.weigh)
                if weight is not None:
                    admit(self.batcher, weight, self.max_queue)
        except HTTPException as e:  # the queue's refusal, or the body check's (too large, not UTF-8)
            return await refuse(send, e.status_code, e.detail, e.headers)
        return await self.app(scope, _replay(messages, receive), send)


def _parsed(scope, messages: list[dict]) -> object:
    """The body of `messages` parsed, and kept in `scope` for the route (None: not JSON; the
    route's own parse then says why)."""
    try:
        fields = json.loads(b"".join(m.get("body", b"") for m in messages))
    except (ValueError, RecursionError):
        return None
    scope[PARSED] = fields
    return fields


def _is_json(scope) -> bool:
    kind = dict(scope["headers"]).get(b"content-type", b"").split(b";")[0].strip().lower()
    return kind == b"application/json"


async def _read_body(receive) -> list[dict]:
    """The request's messages up to the end of its body (or the client's leaving)."""
    messages = [await receive()]
    while messages[-1]["type"] == "http.request" and messages[-1].get("more_body", False):
        messages.append(await receive())
    return messages


def _replay(messages: list[dict], receive):
    """A receive that gives `messages` again, in order, then whatever the connection says next."""
    waiting = list(messages)

    async def replayed():
        return waiting.pop(0) if waiting else await receive()

    return replayed


async def _client_gone(request: Request) -> None:
    """Returns once the client has closed the connection (the body has been read already)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass
