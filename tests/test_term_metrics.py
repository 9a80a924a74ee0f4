"""The terminology benchmark's measures (scripts/term_metrics.py) and its dictionary and control
(scripts/bench_constraints.py), on sentences small enough to check by hand."""

import pytest

from scripts import term_metrics as tm
from scripts.bench_constraints import appended, dictionary, matched

REF = "Un chien noir court sur la plage ."


def test_exact_match_counts_each_term_as_a_whole_word():
    outputs = ["Un Chien court sur la plage .", "Un chat court ."]
    assert tm.exact_match(outputs, [("chien", "plage"), ("chaton",)]) == pytest.approx(2 / 3)


def test_window_overlap_rewards_the_words_around_a_term_not_the_term():
    assert tm.window_overlap([REF], [REF], [("court",)]) == 1.0
    moved = "court un chien noir sur la plage ."  # of "chien noir sur la" around it, "chien" is left
    assert tm.window_overlap([moved], [REF], [("court",)]) == pytest.approx(0.25)
    assert tm.window_overlap(["Un chat ."], [REF], [("court",)]) == 0.0  # no term: not counted


def test_one_minus_term_weighs_a_lost_term_twice():
    assert tm.one_minus_term([REF], [REF], [("plage",)]) == 1.0
    lost_term = "Un chien noir court sur la ."
    lost_other = "Un chien court sur la plage ."
    length = len(tm.words(REF)) + 1  # "plage" weighs 2
    assert tm.one_minus_term([lost_term], [REF], [("plage",)]) == pytest.approx(1 - 2 / length)
    assert tm.one_minus_term([lost_other], [REF], [("plage",)]) == pytest.approx(1 - 1 / length)


def test_masking_takes_a_terms_words_out_of_both_sides():
    assert tm.masked("Un Chien court sur la plage.", ("chien", "plage")) == "Un court sur la"
    bleu, _ = tm.masked_scores(["Un chat court sur la plage ."], [REF], [("plage",)])
    assert bleu < tm.masked_scores([REF], [REF], [("plage",)])[0] == pytest.approx(100.0)


def test_the_append_control_adds_only_what_is_lacking_before_the_stop():
    assert appended("Un chien court.", ("chien", "plage")) == "Un chien court plage."
    assert appended("Un chien court", ("plage",)) == "Un chien court plage"


def test_the_dictionary_keeps_a_words_usual_translation_and_terms_match_both_sides():
    pairs = [("The dog runs .", "Le chien court .")] * 10 + [("A dog sleeps .", "Un toutou dort .")] * 3
    links = ["0-0 1-1 2-2 3-3"] * 13
    assert dictionary(pairs, links) == {"runs": "court"}  # "sleeps" seen 3 times; "dog" too short
    pairs = [("Big doggy runs .", "Le gros chien court .")] * 10
    lexicon = dictionary(pairs, ["1-2 2-3"] * 10)
    assert lexicon == {"doggy": "chien", "runs": "court"}
    assert matched("The doggy runs away .", "Le chien court .", lexicon) == ("chien", "court")
    assert matched("The doggy runs away .", "Le toutou s'en va .", lexicon) == ()
