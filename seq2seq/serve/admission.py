"""What the server takes on, and for how long it waits: overload is an answer, not a pile-up.

- A request's work is counted before it is queued: lines x beam x the output pieces each line may
  take (its max_len, or max_len_a x its source pieces + max_len_b, at most the model's longest
  output). One above `max_work` is refused (413) however few characters it has.
- The queue holds at most `max_queue` of lines x beam, submitted and not answered; beyond it the
  answer is 503 with `Retry-After`, the seconds the queue takes at the rate seen lately.
- A request waits at most `timeout` seconds (504 after it), and no longer than its client stays:
  either way its future is cancelled, so the worker drops it if it has not started it.
- A refusal is cheap: while the queue is full `Busy` refuses before the body is read; otherwise the
  route admits a request by its validated fields (its lines x beam) before any line of it is
  checked or tokenized. Under a flood most requests are refused, so that cost is the event loop's,
  and every client's wait.
"""

import asyncio
import math
from concurrent.futures import Future

from starlette.exceptions import HTTPException
from starlette.requests import Request

from seq2seq.serve.batcher import Batcher
from seq2seq.serve.guard import refuse


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


async def answer(request: Request, batcher: Batcher, future: Future, timeout: float):
    """Wait for a queued job's answer (`future`, from `Batcher.submit`), its deadline or its
    client's leaving, whichever comes first."""
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


class Busy:
    """ASGI middleware: while the queue has no room even for the least a request can weigh, a
    request to decode is refused (503) before its body is read. Otherwise it goes on to the app,
    which parses its body once (pydantic) and admits it by its validated fields before any line of
    it is checked or tokenized (`Served.options`)."""

    PATHS = ("/translate", "/attention")

    def __init__(self, app, batcher: Batcher, max_queue: int):
        self.app, self.batcher, self.max_queue = app, batcher, max_queue

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["path"] in self.PATHS:
            try:
                admit(self.batcher, 1, self.max_queue)
            except HTTPException as e:
                return await refuse(send, e.status_code, e.detail, e.headers)
        return await self.app(scope, receive, send)


async def _client_gone(request: Request) -> None:
    """Returns once the client has closed the connection (the body has been read already)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass
