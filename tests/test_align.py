"""Word alignment: Pharaoh files, AER by hand, the merge of pieces into words, the extraction rules,
symmetrization, the gold set's tokenization, Shift-Att, and integrated gradients' completeness."""

import numpy as np
import pytest

from seq2seq.alignment.attribution import attribution, log_probabilities
from seq2seq.alignment.extract import extract, word_scores
from seq2seq.alignment.methods import Method, piece_scores
from seq2seq.alignment.pharaoh import Links, check_ranges, parse_line, read_links
from seq2seq.alignment.score import score
from seq2seq.alignment.symmetry import grow_diag_final_and
from seq2seq.alignment.words import piece_words, split_with_origin, split_words
from seq2seq.data.special import EOS_ID
from seq2seq.decoding.attention import attention
from seq2seq.errors import FieldError, Seq2SeqError
from tests.conftest import caption_tokenizer, tiny_model
from tests.serve_helpers import tiny_rnn


def test_pharaoh_round_trips_sure_and_possible_links(tmp_path):
    line = "0-0 2?1 1-2 3?3"
    links = parse_line(line, "here")
    assert links.sure == {(0, 0), (1, 2)} and links.possible == {(0, 0), (2, 1), (1, 2), (3, 3)}
    assert parse_line(links.pharaoh(), "again") == links
    path = tmp_path / "gold.txt"
    path.write_text(f"{line}\n\n1-1\n")
    assert [len(x.possible) for x in read_links(path)] == [4, 0, 1]


def test_naacl_files_are_read_one_based(tmp_path):
    path = tmp_path / "gold.naacl"
    path.write_text("1 1 1 S\n1 2 3 P\n3 1 2\n")
    gold = read_links(path)
    assert gold[0] == Links({(0, 0)}, {(0, 0), (1, 2)}) and gold[1] == Links() and gold[2].sure == {(0, 1)}


@pytest.mark.parametrize(
    "line, message",
    [("0-1 x", "gold.txt line 1: 'x' is not a link"), ("0-1 1--2", "is not a link")],
)
def test_a_malformed_link_names_the_file_and_line(tmp_path, line, message):
    path = tmp_path / "gold.txt"
    path.write_text(line + "\n")
    with pytest.raises(Seq2SeqError, match=message):
        read_links(path)


def test_a_link_out_of_range_names_its_line():
    with pytest.raises(Seq2SeqError, match=r"g line 2: link 3-0 is out of range \(the pair has 3 source"):
        check_ranges([Links.of({(0, 0)}), Links.of({(3, 0)})], [2, 3], [2, 2], "g")


def test_aer_of_a_toy_alignment_computed_by_hand():
    gold = [Links(sure={(0, 0), (1, 1)}, possible={(0, 0), (1, 1), (2, 1)})]
    found = [{(0, 0), (2, 1), (2, 2)}]  # one sure hit, one possible hit, one miss
    result = score(found, gold)
    # |A|=3 |S|=2 |A&S|=1 |A&P|=2: P = 2/3, R = 1/2, AER = 1 - (1 + 2) / (3 + 2)
    assert (result.precision, result.recall, result.aer) == pytest.approx((2 / 3, 1 / 2, 2 / 5))
    assert score([gold[0].sure], gold).aer == 0.0


def test_the_aers_bootstrap_interval_holds_it_repeats_and_narrows_with_more_pairs():
    import random

    rng = random.Random(0)
    gold, found = [], []
    for _ in range(400):  # pairs of 6 words on the diagonal; each link found with chance 0.8
        sure = {(i, i) for i in range(6)}
        gold.append(Links(sure=sure, possible=set(sure)))
        found.append({link for link in sure if rng.random() < 0.8} | {(0, 5)})
    few, many = score(found[:40], gold[:40]), score(found, gold)
    for r in (few, many):
        assert r.aer_low < r.aer < r.aer_high
    assert many.aer_high - many.aer_low < few.aer_high - few.aer_low  # 10 times the pairs
    assert score(found[:40], gold[:40]) == few  # seeded
    perfect = score([g.sure for g in gold[:40]], gold[:40])
    assert (perfect.aer, perfect.aer_low, perfect.aer_high) == (0.0, 0.0, 0.0)


def test_pieces_merge_into_words_by_the_whitespace_mark():
    assert piece_words(["▁A", "▁do", "g", "▁runs", "."]).tolist() == [0, 1, 1, 2, 2]
    assert piece_words(["x", "▁y"]).tolist() == [0, 1]  # a first piece without the mark is word 0
    pieces = np.array([[0.1, 0.2, 0.3], [0.5, 0.1, 0.0], [0.3, 0.3, 0.2]])  # (3 target, 3 source)
    scores = word_scores(pieces, np.array([0, 0, 1]), np.array([0, 1, 1]))
    # target word 1 = mean of rows 1 and 2; source word 0 = sum of columns 0 and 1
    np.testing.assert_allclose(scores, [[0.3, 0.3], [0.6, 0.1]])


def test_argmax_links_each_target_word_once_intersect_both_ways_and_threshold_by_its_share():
    scores = np.array([[0.7, 0.2, 0.1], [0.1, 0.45, 0.45]])  # (2 target words, 3 source words)
    assert extract(scores, "argmax") == {(0, 0), (1, 1)}
    assert extract(scores, "threshold", 0.4) == {(0, 0), (1, 1), (2, 1)}
    # source word 2's best target word is 1, whose best is source word 1 (the first of a tie): no link
    assert extract(scores, "intersect") == {(0, 0), (1, 1)}
    tie_free = np.array([[0.7, 0.2, 0.1], [0.6, 0.3, 0.1]])
    assert extract(tie_free, "argmax") == {(0, 0), (0, 1)} and extract(tie_free, "intersect") == {(0, 0)}
    # grow: from the intersection {0-0, 1-1}, source word 2's best link (to target 1) neighbours 1-1
    # and covers an unaligned source word
    assert extract(scores, "grow") == {(0, 0), (1, 1), (2, 1)}
    # from {0-0}: 0-1 and 1-1 (source word 1's best) neighbour it, then 2-0 (source word 2's) 1-1
    assert extract(tie_free, "grow") == {(0, 0), (0, 1), (1, 1), (2, 0)}
    with pytest.raises(Seq2SeqError, match="extract: must be one of argmax, intersect, grow, threshold"):
        extract(scores, "best")


def test_grow_diag_final_and_by_hand():
    forward = {(0, 0), (1, 1), (3, 3)}
    reverse = {(0, 0), (1, 1), (1, 2), (3, 4)}
    # from the intersection {0-0, 1-1}, grow 1-2 (a neighbour of 1-1 covering target 2); 3-3 and
    # 3-4 touch nothing aligned; final-and takes forward's 3-3 (both words unaligned), and then
    # not 3-4 (source 3 is aligned by then)
    assert grow_diag_final_and(forward, reverse) == {(0, 0), (1, 1), (1, 2), (3, 3)}
    assert grow_diag_final_and(reverse, forward) == {(0, 0), (1, 1), (1, 2), (3, 4)}


def test_two_directions_are_symmetrized_by_their_mean_scores_by_hand():
    from dataclasses import replace

    from seq2seq.alignment.api import Alignment, symmetrized

    # "a dog" -> "un chien": the forward rows are "un", "chien" over "a", "dog"; the reverse ones
    # (its target words over its source words) "a", "dog" over "un", "chien". Alone, the forward
    # direction links "chien" to "a"; the mean links it to "dog"
    forward = Alignment(["a", "dog"], ["un", "chien"], set(), np.array([[0.9, 0.1], [0.6, 0.4]]), "f")
    reverse = Alignment(["un", "chien"], ["a", "dog"], set(), np.array([[0.8, 0.2], [0.0, 1.0]]), "r")
    (both,) = symmetrized([forward], [reverse], "argmax")
    assert np.allclose(both.scores, [[0.85, 0.05], [0.4, 0.7]])
    assert both.links == {(0, 0), (1, 1)} and extract(forward.scores, "argmax") == {(0, 0), (0, 1)}
    assert both.method == "mean of f and the reverse r"
    blank = Alignment([], [], set(), np.zeros((0, 0)), "f")
    assert symmetrized([blank], [blank])[0].links == set()
    for other in (forward, replace(reverse, scores=np.ones((2, 1)))):  # other words, or fewer scored
        with pytest.raises(Seq2SeqError, match="line 1: the two directions read different words"):
            symmetrized([forward], [other])


def test_the_harmonic_mean_and_the_product_ask_both_directions_to_hold_a_link():
    from seq2seq.alignment.api import Alignment, symmetrized

    # forward: "chien" looks only at "a" (0.9); reverse: "a" looks only at "un". The mean keeps
    # chien-a at 0.45 (one direction holds it); the harmonic mean and the product drop it to 0
    forward = Alignment(["a", "dog"], ["un", "chien"], set(), np.array([[0.8, 0.0], [0.9, 0.1]]), "f")
    reverse = Alignment(["un", "chien"], ["a", "dog"], set(), np.array([[0.6, 0.0], [0.0, 0.5]]), "r")
    at = lambda combine: symmetrized([forward], [reverse], "mass", 0.3, combine)[0]  # noqa: E731
    assert np.allclose(at("mean").scores, [[0.7, 0.0], [0.45, 0.3]])
    assert np.allclose(at("harmonic").scores, [[2 * 0.48 / 1.4, 0.0], [0.0, 0.1 / 0.6]])
    assert np.allclose(at("product").scores, [[0.48, 0.0], [0.0, 0.05]])
    assert at("mean").links == {(0, 0), (0, 1), (1, 1)}
    assert at("harmonic").links == at("product").links == {(0, 0)}
    assert at("product").method == "product of f and the reverse r"
    with pytest.raises(Seq2SeqError, match="combine: must be one of mean, harmonic, product"):
        symmetrized([forward], [reverse], combine="max")


def test_the_gold_tokenization_splits_punctuation_and_apostrophes():
    assert split_words("A woman's dog doesn't run.", "en") == [
        "A",
        "woman",
        "'s",
        "dog",
        "does",
        "n't",
        "run",
        ".",
    ]
    assert split_words("L'homme qu'il voit aujourd'hui, d'accord.", "fr") == [
        "L'", "homme", "qu'", "il", "voit", "aujourd'hui", ",", "d'", "accord", ".",
    ]  # fmt: skip
    words, origin = split_with_origin("l'air libre.", "fr")
    assert words == ["l'", "air", "libre", "."] and origin == [0, 0, 1, 1]


@pytest.fixture(scope="module", params=["transformer", "rnn"])
def tiny(request, tmp_path_factory):
    """A model of each architecture and the caption tokenizer: the methods never ask which."""
    tokenizer = caption_tokenizer(tmp_path_factory.mktemp("align") / "tok.model")
    build = tiny_model if request.param == "transformer" else tiny_rnn
    return build(tokenizer.vocab_size).eval(), tokenizer


def test_shift_att_is_the_attention_moved_by_one_row(tiny):
    model, tokenizer = tiny
    maps = attention(model, tokenizer, "a dog runs", "un chien court")
    T = len(maps.target) - 1
    head = maps.heads("cross")  # the last head
    plain = piece_scores(Method("attention", layer=1, head=head), maps, model, [], [])
    shifted = piece_scores(Method("shift", layer=1, head=head), maps, model, [], [])
    weights = maps.map("cross", 1, head).numpy()
    np.testing.assert_array_equal(plain, weights[:T, :-1])
    np.testing.assert_array_equal(shifted, weights[1 : T + 1, :-1])


def test_integrated_gradients_sum_to_the_change_in_log_probability(tiny):
    model, tokenizer = tiny
    src = [*tokenizer.encode(["a dog runs"])[0], EOS_ID]
    tgt = tokenizer.encode(["un chien"])[0]
    attributions = attribution(model, src, tgt, steps=64)  # (T, S)
    change = log_probabilities(model, src, tgt, 1.0) - log_probabilities(model, src, tgt, 0.0)
    np.testing.assert_allclose(attributions.sum(1), change, rtol=0.02, atol=2e-3)
    one_step = attribution(model, src, tgt, steps=None)  # gradient x input: a different quantity
    assert one_step.shape == attributions.shape and not np.allclose(one_step, attributions)


def test_a_method_out_of_range_names_its_field():
    """The library names fields (`method`, `steps`); the command line spells them as flags."""
    with pytest.raises(FieldError, match="method: must be one of") as refused:
        Method("best")
    assert refused.value.fields == ("method",)
    with pytest.raises(FieldError, match="steps: must be at least 1, not 0"):
        Method("attention", steps=0)
