"""The server's check of a request's lines: its whole-request fast path agrees with the
line-by-line checks for any text, and `is_blank`'s fast path with its definition."""

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("fastapi", reason='the server needs the extra: pip install -e ".[serve]"')

from starlette.exceptions import HTTPException

from seq2seq.data.tokenizer import is_blank
from seq2seq.errors import Seq2SeqError
from seq2seq.serve.lines import all_fine, refuse_first

# spaces, format and control characters, line breaks, lone surrogates, letters
ODD = st.sampled_from(
    [" ", "\t", "\u200b", "\ufeff", "\u00ad", "\x1b", "\n", "\r", "\ud800", "\u00a0", "a", "é"]
)
LINE = st.lists(ODD | st.characters(), max_size=12).map("".join)


@settings(max_examples=400, derandomize=True, deadline=None)
@given(st.lists(LINE, min_size=1, max_size=6), st.integers(1, 12))
def test_the_fast_path_agrees_with_the_line_by_line_checks(lines, max_chars):
    try:
        refuse_first(lines, max_chars, None)
        refused = False
    except (Seq2SeqError, HTTPException):
        refused = True
    assert all_fine(lines, max_chars) == (not refused)


@settings(max_examples=400, derandomize=True, deadline=None)
@given(LINE)
def test_is_blank_is_its_definition(text):
    definition = all(c.isspace() or unicodedata.category(c) in ("Cf", "Cc") for c in text)
    assert is_blank(text) == definition
