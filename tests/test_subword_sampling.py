"""Subword regularization: source segmentations sampled by the epoch (per step for runs from
before), lossless, reproducible by seed whatever draws them, kept in the run, and resumable exactly."""

import os
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from seq2seq.data.batch import token_batches
from seq2seq.data.sampling import KEPT, SampledPairs
from seq2seq.data.special import UNK_ID
from seq2seq.training.checkpoint import LAST
from seq2seq.training.config import ADDED_SINCE, TrainConfig
from seq2seq.training.train import train
from tests.conftest import EN, caption_tokenizer
from tests.test_tokenized import build, tsv_corpus
from tests.test_train import REVERSE_MODEL, assert_same_training_state, write_reversal_task

CAPTIONS = [f"{caption} {i}" for i, caption in enumerate(EN * 50)]  # what the test tokenizer knows


def test_sampled_pieces_spell_the_text_and_follow_the_seed(tmp_path):
    tokenizer = caption_tokenizer(tmp_path / "tok.model")
    draws = {seed: tokenizer.sample(CAPTIONS, alpha=0.1, seed=seed) for seed in range(8)}
    assert tokenizer.sample(CAPTIONS, alpha=0.1, seed=3) == draws[3]
    assert all(tokenizer.decode(ids) == CAPTIONS for ids in draws.values())
    assert len({str(ids) for ids in draws.values()}) > 1, "every seed drew the same pieces"
    assert any(ids != tokenizer.encode(CAPTIONS) for ids in draws.values())


def test_a_seeded_draw_is_the_same_in_another_process(tmp_path):
    """What a resumed run and the drawing workers rely on: the seed alone decides the pieces, not
    the process (SentencePiece 0.2.2 and 0.2.3 break this)."""
    tokenizer = caption_tokenizer(tmp_path / "tok.model")
    draw = "from seq2seq.data.tokenizer import Tokenizer; import sys; texts = sys.stdin.read().split('\\n')"
    draw += f"; print(Tokenizer({str(tokenizer.path)!r}).sample(texts, 0.1, 3))"
    other = subprocess.run(
        [sys.executable, "-c", draw], input="\n".join(CAPTIONS), capture_output=True, text=True, check=True
    )
    assert other.stdout.strip() == str(tokenizer.sample(CAPTIONS, alpha=0.1, seed=3))


def test_the_stored_set_keeps_the_source_text_of_each_pair(tmp_path):
    tokenizer = caption_tokenizer(tmp_path / "tok.model")
    pairs = [(f"{caption} {i}", f"une phrase {i}") for i, caption in enumerate(CAPTIONS * 5)]
    stored = build(tmp_path / "run", tsv_corpus(tmp_path / "corpus", pairs), tokenizer)
    indices = [0, 7, 14]
    src_ids, _ = stored.rows(indices)
    (texts,) = stored.columns(indices, "src")
    assert texts == [pairs[i][0] for i in indices]
    assert tokenizer.decode(src_ids) == texts


def reversal(tmp_path, **changes) -> TrainConfig:
    corpus = write_reversal_task(tmp_path / "data", n_train=400, n_val=10)
    config = TrainConfig(
        corpus=corpus, src="src", tgt="tgt", vocab_size=32, max_tokens=512, warmup=5, device="cpu", bf16=False
    )
    return replace(config, **changes)


# by_epoch False: how runs from before it sampled; a target alpha: the targets sampled too (with the
# sources' stored pieces at a source alpha of 0)
SAMPLINGS = [(True, 0.1, 0.0), (False, 0.1, 0.0), (True, 0.1, 0.1), (True, 0.0, 0.1)]


@pytest.mark.parametrize(("by_epoch", "alpha", "target_alpha"), SAMPLINGS)
def test_sampling_changes_training_and_a_resumed_run_draws_the_same(tmp_path, by_epoch, alpha, target_alpha):
    model_cfg = replace(REVERSE_MODEL, d_model=32, d_ff=64, dropout=0.0)
    config = reversal(
        tmp_path, subword_alpha=alpha, target_subword_alpha=target_alpha, average=0, sample_by_epoch=by_epoch
    )
    unsampled = {"target_subword_alpha": 0.0} if target_alpha else {"subword_alpha": 0.0}  # what is tested
    assert_resumes_the_same_and_changes_training(tmp_path, config, model_cfg, unsampled)


def assert_resumes_the_same_and_changes_training(tmp_path, config, model_cfg, without: dict) -> None:
    """8 steps straight equal 3 then 5 resumed, and differ from 8 steps with the `without` changes."""
    config = replace(config, cooldown=0.0)  # a rate that ignores the budget: the first invocation's is 3
    train(tmp_path / "straight", replace(config, max_steps=8), model_cfg)
    tokenizer = (tmp_path / "straight" / "tokenizer.model").read_bytes()
    for run in ("resumed", "plain"):
        (tmp_path / run).mkdir()
        (tmp_path / run / "tokenizer.model").write_bytes(tokenizer)
    train(tmp_path / "resumed", replace(config, max_steps=3), model_cfg)
    train(tmp_path / "resumed", replace(config, max_steps=8), model_cfg)
    assert_same_training_state(tmp_path / "straight", tmp_path / "resumed")
    train(tmp_path / "plain", replace(config, **without, max_steps=8), model_cfg)
    changed, plain = load_file(tmp_path / "straight" / LAST), load_file(tmp_path / "plain" / LAST)
    assert not all(torch.equal(changed[k], plain[k]) for k in plain if k.startswith("model."))


def sampled_corpus(tmp_path):
    tokenizer = caption_tokenizer(tmp_path / "tok.model")
    pairs = [(caption, f"une phrase {i % 7}") for i, caption in enumerate(CAPTIONS * 2)]
    return tokenizer, build(tmp_path / "run", tsv_corpus(tmp_path / "corpus", pairs), tokenizer)


def test_an_epochs_sampled_sources_spell_the_text_follow_the_seed_and_set_the_lengths(tmp_path, monkeypatch):
    tokenizer, stored = sampled_corpus(tmp_path)
    monkeypatch.setattr("seq2seq.data.sampling.CHUNK", 7)  # many chunks, a short last one
    epoch = SampledPairs(stored, tokenizer, alpha=0.1, seed=1, epoch=0)
    everything = range(len(stored))
    src, tgt = epoch.rows(everything)
    (texts,) = stored.columns(everything, "src")
    assert tokenizer.decode(src) == texts and tgt == stored.rows(everything)[1]
    assert epoch.lengths.tolist() == [max(len(s), len(t)) + 1 for s, t in zip(src, tgt, strict=True)]
    assert src != stored.rows(everything)[0]  # sampled, not the stored segmentation
    again = SampledPairs(stored, tokenizer, alpha=0.1, seed=1, epoch=0)
    assert again.rows(everything)[0] == src
    assert SampledPairs(stored, tokenizer, alpha=0.1, seed=1, epoch=1).rows(everything)[0] != src
    assert epoch.rows([5, 2])[0] == [src[5], src[2]]


@pytest.mark.parametrize("alpha", [0.1, 0.0])  # 0: the stored sources beside sampled targets
def test_sampled_targets_spell_their_text_follow_the_seed_and_set_the_lengths(tmp_path, monkeypatch, alpha):
    tokenizer, stored = sampled_corpus(tmp_path)
    monkeypatch.setattr("seq2seq.data.sampling.CHUNK", 7)
    everything = range(len(stored))
    stored_src, stored_tgt = stored.rows(everything)
    epoch = SampledPairs(stored, tokenizer, alpha, seed=1, epoch=0, target_alpha=0.1)
    src, tgt = epoch.rows(everything)
    assert tokenizer.decode(tgt) == tokenizer.decode(stored_tgt) and tgt != stored_tgt
    assert (src == stored_src) == (alpha == 0)
    assert epoch.lengths.tolist() == [max(len(s), len(t)) + 1 for s, t in zip(src, tgt, strict=True)]
    assert [a.tolist() for a in epoch.side_lengths()] == [list(map(len, src)), list(map(len, tgt))]
    assert epoch.rows([5, 2]) == ([src[5], src[2]], [tgt[5], tgt[2]])
    again, later = (SampledPairs(stored, tokenizer, alpha, seed=1, epoch=e, target_alpha=0.1) for e in (0, 1))
    assert again.rows(everything) == (src, tgt) and later.rows(everything)[1] != tgt


def test_a_target_keeps_its_stored_pieces_where_a_draw_would_be_cut_or_spell_an_unknown_piece(tmp_path):
    tokenizer = caption_tokenizer(tmp_path / "tok.model")
    pairs = [(caption, f"une phrase {i % 7} " + "☃" * (i % 2)) for i, caption in enumerate(CAPTIONS)]
    stored = build(tmp_path / "run", tsv_corpus(tmp_path / "corpus", pairs), tokenizer)
    everything = range(len(stored))
    _, stored_tgt = stored.rows(everything)
    unknown = [UNK_ID in t for t in stored_tgt]
    assert any(unknown) and not all(unknown)  # the snowman is not in the test tokenizer's vocabulary

    def targets(**limit) -> list[list[int]]:
        drawn = SampledPairs(stored, tokenizer, 0.1, seed=1, epoch=0, target_alpha=0.1, **limit)
        return drawn.rows(everything)[1]

    free, limit = targets(), int(np.median([len(t) for t in stored_tgt]))  # below some draws
    assert any(len(f) > limit for f in free)  # else the limit below tests nothing
    held = targets(target_limit=limit)
    for f, h, t, unk in zip(free, held, stored_tgt, unknown, strict=True):
        assert h == (t if unk or len(f) > limit else f)
    assert any(h != t for h, t in zip(held, stored_tgt, strict=True))


def test_a_target_alpha_is_refused_where_sources_are_sampled_per_step(tmp_path):
    with pytest.raises(ValueError, match="target_subword_alpha needs sample_by_epoch"):
        reversal(tmp_path, target_subword_alpha=0.1, sample_by_epoch=False)


@pytest.mark.parametrize("target_alpha", [0.0, 0.1])
@pytest.mark.parametrize("workers", [2, 3])
def test_worker_processes_draw_what_one_process_draws(tmp_path, monkeypatch, workers, target_alpha):
    tokenizer, stored = sampled_corpus(tmp_path)
    monkeypatch.setattr("seq2seq.data.sampling.CHUNK", 7)  # many chunks, a short last one
    drawn = [
        SampledPairs(stored, tokenizer, 0.1, seed=1, epoch=0, workers=n, target_alpha=target_alpha)
        for n in (1, workers)
    ]
    for name in ("flat", "offsets", "lengths") + (("tgt_flat", "tgt_offsets") if target_alpha else ()):
        np.testing.assert_array_equal(getattr(drawn[0], name), getattr(drawn[1], name))
    everything = range(len(stored))
    assert drawn[0].rows(everything) == drawn[1].rows(everything)
    other = SampledPairs(stored, tokenizer, 0.1, seed=1, epoch=1, workers=workers)
    assert not np.array_equal(other.flat, drawn[0].flat)  # the chunks' seeds follow the epoch


def test_batches_cut_by_the_sampled_lengths_pad_the_sources_less(tmp_path):
    tokenizer, stored = sampled_corpus(tmp_path)
    epoch = SampledPairs(stored, tokenizer, alpha=0.5, seed=1, epoch=0)
    src, _ = epoch.rows(range(len(stored)))

    def source_cells(lengths) -> int:
        return sum(len(b) * max(len(src[i]) for i in b) for b in token_batches(lengths, 96, 1, 0))

    assert source_cells(epoch.lengths) < source_cells(stored.lengths)
    assert np.all(epoch.lengths >= 2)


@pytest.mark.parametrize("by_epoch", [True, False])
def test_the_loop_draws_an_epochs_sources_at_its_start_or_per_step_as_before(tmp_path, monkeypatch, by_epoch):
    drawn = []
    original = SampledPairs.__init__

    def spy(self, pairs, tokenizer, alpha, seed, epoch, kept, workers, target_alpha, target_limit):
        drawn.append(epoch)
        assert kept == tmp_path / "run" / KEPT  # a resumed run reads the epoch's draw back
        assert workers == (os.cpu_count() or 1)  # one training process: every core draws
        original(self, pairs, tokenizer, alpha, seed, epoch, kept, workers, target_alpha, target_limit)

    monkeypatch.setattr(SampledPairs, "__init__", spy)
    config = reversal(tmp_path, subword_alpha=0.1, average=0, epochs=2, sample_by_epoch=by_epoch)
    train(tmp_path / "run", config, replace(REVERSE_MODEL, d_model=32, d_ff=64))
    assert drawn == ([0, 1] if by_epoch else [])
    assert ADDED_SINCE["sample_by_epoch"] is False  # a run from before resumes as it trained


@pytest.mark.parametrize("alpha", [0.1, 0.0])  # the epoch's draw, or the stored segmentation
@pytest.mark.parametrize("order_by_sides", [True, False])
def test_the_loop_orders_ties_by_the_sides_of_what_it_batches(tmp_path, monkeypatch, alpha, order_by_sides):
    seen = []

    def spy(lengths, max_tokens, seed, epoch, then_by=()):
        if seed == config.seed:  # the epoch's batches, not the validation loss's
            seen.append((np.asarray(lengths), then_by))
        return token_batches(lengths, max_tokens, seed, epoch, then_by)

    monkeypatch.setattr("seq2seq.training.loop.token_batches", spy)
    config = reversal(tmp_path, subword_alpha=alpha, average=0, epochs=1, order_by_sides=order_by_sides)
    train(tmp_path / "run", config, replace(REVERSE_MODEL, d_model=32, d_ff=64))
    ((lengths, then_by),) = seen
    if order_by_sides:
        src, tgt = then_by
        assert np.array_equal(np.maximum(src, tgt) + 1, lengths)  # the sides of these very lengths
    else:
        assert then_by == ()
    assert ADDED_SINCE["order_by_sides"] is False  # a run from before resumes with its batches


def test_the_epochs_draw_is_kept_and_read_back_only_when_it_is_that_draw(tmp_path, monkeypatch):
    tokenizer, stored = sampled_corpus(tmp_path)
    kept, everything = tmp_path / "run" / KEPT, range(len(stored))
    drawn = SampledPairs(stored, tokenizer, alpha=0.1, seed=1, epoch=0, kept=kept)
    src = drawn.rows(everything)[0]
    calls = []
    sample = tokenizer.sample
    monkeypatch.setattr(tokenizer, "sample", lambda *args: calls.append(args) or sample(*args))
    again = SampledPairs(stored, tokenizer, alpha=0.1, seed=1, epoch=0, kept=kept)
    assert again.rows(everything)[0] == src and again.lengths.tolist() == drawn.lengths.tolist()
    assert calls == []  # read back, not drawn
    other = SampledPairs(stored, tokenizer, alpha=0.1, seed=1, epoch=1, kept=kept)  # another epoch
    assert len(calls) == 1 and other.rows(everything)[0] != src
    kept.write_bytes(kept.read_bytes()[:100])  # torn by a kill or a full disk
    torn = SampledPairs(stored, tokenizer, alpha=0.1, seed=1, epoch=1, kept=kept)
    assert len(calls) == 2 and torn.rows(everything)[0] == other.rows(everything)[0]
    read_back = SampledPairs(stored, tokenizer, alpha=0.1, seed=1, epoch=1, kept=kept)
    assert len(calls) == 2 and read_back.rows([3])[0] == [other.rows(everything)[0][3]]  # kept again
    with_targets = SampledPairs(stored, tokenizer, alpha=0.1, seed=1, epoch=1, kept=kept, target_alpha=0.1)
    assert len(calls) == 4  # a source-only draw is not this one: both sides drawn
    assert with_targets.rows(everything)[0] == other.rows(everything)[0]  # the sources' draw as before
    again = SampledPairs(stored, tokenizer, alpha=0.1, seed=1, epoch=1, kept=kept, target_alpha=0.1)
    assert len(calls) == 4 and again.rows(everything) == with_targets.rows(everything)
    assert again.lengths.tolist() == with_targets.lengths.tolist()
