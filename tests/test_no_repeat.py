"""--no-repeat-ngram N (CTranslate2's no_repeat_ngram_size), on every registered architecture: no
hypothesis of any search repeats an n-gram of N pieces, a forced prefix is kept as it is, and the
equivalences hold with it: cached == uncached, batched == alone, beam 1 == greedy. The option is
declared once (DecodeOptions) and reaches every surface from there (tests/test_decode_surfaces.py)."""

from dataclasses import replace

import pytest
import torch

from seq2seq.data.batch import pad
from seq2seq.decoding.options import DecodeOptions
from seq2seq.decoding.prefix import Prefix
from seq2seq.decoding.rules import block_repeats
from seq2seq.decoding.search import search
from seq2seq.errors import Seq2SeqError
from tests.helpers import SOURCES, VARIANTS, make

LOOPS = 30  # pieces: long enough that an untrained model repeats itself, and (n = 1) within the
# vocabulary's 37 pieces that are not special: past them no piece is left to put out


@pytest.fixture(params=list(VARIANTS))
def model(request):
    return make(request.param, seed=5)


def repeats(tokens: list[int], n: int) -> bool:
    grams = [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]
    return len(grams) != len(set(grams))


def outputs(model, options, rows=range(len(SOURCES)), prefix=None):
    rows = list(rows)
    results = search(model, pad([SOURCES[i] for i in rows]), options, prefix)
    return [[h.tokens for h in hyps] for hyps in results]


def test_the_block_cuts_what_followed_the_last_pieces_before():
    history = torch.tensor([[5, 6, 7, 5, 6], [1, 2, 3, 4, 1]])
    for n, cut in ((3, [{7}, set()]), (2, [{7}, {2}]), (1, [{5, 6, 7}, {1, 2, 3, 4}]), (6, [set(), set()])):
        logprobs = torch.zeros(2, 10)
        block_repeats(logprobs, history, n)
        assert [set(torch.isinf(row).nonzero()[:, 0].tolist()) for row in logprobs] == cut


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("beam", [1, 3])
def test_no_hypothesis_repeats_an_ngram_and_without_the_option_some_do(model, n, beam):
    options = DecodeOptions(beam=beam, nbest=beam, min_len=LOOPS, max_len=LOOPS)
    plain = [t for hyps in outputs(model, options) for t in hyps]
    assert any(repeats(t, n) for t in plain)  # else the test shows nothing
    blocked = [t for hyps in outputs(model, replace(options, no_repeat_ngram=n)) for t in hyps]
    assert not any(repeats(t, n) for t in blocked)


def test_sampled_rows_repeat_no_ngram_either(model):
    options = DecodeOptions(beam=1, sample=True, num_samples=3, seed=1, max_len=LOOPS, no_repeat_ngram=2)
    results = search(model, pad(SOURCES), options, seeds=list(range(len(SOURCES) * 3)))
    assert not any(repeats(h.tokens, 2) for hyps in results for h in hyps)


@pytest.mark.parametrize("beam", [1, 3])
def test_cached_equals_uncached_and_batched_equals_alone(model, beam):
    options = DecodeOptions(beam=beam, nbest=beam, max_len=20, no_repeat_ngram=2)
    together = outputs(model, options)
    assert outputs(model, replace(options, use_cache=False)) == together
    assert [outputs(model, options, [i])[0] for i in range(len(SOURCES))] == together


def test_beam_one_is_greedy(model):
    options = DecodeOptions(beam=1, max_len=20, no_repeat_ngram=2)
    greedy = outputs(model, options)
    beam = outputs(model, replace(options, nbest=1), prefix=None)
    assert beam == greedy
    from seq2seq.decoding.beam import beam_search
    from seq2seq.decoding.rules import max_lengths

    src = pad(SOURCES)
    lens = max_lengths(src, options, model.cfg.max_positions - 1)
    searched = [[h.tokens for h in hyps] for hyps in beam_search(model, src, lens, options)]
    assert searched == greedy


def test_a_forced_prefix_is_kept_even_where_it_repeats(model):
    prefix = [9, 9, 9]  # repeats the 1-gram (9,) and the 2-gram (9, 9)
    for beam in (1, 3):
        options = DecodeOptions(beam=beam, nbest=beam, max_len=20, no_repeat_ngram=2)
        forced = Prefix.of([prefix] * len(SOURCES), "cpu")
        for hyps in outputs(model, options, prefix=forced):
            for tokens in hyps:
                assert tokens[:3] == prefix and not repeats(tokens[2:], 2)


def test_out_of_range_is_one_line():
    with pytest.raises(Seq2SeqError, match="no_repeat_ngram: must be at least 0"):
        DecodeOptions(no_repeat_ngram=-1).check()
    with pytest.raises(Seq2SeqError, match="at most the model's longest output \\(63 pieces\\), got 64"):
        DecodeOptions(no_repeat_ngram=64).check_for(40, 63)
