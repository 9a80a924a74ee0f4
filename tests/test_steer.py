"""Steering the search, on every registered architecture: a forced prefix (greedy and beam),
sampling (seeded, batched == alone) and the beam's record (its replay is the search's n-best).
The equivalences that hold without these hold with them: cached == uncached, batched == one by
one, beam 1 == greedy."""

from dataclasses import replace

import pytest
import torch

from seq2seq.data.batch import pad
from seq2seq.decoding.forced import score_ids
from seq2seq.decoding.options import DecodeOptions
from seq2seq.decoding.prefix import Prefix
from seq2seq.decoding.sampling import Sampler, row_seeds, warp
from seq2seq.decoding.search import search
from seq2seq.decoding.trace import BeamTrace, replay
from tests.helpers import SOURCES, VARIANTS, make

PREFIXES = [[7, 8, 9], [12], [], [20, 21]]  # of SOURCES: lengths differ, one line has none


@pytest.fixture(params=list(VARIANTS))
def model(request):
    return make(request.param, seed=3)


def prefix_of(rows, prefixes=PREFIXES) -> Prefix:
    return Prefix.of([prefixes[i] for i in rows], "cpu")


def run(model, options, rows=range(len(SOURCES)), prefixes=PREFIXES, trace=None, seeds=None):
    rows = list(rows)
    src = pad([SOURCES[i] for i in rows])
    return search(model, src, options, prefix_of(rows, prefixes), trace, seeds)


@pytest.mark.parametrize("beam", [1, 3])
def test_a_prefixed_output_starts_with_its_prefix_and_scores_as_forced_decoding(model, beam):
    options = DecodeOptions(beam=beam, nbest=beam, length_penalty=0.6, max_len=12)
    results = run(model, options)
    for prefix, hyps in zip(PREFIXES, results, strict=True):
        for h in hyps:
            assert h.tokens[: len(prefix)] == prefix
    tokens = [h.tokens for hyps in results for h in hyps]
    srcs = [SOURCES[i] for i, hyps in enumerate(results) for _ in hyps]
    forced = score_ids(model, srcs, tokens, length_penalty=0.6)
    assert [h.score for hyps in results for h in hyps] == pytest.approx([f.score for f in forced], abs=1e-4)


@pytest.mark.parametrize("beam", [1, 3])
def test_prefix_cached_equals_uncached_and_batched_equals_alone(model, beam):
    options = DecodeOptions(beam=beam, nbest=beam, max_len=10)
    together = run(model, options)
    uncached = run(model, replace(options, use_cache=False))
    alone = [run(model, options, [i])[0] for i in range(len(SOURCES))]  # one line: the prefill path
    for other in (uncached, alone):
        assert [[h.tokens for h in hyps] for hyps in other] == [[h.tokens for h in hyps] for hyps in together]
        scores = [h.score for hyps in other for h in hyps]
        assert scores == pytest.approx([h.score for hyps in together for h in hyps], abs=1e-4)


def test_prefix_beam_one_is_greedy(model):
    greedy = run(model, DecodeOptions(beam=1, max_len=10))
    traced = run(model, DecodeOptions(beam=1, max_len=10), trace=BeamTrace())  # beam_search at beam 1
    assert [h[0].tokens for h in traced] == [h[0].tokens for h in greedy]
    assert [h[0].score for h in traced] == pytest.approx([h[0].score for h in greedy], abs=1e-5)


@pytest.mark.parametrize("prefixes", [PREFIXES, [[]] * len(SOURCES)])
@pytest.mark.parametrize("beam", [2, 4])
def test_the_recorded_beam_replays_to_the_searchs_nbest(model, beam, prefixes):
    options = DecodeOptions(beam=beam, nbest=beam, length_penalty=1.0, max_len=9)
    trace = BeamTrace()
    results = run(model, options, prefixes=prefixes, trace=trace)
    assert results == run(model, options, prefixes=prefixes)  # recording changes nothing
    for hyps, nodes in zip(results, trace.nodes, strict=True):
        replayed = replay(nodes, beam)
        assert [t for t, _ in replayed] == [h.tokens for h in hyps]
        assert [s for _, s in replayed] == pytest.approx([h.score for h in hyps], abs=1e-6)
        by_step = {}
        for node in nodes[1:]:
            by_step.setdefault(node["step"], []).append(node)
            assert nodes[node["parent"]]["state"] in ("root", "kept")  # only the beam is extended
        assert all(sum(n["state"] == "kept" for n in step) <= beam for step in by_step.values())
        assert all(len(step) <= 2 * beam for step in by_step.values())


def test_seeded_samples_are_the_same_batched_alone_and_again(model):
    options = DecodeOptions(beam=1, sample=True, num_samples=3, seed=11, max_len=10, temperature=1.5)
    rows = range(len(SOURCES))
    seeds = lambda rows: row_seeds(11, [SOURCES[i] for i in rows], 3)  # noqa: E731
    together = run(model, options, seeds=seeds(rows))
    alone = [run(model, options, [i], seeds=seeds([i]))[0] for i in rows]
    assert [[h.tokens for h in hyps] for hyps in alone] == [[h.tokens for h in hyps] for hyps in together]
    assert run(model, options, seeds=seeds(rows)) == together
    other = run(model, options, seeds=row_seeds(12, SOURCES, 3))
    assert [[h.tokens for h in hyps] for hyps in other] != [[h.tokens for h in hyps] for hyps in together]
    for prefix, hyps in zip(PREFIXES, together, strict=True):
        assert all(h.tokens[: len(prefix)] == prefix for h in hyps)
        assert [h.score for h in hyps] == sorted((h.score for h in hyps), reverse=True)
    drawn = [h.tokens for hyps in together for h in hyps]
    forced = score_ids(model, [SOURCES[i] for i in rows for _ in range(3)], drawn)
    assert [h.score for hyps in together for h in hyps] == pytest.approx([f.score for f in forced], abs=1e-4)


def test_sampling_from_the_top_piece_alone_is_greedy(model):
    greedy = run(model, DecodeOptions(beam=1, max_len=10))
    tiny = 1.1754943508222875e-38  # float32's smallest normal: the least the options take
    for cut in (
        dict(top_k=1),
        dict(top_p=1e-6),
        dict(temperature=1e-4),
        dict(temperature=tiny),
        dict(top_p=tiny),
    ):
        options = DecodeOptions(beam=1, sample=True, seed=0, max_len=10, **cut)
        sampled = run(model, options, seeds=row_seeds(0, SOURCES, 1))
        assert [h[0].tokens for h in sampled] == [h[0].tokens for h in greedy], cut


def test_draws_follow_the_warped_distribution():
    """4,000 draws of one row's distribution: each piece's share within 4 standard errors of its
    probability after the cuts, and nothing drawn that was cut."""
    probs = torch.tensor([0.5, 0.25, 0.15, 0.06, 0.04])
    logprobs = probs.log()[None].expand(4000, -1)
    cases = {
        "plain": (dict(), probs),
        "top-k 2": (dict(top_k=2), torch.tensor([2 / 3, 1 / 3, 0, 0, 0])),
        "top-p 0.8": (dict(top_p=0.8), torch.tensor([0.5, 0.25, 0.15, 0, 0]) / 0.9),
        "epsilon 0.05": (dict(epsilon=0.05), torch.tensor([0.5, 0.25, 0.15, 0.06, 0]) / 0.96),
        "temperature 2": (dict(temperature=2.0), probs.sqrt() / probs.sqrt().sum()),
    }
    for name, (cut, expected) in cases.items():
        options = DecodeOptions(beam=1, sample=True, **cut)
        drawn = Sampler(options, list(range(4000))).choose(logprobs)
        share = torch.bincount(drawn, minlength=5).double() / 4000
        error = (expected.double() * (1 - expected.double()) / 4000).sqrt()
        assert ((share - expected).abs() <= 4 * error + 1e-9).all(), (name, share, expected)


def test_warp_keeps_the_most_likely_piece_whatever_the_cut():
    logprobs = torch.tensor([[0.4, 0.35, 0.25]]).log()
    for cut in (dict(epsilon=0.9), dict(top_p=1e-9), dict(top_k=1)):
        kept = warp(logprobs, **(dict(temperature=1.0, top_k=None, top_p=1.0, epsilon=0.0) | cut))
        assert kept.isfinite().tolist() == [[True, False, False]]


def test_warp_at_float32s_limits_keeps_a_finite_distribution():
    """The extreme temperatures the options allow: the tiniest keeps the best piece alone (as
    greedy), the largest flattens to uniform over the pieces not already cut; never NaN."""
    logprobs = torch.tensor([[0.6, 0.3, 0.1, 0.0]]).log()  # the last piece impossible
    sharp = warp(logprobs, temperature=1.1754943508222875e-38, top_k=None, top_p=1.0, epsilon=0.0)
    assert not sharp.isnan().any() and sharp.exp().tolist() == [[1.0, 0.0, 0.0, 0.0]]
    flat = warp(logprobs, temperature=3.4e38, top_k=None, top_p=1.0, epsilon=0.0)
    assert not flat.isnan().any() and flat[0, :3].exp().tolist() == pytest.approx([1 / 3] * 3)


@pytest.mark.parametrize(
    "cut", [dict(temperature=1e-300), dict(temperature=1e-39), dict(temperature=1e39), dict(top_p=1e-300)]
)
def test_settings_float32_cannot_hold_are_refused(cut):
    from seq2seq.errors import Seq2SeqError

    with pytest.raises(Seq2SeqError, match="float32"):
        DecodeOptions(beam=1, sample=True, **cut).check()


def test_a_prefix_is_refused_past_the_models_output_limit_or_the_vocabulary(tmp_path):
    from seq2seq.decoding.prefix import prefix_ids
    from seq2seq.errors import Seq2SeqError
    from tests.conftest import caption_tokenizer

    tokenizer = caption_tokenizer(tmp_path / "tokenizer.model")
    assert prefix_ids(tokenizer, ["un chien", "", " "], 3, limit=10)[1:] == [[], []]  # blank: none
    with pytest.raises(Seq2SeqError, match=r"prefix 1 has \d+ pieces, above the model.s longest output"):
        prefix_ids(tokenizer, ["un chien court dans la neige"], 1, limit=3)
    with pytest.raises(Seq2SeqError, match="3 lines but 2 prefixes"):
        prefix_ids(tokenizer, ["un", "deux"], 3, limit=10)
