"""A large JSON body built in small pieces: the same text as `json.dumps(value, ensure_ascii=False)`,
but no single call holds Python's lock for long. json.dumps of an /attention answer (megabytes of
weights) is one C call that keeps every other thread, the event loop's included, waiting until it
ends; built map row by map row in a worker thread, the loop gets the lock back between rows and
`/health` answers while 32 such bodies are being built."""

import json
from collections.abc import Iterator

import torch


def dumps(value) -> bytes:
    """`value` (dicts, lists, tensors and JSON scalars) as UTF-8 JSON text."""
    return "".join(_pieces(value)).encode()


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
