"""The server's one answer for whatever goes wrong: a one-line JSON error (`{"error": "..."}`) with
a 4xx status, from the app's exception handlers, the body check, and their schema for
/openapi.json."""

import codecs

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException

from seq2seq.errors import Seq2SeqError, spelled_fields


class ErrorBody(BaseModel):
    error: str = Field(description="What was wrong, in one line.")


def errors(*statuses: int) -> dict:
    """The error answers a route gives, each the one-line JSON error, for /openapi.json."""
    said = {
        400: "Not JSON, not UTF-8, a Host not this machine's (on loopback), or a blank line.",
        401: "No or a wrong API key (a server started with --api-key).",
        413: "Above a limit: the body's bytes, the lines, a line's characters (GET /info says them).",
        415: "The body is not sent as application/json.",
        422: "A field of the wrong type or out of range, an unknown field, or a beam above the limit.",
    }
    return {status: {"model": ErrorBody, "description": said[status]} for status in statuses}


REQUEST_ERRORS = errors(400, 401, 413, 415, 422)


def add_error_handlers(app: FastAPI) -> None:
    """Every error as {"error": "one line"}: 4xx for the request's fault, 500 (no traceback) for ours."""

    @app.exception_handler(RequestValidationError)
    async def invalid(_request, error: RequestValidationError) -> JSONResponse:
        if isinstance(error.body, bytes):  # FastAPI reads a body as JSON only when the request says it is
            return failure(415, "send the body as JSON, with the header Content-Type: application/json")
        problems = error.errors()
        status = 400 if problems and problems[0]["type"] == "json_invalid" else 422
        return failure(status, describe(problems))

    @app.exception_handler(HTTPException)
    async def refused(_request, error: HTTPException) -> JSONResponse:
        return failure(error.status_code, str(error.detail), error.headers)

    @app.exception_handler(Seq2SeqError)
    async def bad_input(_request, error: Seq2SeqError) -> JSONResponse:
        return failure(422, spelled(error))

    @app.exception_handler(Exception)
    async def bug(_request, error: Exception) -> JSONResponse:  # logged by the server, never sent
        return failure(500, f"internal error ({type(error).__name__}); the server keeps serving")


# the library names fields (errors.FieldError); a body names them thus, here and nowhere else (a
# field not named here: its own name)
NAMES = {
    "lines": "text",
    "prefixes": "prefix",
    "include": "constraints",
    "per_line": "constraints",
    "trace": "beam_trace",
}


def spelled(error: Exception) -> str:
    """A library error in the body's words: the fields it names as JSON names."""
    names = spelled_fields(error, NAMES, str)
    return str(error) if names is None else f"{', '.join(names)}: {error.message}"


def failure(status: int, message: str, headers: dict | None = None) -> JSONResponse:
    return JSONResponse({"error": " ".join(message.split())}, status, headers)


def describe(problems: list[dict]) -> str:
    """Pydantic's list of problems as one line, the first one in words."""
    if not problems:
        return "invalid request"
    first = problems[0]
    kind, where = first["type"], [str(p) for p in first["loc"][1:]]
    field = where[0] if where else None
    if kind == "json_invalid":
        text = f"invalid JSON: {first.get('ctx', {}).get('error', first['msg'])}"
    elif kind == "extra_forbidden":
        text = f"unknown field {field!r}"
    elif kind == "missing":
        text = f"missing field {field!r}" if field else "the request needs a JSON body"
    elif field is None:
        text = f"the body must be a JSON object ({first['msg']})"
    else:
        text = f"{field}: {first['msg']}"
    more = len({p["loc"][:2] for p in problems}) - 1
    return text + (f" (and {more} more)" if more > 0 else "")


class BodyCheck:
    """ASGI middleware: a body larger than `limit` bytes is refused (413) while it is read, before
    it fills memory, and a body that is not UTF-8 gets a 400 that says so."""

    def __init__(self, app, limit: int):
        self.app, self.limit = app, limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        size, utf8 = 0, codecs.getincrementaldecoder("utf-8")()

        async def checked_receive():
            nonlocal size
            message = await receive()
            if message["type"] == "http.request":
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > self.limit:
                    raise HTTPException(
                        413, f"the request body is above this server's limit of {self.limit} bytes"
                    )
                try:
                    utf8.decode(chunk, final=not message.get("more_body", False))
                except UnicodeDecodeError:
                    raise HTTPException(400, "the request body is not valid UTF-8") from None
            return message

        await self.app(scope, checked_receive, send)
