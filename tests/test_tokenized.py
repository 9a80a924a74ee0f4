"""The Arrow-backed training set: the same batches as the list path, built once, rebuilt on change."""

import os

import numpy as np
import pytest
import torch

from seq2seq.data import tokenized
from seq2seq.data.batch import collate, token_batches
from seq2seq.data.corpus import filter_pairs
from seq2seq.errors import Seq2SeqError
from tests.conftest import caption_tokenizer
from tests.helpers import build, tsv_corpus


@pytest.fixture
def mixed_pairs():
    """Captions plus pairs each filter drops: empty, too long, mismatched in length."""
    pairs = [(f"a dog runs {i}", f"un chien court {i}") for i in range(40)]
    pairs += [("", "vide"), (" ", "blanc"), ("a " * 30, "un " * 30), ("a b c d e f g h i j k l", "x")]
    pairs += [(f"two men sit {i}", f"deux hommes assis {i}") for i in range(40)]
    return pairs


def test_arrow_batches_equal_the_list_batches_for_the_same_seed(tmp_path, mixed_pairs):
    tokenizer = caption_tokenizer(tmp_path / "tok.model")
    corpus = tsv_corpus(tmp_path / "corpus", mixed_pairs)
    stored = build(tmp_path / "run", corpus, tokenizer)

    kept, report = filter_pairs(mixed_pairs, tokenizer.count_pieces, max_len=20)  # the list path
    src, tgt = tokenizer.encode([s for s, _ in kept]), tokenizer.encode([t for _, t in kept])
    lengths = [max(len(s), len(t)) + 1 for s, t in zip(src, tgt, strict=True)]
    assert stored.report == report and report.dropped == 4 and report.empty == 2
    assert stored.lengths.tolist() == lengths
    for epoch in range(3):
        ours, theirs = token_batches(stored.lengths, 60, 7, epoch), token_batches(lengths, 60, 7, epoch)
        assert [b.tolist() for b in ours] == [b.tolist() for b in theirs]
        for indices in ours:
            a = collate(*stored.rows(indices), max_len=32)
            b = collate([src[i] for i in indices], [tgt[i] for i in indices], max_len=32)
            assert torch.equal(a.src, b.src) and torch.equal(a.tgt_out, b.tgt_out)


def test_a_second_start_reads_no_text_and_a_change_rebuilds(tmp_path, mixed_pairs):
    tokenizer = caption_tokenizer(tmp_path / "tok.model")
    corpus = tsv_corpus(tmp_path / "corpus", mixed_pairs)
    first = build(tmp_path / "run", corpus, tokenizer)

    def no_text():
        raise AssertionError("the text was read although the stored set is current")

    again = build(tmp_path / "run", corpus, tokenizer, pairs=no_text)
    assert again.folder == first.folder and len(again) == len(first)

    tsv_corpus(tmp_path / "corpus", mixed_pairs[:50])  # the corpus changes
    changed = build(tmp_path / "run", corpus, tokenizer)
    assert changed.folder != first.folder and len(changed) < len(first)
    assert not first.folder.exists()  # the stale set is removed

    other = caption_tokenizer(tmp_path / "tok2.model", vocab_size=60)  # the tokenizer changes
    assert build(tmp_path / "run", corpus, other).folder != changed.folder
    assert build(tmp_path / "run", corpus, other, max_len=10).folder != changed.folder


def test_a_killed_build_leaves_nothing_that_looks_finished(tmp_path, mixed_pairs, monkeypatch):
    tokenizer = caption_tokenizer(tmp_path / "tok.model")
    corpus = tsv_corpus(tmp_path / "corpus", mixed_pairs)

    def killed(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", killed)
    with pytest.raises(KeyboardInterrupt):
        build(tmp_path / "run", corpus, tokenizer)
    monkeypatch.undo()
    assert list((tmp_path / "run" / tokenized.FOLDER).iterdir()) == []
    assert len(build(tmp_path / "run", corpus, tokenizer)) == 80


def test_a_corpus_that_is_all_filtered_out_is_one_line(tmp_path):
    tokenizer = caption_tokenizer(tmp_path / "tok.model")
    corpus = tsv_corpus(tmp_path / "corpus", [("", "x"), ("a " * 40, "b " * 40)])
    with pytest.raises(Seq2SeqError, match="every one of the 2 training pairs was filtered out"):
        build(tmp_path / "run", corpus, tokenizer)


def plain_token_batches(
    lengths: list[int], max_tokens: int, seed: int, epoch: int, then_by: tuple = ()
) -> list[list[int]]:
    """The batching rule written plainly (as it was before it was vectorised for large corpora)."""
    g = torch.Generator().manual_seed(seed * 1_000_003 + epoch)
    noise = torch.rand(len(lengths), generator=g).tolist()
    batches, current = [], []
    for i in sorted(range(len(lengths)), key=lambda i: (lengths[i], *(k[i] for k in then_by), noise[i])):
        if current and lengths[i] * (len(current) + 1) > max_tokens:
            batches.append(current)
            current = []
        current.append(i)
    if current:
        batches.append(current)
    return [batches[j] for j in torch.randperm(len(batches), generator=g).tolist()]


@pytest.mark.parametrize("n,longest", [(0, 1), (1, 5), (7, 3), (500, 40), (3000, 300)])
def test_vectorised_batching_equals_the_plain_rule(n, longest):
    g = torch.Generator().manual_seed(n)
    lengths = torch.randint(1, longest + 1, (n,), generator=g).tolist()
    src = [torch.randint(1, length + 1, (), generator=g).item() for length in lengths]  # a side
    for max_tokens in (1, 2, 64, 3072):
        ours = [b.tolist() for b in token_batches(lengths, max_tokens, seed=3, epoch=n)]
        assert ours == plain_token_batches(lengths, max_tokens, seed=3, epoch=n), max_tokens
        ours = [b.tolist() for b in token_batches(lengths, max_tokens, 3, n, then_by=(np.array(src),))]
        assert ours == plain_token_batches(lengths, max_tokens, 3, n, then_by=(src,)), max_tokens


def test_ordering_by_the_sides_pads_both_sides_less_in_as_many_batches():
    g = torch.Generator().manual_seed(0)
    src, tgt = (
        torch.randint(3, 40, (4000,), generator=g).numpy(),
        torch.randint(3, 40, (4000,), generator=g).numpy(),
    )
    lengths = np.maximum(src, tgt) + 1

    def cells(batches) -> tuple[int, int, int]:
        return (
            len(batches),
            sum(len(b) * src[b].max() for b in batches),
            sum(len(b) * tgt[b].max() for b in batches),
        )

    random_ties = cells(token_batches(lengths, 512, 1, 0))
    by_sides = cells(token_batches(lengths, 512, 1, 0, then_by=(src, tgt)))
    assert (
        by_sides[0] == random_ties[0] and by_sides[1] < 0.9 * random_ties[1] and by_sides[2] < random_ties[2]
    )


def test_a_foreign_tokenizer_is_one_line_before_any_tokenizing(tmp_path, corpus_dir):
    from seq2seq.training.config import TrainConfig
    from seq2seq.training.train import train
    from tests.helpers import REVERSE_MODEL

    run = tmp_path / "run"
    run.mkdir()
    (run / "tokenizer.model").write_bytes(b"not a sentencepiece model")
    with pytest.raises(Seq2SeqError, match="is not a SentencePiece model"):
        train(run, TrainConfig(max_steps=1), REVERSE_MODEL, data_dir=str(corpus_dir))
    assert not (run / tokenized.FOLDER).exists()
