"""The trust signals (seq2seq/trust/signals.py) on every registered architecture: the sentence
score is forced decoding's (`score_pairs`), words carry their pieces' log-probabilities, the same
pair gives the same signals alone or in a batch, the second pass changes none of the first's; the
benchmark's cases (seq2seq/trust/cases.py) make each error as it says, scored by a correct AUROC;
a detector fitted on them finds what it was fitted to, and a calibration is kept and read whole."""

import random

import numpy as np
import pytest
import torch

from scripts import bench_trust
from seq2seq.decoding.forced import score_pairs
from seq2seq.errors import Seq2SeqError
from seq2seq.runs.load import load_run
from seq2seq.trust import cases as bench_cases
from seq2seq.trust.calibration import Calibration, fit, threshold_within
from seq2seq.trust.signals import Signals, check_pairs
from tests.conftest import caption_tokenizer, tiny_model, write_run
from tests.serve_helpers import tiny_rnn

SOURCES = ["a dog runs in the park", "two men talk", "a girl in a red coat sits on a bench"]
TARGETS = ["un chien court dans le parc", "deux hommes parlent parlent parlent parlent", ""]


@pytest.fixture(scope="module", params=["transformer", "rnn"])
def pair(request, tmp_path_factory):
    root = tmp_path_factory.mktemp("trust")
    tokenizer = caption_tokenizer(root / "tok.model")
    make = (lambda v: tiny_model(v, seed=3)) if request.param == "transformer" else (lambda v: tiny_rnn(v, 3))
    return load_run(write_run(root / "run", make, tokenizer))


def test_the_score_is_forced_decodings_and_words_hold_their_pieces(pair):
    model, tokenizer = pair
    signals = check_pairs(model, tokenizer, SOURCES, TARGETS)
    forced = score_pairs(model, tokenizer, SOURCES, TARGETS)
    for s, f, target in zip(signals, forced, TARGETS, strict=True):
        assert s.score * f.pieces == pytest.approx(f.total, abs=1e-3)
        assert s.target_words == target.split() and len(s.word_logprobs) == len(s.target_words)
        assert all(lp <= 0 for lp in s.word_logprobs)
        assert sum(s.word_logprobs) >= f.total - 1e-4  # the end of sentence's share is left out
    assert [len(s.coverage) for s in signals] == [len(x.split()) for x in SOURCES]
    assert signals[1].repetition > 0 and signals[0].repetition == 0
    assert signals[2].target_words == [] and signals[2].coverage == [0.0] * len(SOURCES[2].split())


def test_a_pair_gives_the_same_signals_alone_or_in_a_batch(pair):
    model, tokenizer = pair
    together = check_pairs(model, tokenizer, SOURCES, TARGETS, batch_size=3, dependence=True)
    for i in range(len(SOURCES)):
        (alone,) = check_pairs(model, tokenizer, [SOURCES[i]], [TARGETS[i]], batch_size=1, dependence=True)
        assert alone.score == pytest.approx(together[i].score, abs=1e-5)
        assert alone.dependence == pytest.approx(together[i].dependence, abs=1e-5)
        assert np.allclose(alone.coverage, together[i].coverage, atol=1e-5)
        assert np.allclose(alone.word_logprobs, together[i].word_logprobs, atol=1e-5)


def test_the_signals_are_the_public_apis():
    import seq2seq

    assert seq2seq.check_pairs is check_pairs and "check_pairs" in seq2seq.__all__


def test_pairs_that_do_not_pair_up_are_one_line(pair):
    model, tokenizer = pair
    with pytest.raises(Seq2SeqError, match="2 sources but 1 translations"):
        check_pairs(model, tokenizer, SOURCES[:2], TARGETS[:1])
    with pytest.raises(Seq2SeqError, match=r"translation 1 has \d+ pieces; the model's limit"):
        check_pairs(model, tokenizer, ["a"], ["chien " * 200])


def test_each_error_of_the_benchmark_is_made_as_it_says():
    words = ["un", "homme", "en", "veste", "rouge", "marche", "dans", "la", "rue", "."]
    other = ["deux", "enfants", "jouent", "au", "ballon", "sur", "la", "plage", "."]
    rng = random.Random(0)
    assert bench_cases.wronged("omission, clause", words, other, rng) == [
        "un",
        "homme",
        "en",
        "veste",
        "rouge",
        "marche",
        ".",
    ]
    dropped = bench_cases.wronged("omission, words", words, other, rng)
    assert len(dropped) == len(words) - 2 and "marche" not in dropped and "homme" not in dropped
    assert bench_cases.wronged("hallucination, other", words, other, rng) == other
    assert bench_cases.wronged("hallucination, loop", words, other, rng) == ["un", "homme", "en"] * 4
    swapped = bench_cases.wronged("wrong word", words, other, rng)
    assert len(swapped) == len(words) and sum(a != b for a, b in zip(swapped, words, strict=True)) == 1
    assert bench_cases.wronged("omission, clause", ["un", "chien", "."], other, rng) is None


def test_the_cases_hold_every_pair_as_it_is_and_never_a_pair_with_its_own_reference():
    pairs = [(f"source {i}", f"le chat numero{i} dort dans la maison rouge .") for i in range(20)]
    built = bench_cases.cases(pairs, seed=1)
    assert [t for k, _, t in built if k == "correct"] == [t for _, t in pairs]
    for kind, source, translation in built:
        if kind != "correct":
            assert translation != dict(pairs)[source], kind
    assert built == bench_cases.cases(pairs, seed=1)  # seeded


def test_auroc_is_the_chance_a_wrong_pair_scores_above_a_right_one():
    assert bench_trust.auroc(np.array([3.0, 4.0]), np.array([1.0, 2.0])) == 1.0
    assert bench_trust.auroc(np.array([1.0, 2.0]), np.array([3.0, 4.0])) == 0.0
    assert bench_trust.auroc(np.array([1.0, 1.0]), np.array([1.0, 1.0])) == 0.5
    assert bench_trust.auroc(np.array([2.0, 4.0]), np.array([1.0, 3.0])) == 0.75


def test_the_second_pass_adds_the_dependence_and_changes_nothing_else(pair):
    model, tokenizer = pair
    first = check_pairs(model, tokenizer, SOURCES[:2], TARGETS[:2])
    both = check_pairs(model, tokenizer, SOURCES[:2], TARGETS[:2], dependence=True)
    empty = score_pairs(model, tokenizer, [""] * 2, TARGETS[:2])  # an empty source: EOS alone
    for a, b, e in zip(first, both, empty, strict=True):
        assert a.dependence is None and b.dependence is not None
        assert (a.score, a.coverage, a.word_logprobs) == (b.score, b.coverage, b.word_logprobs)
        assert b.dependence == pytest.approx(b.score - e.total / e.pieces, abs=1e-3)


def test_a_detector_finds_what_it_was_fitted_to_and_says_the_prior_it_was_given():
    rng = np.random.default_rng(0)
    right = rng.normal(0.0, 1.0, (200, 5))
    wrong = right[:100] + np.array([3.0, 0.0, 0.0, 0.0, 0.0])  # only the first feature tells
    even, rare = (fit(torch.tensor(wrong), torch.tensor(right), prior) for prior in (0.5, 0.05))
    assert even.weights[0] > 5 * max(abs(w) for w in even.weights[1:5])
    assert even.threshold == rare.threshold == float("inf")  # set later by FLAGGED

    def mean_probability(detector, rows):
        return np.mean([detector.probability(Signals([], [], [], [], -r[0], 0.0, 1.0)) for r in rows])

    # the probability follows the prior: where errors are rare, the same signals say less
    assert mean_probability(rare, right) < 0.5 * mean_probability(even, right)


def test_a_threshold_flags_at_most_its_share_of_each_group():
    people, own = torch.arange(100.0), torch.arange(50.0) * 2  # 0..99 and 0, 2, .., 98
    threshold = threshold_within([people, own], (0.05, 0.10))
    assert int((people >= threshold).sum()) <= 5 and int((own >= threshold).sum()) <= 5
    assert int((people >= threshold - 1).sum()) > 5  # the lowest that keeps to both
    assert threshold_within([torch.ones(10)], (0.0,)) > 1.0  # ties: none may reach it


def test_a_calibration_is_kept_whole_and_a_bad_one_is_one_line(tmp_path):
    shipped = Calibration.read()  # the package's, where a run has none
    assert Calibration.read(tmp_path / "none.json") == shipped and "val" in shipped.fitted_on
    shipped.write(tmp_path / "trust.json")
    assert Calibration.read(tmp_path / "trust.json") == shipped
    (tmp_path / "bad.json").write_text('{"omission": 1}')
    with pytest.raises(Seq2SeqError, match="is no calibration"):
        Calibration.read(tmp_path / "bad.json")
