"""The /attention body built in pieces is the text json.dumps makes of the same value."""

import json

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from seq2seq.serve import chunked_json

scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


def written(value) -> bytes:
    return b"".join(chunked_json.chunks(value))


@settings(max_examples=200, deadline=None, derandomize=True)
@given(values)
def test_any_json_value_is_written_as_json_dumps_writes_it(value):
    assert written(value) == json.dumps(value, ensure_ascii=False).encode()


@settings(max_examples=50, deadline=None, derandomize=True)
@given(st.lists(st.integers(0, 3), min_size=0, max_size=4), st.integers(0, 2**31))
def test_tensors_are_written_as_their_lists(shape, seed):
    weights = torch.rand(shape, generator=torch.Generator().manual_seed(seed)).double().round(decimals=4)
    value = {"kinds": {"cross": {"weights": weights, "rows": ["<s>", "le"]}}, "line": None}
    plain = {"kinds": {"cross": {"weights": weights.tolist(), "rows": ["<s>", "le"]}}, "line": None}
    assert written(value) == json.dumps(plain, ensure_ascii=False).encode()


@settings(max_examples=100, deadline=None, derandomize=True)
@given(values, st.integers(1, 64))
def test_the_blocks_join_into_the_same_text_each_at_least_the_size_but_the_last(value, size):
    blocks = list(chunked_json.chunks(value, size))
    assert b"".join(blocks) == json.dumps(value, ensure_ascii=False).encode()
    assert all(len(block) >= size for block in blocks[:-1]) and all(blocks)


def test_a_streamed_body_is_built_in_the_executor_it_is_given():
    import asyncio
    import threading
    from concurrent.futures import ThreadPoolExecutor

    builders = []

    def value():
        builders.append(threading.current_thread().name)
        return {"weights": torch.arange(40_000).reshape(200, 200), "rows": ["é"] * 3}

    async def body() -> bytes:
        with ThreadPoolExecutor(1, thread_name_prefix="builder") as executor:
            return b"".join([block async for block in chunked_json.streamed(executor, value)])

    text = asyncio.run(body())
    assert json.loads(text) == {"weights": torch.arange(40_000).reshape(200, 200).tolist(), "rows": ["é"] * 3}
    assert builders and builders[0].startswith("builder")
