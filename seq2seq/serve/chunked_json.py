"""A large JSON body built in small pieces: the same text as `json.dumps(value, ensure_ascii=False)`,
but no single call holds Python's lock for long. json.dumps of an /attention answer (megabytes of
weights) is one C call that keeps every other thread, the event loop's included, waiting until it
ends; built map row by map row in a worker thread, the loop gets the lock back between rows and
`/health` answers while 32 such bodies are being built.

`chunks` hands the text over in blocks of about `size` bytes, for a body sent as it is built: the
whole text is never held at once, and the loop writes a block at a time instead of joining,
encoding and copying megabytes in one call each."""

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import Executor

import torch


async def streamed(executor: Executor, value_of: Callable[[], object]) -> AsyncIterator[bytes]:
    """The blocks of `value_of()`'s JSON, each built in `executor` (`value_of` is called there too,
    before the first): a response body the event loop only passes on."""
    loop = asyncio.get_running_loop()
    blocks = _blocks(value_of)  # a generator: nothing of it runs until the first next()
    while (block := await loop.run_in_executor(executor, next, blocks, None)) is not None:
        yield block


def _blocks(value_of: Callable[[], object]) -> Iterator[bytes]:
    yield from chunks(value_of())


def chunks(value, size: int = 1 << 16) -> Iterator[bytes]:
    """`value` (dicts, lists, tensors and JSON scalars) as UTF-8 JSON text, in blocks of at least
    `size` bytes (the last may be shorter)."""
    block, length = [], 0
    for piece in _pieces(value):
        block.append(piece)
        length += len(piece)  # characters: at least as many bytes, so a block is at least `size`
        if length >= size:
            yield "".join(block).encode()
            block, length = [], 0
    if block:
        yield "".join(block).encode()


def _pieces(value) -> Iterator[str]:
    if isinstance(value, torch.Tensor):
        if value.dim() <= 1:  # a row of weights: one short call
            yield json.dumps(value.tolist())
            return
        value = value.unbind(0)
    if isinstance(value, dict):
        yield "{"
        for i, (key, item) in enumerate(value.items()):
            yield (", " if i else "") + json.dumps(key, ensure_ascii=False) + ": "
            yield from _pieces(item)
        yield "}"
    elif isinstance(value, (list, tuple)) and not all(isinstance(item, SCALARS) for item in value):
        yield "["
        for i, item in enumerate(value):
            yield ", " if i else ""
            yield from _pieces(item)
        yield "]"
    else:  # a scalar, or a list of them (a sentence's pieces): short
        yield json.dumps(value, ensure_ascii=False)


SCALARS = (str, int, float, bool, type(None))
