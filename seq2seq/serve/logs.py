"""Logging a repeated error once: a flood of bad requests (or one bug hit by every request) would
otherwise write a line, or a traceback, per request, and a disk or a terminal fills faster than the
server answers. The first record of a kind passes; the same kind again within WINDOW seconds is
counted, not written; the first one after the window passes with the count of those held back.
A kind is the logger, the level, the message's first line and the exception's type."""

import logging
import time

WINDOW = 60.0
ERRORS = "uvicorn.error"  # where uvicorn and Starlette log failed requests and unhandled exceptions


class Repeats(logging.Filter):
    def __init__(self, window: float = WINDOW, clock=time.monotonic):
        super().__init__()
        self.window, self.clock = window, clock
        self.seen: dict[tuple, tuple[float, int]] = {}  # kind -> (when it last passed, held back since)

    def filter(self, record: logging.LogRecord) -> bool:
        kind = (
            record.name,
            record.levelno,
            record.getMessage().split("\n", 1)[0],
            record.exc_info[0] if record.exc_info else None,
        )
        now = self.clock()
        passed, held = self.seen.get(kind, (None, 0))
        if passed is not None and now - passed < self.window:
            self.seen[kind] = (passed, held + 1)
            return False
        if held:
            record.msg = f"{record.msg} (and {held} more like it in the last {self.window:g} s, not logged)"
        self.seen[kind] = (now, 0)
        return True


def hold_repeats(logger_name: str = ERRORS) -> None:
    """Give the logger one Repeats filter (once, however often the server is configured)."""
    logger = logging.getLogger(logger_name)
    if not any(isinstance(f, Repeats) for f in logger.filters):
        logger.addFilter(Repeats())
