"""Lexical constraints in beam search, on every registered architecture: every phrase to include
is in every output and no phrase to avoid is, even phrases the model never puts out unforced; a
constrained beam with none is the plain beam piece for piece; batched == alone, cached ==
uncached; the beam's record replays to the n-best and counts the phrases each node has met."""

from dataclasses import replace

import pytest
import torch

from seq2seq.data.batch import pad
from seq2seq.data.special import EOS_ID
from seq2seq.decoding.constraints import Banks, LineConstraints, State
from seq2seq.decoding.options import DecodeOptions
from seq2seq.decoding.search import search
from seq2seq.decoding.trace import BeamTrace, best_nodes, replay
from tests.helpers import SOURCES, VARIANTS, make

OPTIONS = DecodeOptions(beam=8, nbest=2, max_len=12)  # 4 banks of 2: the fullest holds the n-best


@pytest.fixture(params=list(VARIANTS))
def model(request):
    return make(request.param, seed=3)


def run(model, options, lines, rows=range(len(SOURCES)), trace=None):
    rows = list(rows)
    banks = Banks.of([lines[i] for i in rows], "cpu")
    return search(model, pad([SOURCES[i] for i in rows]), options, trace=trace, banks=banks)


def holds(tokens: list[int], phrase: tuple[int, ...]) -> bool:
    return any(tuple(tokens[i : i + len(phrase)]) == phrase for i in range(len(tokens)))


def unseen(model) -> list[LineConstraints]:
    """For each source: two phrases its plain beam never puts out (in no hypothesis), and one of
    its best output's pieces to avoid."""
    plain = run(model, OPTIONS, [None] * len(SOURCES))
    out = []
    for hyps in plain:
        seen = {t for h in hyps for t in h.tokens}
        fresh = [t for t in range(4, 40) if t not in seen]
        avoid = (hyps[0].tokens[0],) if hyps[0].tokens else ()
        out.append(LineConstraints(((fresh[0], fresh[1]), (fresh[2],)), (avoid,) if avoid else ()))
    return out


def test_every_output_holds_every_phrase_and_none_it_must_avoid(model):
    lines = unseen(model)
    for hyps, line in zip(run(model, OPTIONS, lines), lines, strict=True):
        assert len(hyps) == OPTIONS.nbest
        for h in hyps:
            assert all(holds(h.tokens, p) for p in line.include), (h.tokens, line)
            assert not any(holds(h.tokens, p) for p in line.avoid), (h.tokens, line)
            assert h.unmet == 0


def test_a_phrase_met_ends_its_word(model):
    """No piece that carries on a word (`joins`) follows a phrase just met."""
    joins = torch.ones(40, dtype=torch.bool)
    joins[[EOS_ID, *range(20, 26)]] = False  # pieces that start a word, and the end
    lines = [replace(line, joins=joins) for line in unseen(model)]
    for hyps, line in zip(run(model, OPTIONS, lines), lines, strict=True):
        for h in hyps:
            for phrase in line.include:
                ends = [
                    i + len(phrase)
                    for i in range(len(h.tokens))
                    if tuple(h.tokens[i : i + len(phrase)]) == phrase
                ]
                assert ends and all(e == len(h.tokens) or not joins[h.tokens[e]] for e in ends), (
                    h.tokens,
                    phrase,
                )


def test_a_constrained_beam_without_constraints_is_the_plain_beam(model):
    """Sentences without constraints batched beside constrained ones search as the plain beam."""
    lines = unseen(model)
    mixed = [lines[0], None, lines[2], None]
    plain = run(model, OPTIONS, [None] * len(SOURCES))
    together = run(model, OPTIONS, mixed)
    for i in (1, 3):
        assert [(h.tokens, h.score) for h in together[i]] == [(h.tokens, h.score) for h in plain[i]]
    empty = run(model, OPTIONS, [LineConstraints()] * len(SOURCES))  # no phrase at all: the plain path
    assert [[h.tokens for h in hyps] for hyps in empty] == [[h.tokens for h in hyps] for hyps in plain]


def test_constrained_batched_equals_alone_and_cached_equals_uncached(model):
    lines = unseen(model)
    together = run(model, OPTIONS, lines)
    alone = [run(model, OPTIONS, lines, [i])[0] for i in range(len(SOURCES))]
    uncached = run(model, replace(OPTIONS, use_cache=False), lines)
    for other in (alone, uncached):
        assert [[h.tokens for h in hyps] for hyps in other] == [[h.tokens for h in hyps] for hyps in together]
        scores = [h.score for hyps in other for h in hyps]
        assert scores == pytest.approx([h.score for hyps in together for h in hyps], abs=1e-4)


def test_the_trace_replays_to_the_nbest_and_counts_the_phrases_met(model):
    lines = unseen(model)
    trace = BeamTrace()
    results = run(model, OPTIONS, lines, trace=trace)
    for nodes, hyps, line in zip(trace.nodes, results, lines, strict=True):
        replayed = replay(nodes, OPTIONS.nbest)
        assert [t for t, _ in replayed] == [h.tokens for h in hyps]
        assert [s for _, s in replayed] == pytest.approx([h.score for h in hyps], abs=1e-5)
        by_id = {n["id"]: n for n in nodes}
        assert all(
            by_id[i]["met"] == len(line.include) and by_id[i]["unmet"] == 0 for i in best_nodes(nodes, 2)
        )
        unmet = [n for n in nodes if n["state"] == "finished" and n["unmet"]]
        assert all(n["step"] == OPTIONS.max_len + 1 for n in unmet)  # only at the limit, where all end
        assert {n["met"] for n in nodes[1:]} >= {0, len(line.include)}  # the banks fill as it goes


def test_a_phrase_too_long_for_the_limit_still_ends_every_line():
    """At the length limit a hypothesis must end: with no room left for its phrases, it ends
    unmet (ranked below any that met them), never with no output at all."""
    model = make(next(iter(VARIANTS)), seed=3)
    line = LineConstraints(((33, 34, 35, 36, 37),))
    options = replace(OPTIONS, max_len=3)
    src = pad([SOURCES[0]])
    banks = Banks.of([line], "cpu")
    from seq2seq.decoding.beam import beam_search

    (hyps,) = beam_search(model, src, torch.tensor([3]), options, banks=banks)
    assert hyps and all(h.unmet == 1 for h in hyps)


def test_a_state_meets_a_phrase_whole_and_starts_again_after_a_wrong_piece():
    include = ((5, 6, 7), (9,))
    state = State()
    for token in (5, 6, 5, 6, 7):  # 5 6 then 5: abandoned and begun again
        state = state.advance(token, include)
    assert state.met == 0b01 and state.bank(include) == 3 and state.wanted(include) == [9]
    assert state.advance(9, include).unmet(include) == 0
    assert State().advance(5, include).wanted(include) == [6]
