"""seq2seq/alignment/runs.py, what `align` does with a run: the head a guided recipe trained is read
where it was trained (and a run without guidance has none), a reverse run must translate the other
way, and two directions combine into one alignment per pair."""

import pytest

from seq2seq.alignment.api import align
from seq2seq.alignment.methods import Method
from seq2seq.alignment.runs import both_directions, check_turned_round, describe_trained, trained_method
from seq2seq.decoding.attention import cross_layers
from seq2seq.decoding.options import DecodeOptions
from seq2seq.errors import Seq2SeqError
from seq2seq.runs.load import load_run
from tests.helpers import with_train

PAIRS = (["a dog runs", "two men talk"], ["un chien court", "deux hommes parlent"])


def test_a_guided_run_is_read_at_the_head_it_trained_and_an_unguided_one_has_none(run, tmp_path):
    model, _ = load_run(run)
    assert trained_method(run, model, 32) is None
    layers = cross_layers(model)
    guided = with_train(run, tmp_path, "guided", guided_alignment="links", guided_position="input")
    method = trained_method(guided, model, 16)
    assert (method.name, method.layer, method.head, method.steps) == ("shift", max(layers - 1, 1), 1, 16)
    assert "shifted by one (Shift-Att)" in describe_trained(method)


def test_a_reverse_run_must_translate_the_other_way(run, tmp_path):
    with pytest.raises(Seq2SeqError, match="translates en->fr, not fr->en"):
        check_turned_round(run, run)
    check_turned_round(run, with_train(run, tmp_path, "back", src="fr", tgt="en"))


def test_two_directions_give_one_alignment_a_pair_within_its_words(run):
    model, tokenizer = load_run(run)
    options = DecodeOptions(beam=2)
    forward = align(model, tokenizer, *PAIRS, Method(), "argmax", 0.0, options)
    both = both_directions(forward, (model, tokenizer), Method(), ("intersect", 0.5, "mean"), options)
    assert len(both) == len(forward)
    for a in both:
        assert a.links and all(i < len(a.source_words) and j < len(a.target_words) for i, j in a.links)
