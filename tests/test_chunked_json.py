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


@settings(max_examples=200, deadline=None, derandomize=True)
@given(values)
def test_any_json_value_is_written_as_json_dumps_writes_it(value):
    assert chunked_json.dumps(value) == json.dumps(value, ensure_ascii=False).encode()


@settings(max_examples=50, deadline=None, derandomize=True)
@given(st.lists(st.integers(0, 3), min_size=0, max_size=4), st.integers(0, 2**31))
def test_tensors_are_written_as_their_lists(shape, seed):
    weights = torch.rand(shape, generator=torch.Generator().manual_seed(seed)).double().round(decimals=4)
    value = {"kinds": {"cross": {"weights": weights, "rows": ["<s>", "le"]}}, "line": None}
    plain = {"kinds": {"cross": {"weights": weights.tolist(), "rows": ["<s>", "le"]}}, "line": None}
    assert chunked_json.dumps(value) == json.dumps(plain, ensure_ascii=False).encode()
