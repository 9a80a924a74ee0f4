"""Concatenation augmentation: an epoch's pairs, a share of them joined two by two with partners
drawn from (seed, epoch); every pair seen once an epoch, joined pieces spelling the joined texts,
lengths that cut the batches, and training that resumes exactly."""

from dataclasses import replace
from itertools import chain

import numpy as np
import pytest

from seq2seq.data.joining import JoinedPairs
from seq2seq.training.config import TrainConfig
from seq2seq.training.epoch import epoch_pairs
from tests.conftest import EN, FR, caption_tokenizer
from tests.test_subword_sampling import assert_resumes_the_same_and_changes_training, reversal
from tests.test_tokenized import build, tsv_corpus
from tests.test_train import REVERSE_MODEL


class Listed:
    """Pairs held in lists, with the interface JoinedPairs reads."""

    def __init__(self, src: list[list[int]], tgt: list[list[int]]):
        self.src, self.tgt = src, tgt

    def side_lengths(self):
        return np.array([len(s) for s in self.src]), np.array([len(t) for t in self.tgt])

    def rows(self, indices):
        return [self.src[i] for i in indices], [self.tgt[i] for i in indices]


def listed(n: int, seed: int = 0) -> Listed:
    """Pair i: a source of 1-6 pieces all equal to i, a target of 1-6 pieces all equal to -i."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 7, size=(n, 2)).tolist()
    return Listed(
        [[i] * s for i, (s, _) in enumerate(lengths)], [[-i] * t for i, (_, t) in enumerate(lengths)]
    )


def chained(rows: list[list[int]], indices: list[int]) -> list[int]:
    return list(chain.from_iterable(rows[i] for i in indices))


def members_of(rows: list[list[int]]) -> list[list[int]]:
    """The pairs a row of `listed` pieces is made of, in order."""
    return [list(dict.fromkeys(row)) for row in rows]


@pytest.mark.parametrize(("n", "share", "joined"), [(101, 0.5, 25), (100, 1.0, 50), (9, 0.0, 0), (9, 0.3, 1)])
def test_every_pair_is_seen_once_an_epoch_alone_or_joined_to_one_other(n, share, joined):
    pairs = listed(n)
    epoch = JoinedPairs(pairs, pairs.rows, share, seed=1, epoch=0, limit=1000)
    src, tgt = epoch.rows(range(len(epoch)))
    members = members_of(src)
    assert sorted(i for row in members for i in row) == list(range(n))
    assert sum(len(row) == 2 for row in members) == joined and len(epoch) == n - joined
    for row_src, row_tgt, (first, *second) in zip(src, tgt, members, strict=True):
        # the source and the target of a row are the same pairs' in the same order
        assert row_src == chained(pairs.src, [first, *second]) and row_tgt == chained(
            pairs.tgt, [first, *second]
        )
    assert [a.tolist() for a in epoch.side_lengths()] == [list(map(len, src)), list(map(len, tgt))]
    assert epoch.lengths.tolist() == [max(len(s), len(t)) + 1 for s, t in zip(src, tgt, strict=True)]
    some = [len(epoch) - 1, 0, 3]
    assert epoch.rows(some) == ([src[i] for i in some], [tgt[i] for i in some])


@pytest.mark.parametrize(("n", "share"), [(0, 0.5), (1, 1.0), (7, 1.0)])
def test_too_few_pairs_to_join_stay_alone(n, share):
    pairs = listed(n)
    epoch = JoinedPairs(pairs, pairs.rows, share, seed=1, epoch=0, limit=1000)
    src, _ = epoch.rows(range(len(epoch)))
    assert sorted(i for row in members_of(src) for i in row) == list(range(n))
    assert len(epoch) == n - n // 2 and len(epoch.lengths) == len(epoch)  # 7 pairs: 3 joined, 1 alone


def test_the_partners_follow_the_seed_and_the_epoch():
    pairs = listed(60)
    drawn = {
        (seed, epoch): members_of(JoinedPairs(pairs, pairs.rows, 0.5, seed, epoch, 1000).rows(range(45))[0])
        for seed, epoch in [(1, 0), (1, 0), (1, 1), (2, 0)]
    }
    assert len(drawn) == 3
    assert drawn[(1, 0)] != drawn[(1, 1)] and drawn[(1, 0)] != drawn[(2, 0)]


def test_no_joined_side_passes_the_limit():
    pairs = listed(400)
    epoch = JoinedPairs(pairs, pairs.rows, 1.0, seed=1, epoch=0, limit=7)
    src, tgt = epoch.rows(range(len(epoch)))
    joined = [len(m) == 2 for m in members_of(src)]
    assert any(joined) and not all(joined)  # some sums of 1-6 and 1-6 pieces fit 7, others not
    assert all(len(s) <= 7 and len(t) <= 7 for s, t in zip(src, tgt, strict=True))
    nothing_fits = JoinedPairs(pairs, pairs.rows, 1.0, seed=1, epoch=0, limit=1)
    assert nothing_fits.rows(range(len(nothing_fits))) == pairs.rows(range(400))


def test_joined_pieces_are_the_pieces_of_the_joined_texts(tmp_path):
    """Why joining ids is joining texts: each sentence's first piece carries its word boundary."""
    tokenizer = caption_tokenizer(tmp_path / "tok.model")
    for texts in (EN, FR):
        firsts, seconds = texts, texts[1:] + texts[:1]
        pieces = tokenizer.encode([f"{a} {b}" for a, b in zip(firsts, seconds, strict=True)])
        assert pieces == [
            a + b for a, b in zip(tokenizer.encode(firsts), tokenizer.encode(seconds), strict=True)
        ]


@pytest.mark.parametrize("alpha", [0.0, 0.1])  # the stored pieces, and an epoch's sampled ones
def test_an_epoch_of_a_stored_set_joins_its_pairs_as_they_are_read(tmp_path, alpha):
    tokenizer = caption_tokenizer(tmp_path / "tok.model")
    pairs = [(f"{caption} {i}", f"une phrase {i}") for i, caption in enumerate(EN * 6)]
    stored = build(tmp_path / "run", tsv_corpus(tmp_path / "corpus", pairs), tokenizer)
    config = TrainConfig(subword_alpha=alpha, concat=0.5, seed=3)
    epoch, rows = epoch_pairs(stored, tokenizer, config, epoch=2, max_len=64)
    _, plain_rows = epoch_pairs(stored, tokenizer, replace(config, concat=0.0), epoch=2, max_len=64)
    assert isinstance(epoch, JoinedPairs) and len(epoch) == len(stored) - len(stored) // 4
    src, tgt = rows(range(len(epoch)))
    alone_src, alone_tgt = plain_rows(range(len(stored)))
    for row_src, row_tgt, members in zip(src, tgt, epoch.members.tolist(), strict=True):
        parts = [i for i in members if i >= 0]
        assert row_src == chained(alone_src, parts) and row_tgt == chained(alone_tgt, parts)
    assert " ".join(tokenizer.decode(tgt)).count("une phrase") == len(stored)


def test_an_epoch_joins_no_side_past_what_the_model_s_positions_hold(tmp_path):
    """collate keeps max_len - 1 pieces a side (the last position holds EOS or BOS): a join of
    max_len pieces would be cut, so its pairs stay alone; one of max_len - 1 is joined."""
    tokenizer = caption_tokenizer(tmp_path / "tok.model")
    pairs = [(f"{caption} {i}", f"une phrase {i}") for i, caption in enumerate(EN * 6)]
    stored = build(tmp_path / "run", tsv_corpus(tmp_path / "corpus", pairs), tokenizer)
    config = TrainConfig(subword_alpha=0.0, concat=1.0)
    unlimited, _ = epoch_pairs(stored, tokenizer, config, epoch=0, max_len=10_000)
    members, lengths = unlimited.members.tolist(), unlimited.lengths.tolist()
    longer_side = {tuple(m): n - 1 for m, n in zip(members, lengths, strict=True)}  # of each row, in pieces
    max_len = sorted(longer_side.values())[len(longer_side) // 2]
    assert max_len - 1 in longer_side.values() and max_len in longer_side.values()  # the test can fail
    epoch, _ = epoch_pairs(stored, tokenizer, config, epoch=0, max_len=max_len)
    joined = {tuple(m) for m in epoch.members.tolist() if m[1] >= 0}
    assert joined == {m for m, n in longer_side.items() if m[1] >= 0 and n <= max_len - 1}


def test_joining_changes_training_and_a_resumed_run_joins_the_same(tmp_path):
    model_cfg = replace(REVERSE_MODEL, d_model=32, d_ff=64, dropout=0.0)
    config = reversal(tmp_path, subword_alpha=0.1, concat=0.5, average=0)
    assert_resumes_the_same_and_changes_training(tmp_path, config, model_cfg, {"concat": 0.0})


def test_the_per_step_draw_of_older_runs_refuses_joining():
    with pytest.raises(ValueError, match="concat needs sample_by_epoch"):
        TrainConfig(subword_alpha=0.1, sample_by_epoch=False, concat=0.5)
