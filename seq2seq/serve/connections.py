"""The connections the server keeps: each gets a deadline for its request's headers and one for
its body, an idle connection is closed (uvicorn's keep-alive timeout), and there are at most
MAX_CONNECTIONS at once. A client that opens connections and sends nothing, or a request's headers
a byte at a time (slowloris), or half a body, holds a socket for seconds, not forever; a flood of
connections beyond the bound is answered 503 at once, as one JSON line, and closed.

uvicorn's own limit (`limit_concurrency`) answers in plain text and counts requests in flight; the
bound here is on sockets, checked when one is accepted. The deadlines follow h11's view of the
client: headers are due once it has sent a byte of a request (their state is IDLE with data
buffered), the body once the headers are in (SEND_BODY).
"""

import asyncio
import json

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

HEADER_SECONDS = 10.0  # from the first byte of a request to the end of its headers
BODY_SECONDS = 30.0  # from the end of the headers to the end of the body
IDLE_SECONDS = 5.0  # a keep-alive connection with no request (uvicorn's timeout_keep_alive)
MAX_CONNECTIONS = 1024  # open at once; a listen backlog holds the ones not yet accepted


def canned(status: int, reason: str, message: str, extra: str = "") -> bytes:
    """A whole HTTP/1.1 response with the one-line JSON error, closing the connection."""
    body = json.dumps({"error": message}).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
        f"connection: close\r\n{extra}\r\n"
    )
    return head.encode() + body


class GuardedH11(H11Protocol):
    """uvicorn's h11 protocol with the deadlines and the bound above (the class `serve` runs)."""

    header_seconds, body_seconds, max_connections = HEADER_SECONDS, BODY_SECONDS, MAX_CONNECTIONS

    def connection_made(self, transport: asyncio.Transport) -> None:
        self.deadline: asyncio.TimerHandle | None = None
        self.waiting_for: object = None  # the client state the deadline is for
        if len(self.connections) >= self.max_connections:
            message = f"the server holds its limit of {self.max_connections} connections; retry later"
            transport.write(canned(503, "Service Unavailable", message, "retry-after: 1\r\n"))
            transport.close()
            self.transport = transport
            return
        super().connection_made(transport)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._watch()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._watch()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if self in self.connections:  # a refused connection never joined them
            super().connection_lost(exc)
            # uvicorn cancels its keep-alive timer on a clean close only; a client that resets the
            # connection (it closed with our answer unread) would leave the timer holding this
            # protocol, its request and buffers for the keep-alive's seconds: under a flood of
            # such clients, thousands of them, long enough to reach the oldest generation of
            # Python's collector, which then sweeps them in pauses of 100 ms and more
            self._unset_keepalive_if_required()

    def _watch(self) -> None:
        """Arm the deadline the client's state calls for; disarm it once that state is left."""
        state = self.conn.their_state
        if state is h11.IDLE and self.conn.trailing_data[0]:
            self._arm(state, self.header_seconds, "request headers")
        elif state is h11.SEND_BODY:
            self._arm(state, self.body_seconds, "request body")
        else:
            self._disarm()

    def _arm(self, state, seconds: float, what: str) -> None:
        if self.waiting_for is state:
            return
        self._disarm()
        self.waiting_for = state
        self.deadline = self.loop.call_later(seconds, self._expired, state, seconds, what)

    def _disarm(self) -> None:
        if getattr(self, "deadline", None) is not None:
            self.deadline.cancel()
        self.deadline, self.waiting_for = None, None

    def _expired(self, state, seconds: float, what: str) -> None:
        if self.transport.is_closing() or self.conn.their_state is not state:
            return
        if state is h11.IDLE:  # no request has begun: answer it; a body's request has its handler
            message = f"the {what} did not arrive within {seconds:g} s"
            self.transport.write(canned(408, "Request Timeout", message))
        self.transport.close()
