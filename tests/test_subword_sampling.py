"""Subword regularization: source segmentations sampled by the epoch, lossless, reproducible by seed
whatever draws them, kept in the run, and resumable exactly."""

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
from seq2seq.runs.files import LAST
from seq2seq.training.config import TrainConfig
from seq2seq.training.train import train
from tests.conftest import EN, caption_tokenizer
from tests.helpers import REVERSE_MODEL, assert_same_training_state, build, tsv_corpus, write_reversal_task

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


def test_sampling_changes_training_and_a_resumed_run_draws_the_same(tmp_path):
    model_cfg = replace(REVERSE_MODEL, d_model=32, d_ff=64, dropout=0.0)
    config = reversal(tmp_path, subword_alpha=0.1, average=0)
    assert_resumes_the_same_and_changes_training(tmp_path, config, model_cfg, {"subword_alpha": 0.0})


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


@pytest.mark.parametrize("workers", [2, 3])
def test_worker_processes_draw_what_one_process_draws(tmp_path, monkeypatch, workers):
    tokenizer, stored = sampled_corpus(tmp_path)
    monkeypatch.setattr("seq2seq.data.sampling.CHUNK", 7)  # many chunks, a short last one
    drawn = [SampledPairs(stored, tokenizer, 0.1, seed=1, epoch=0, workers=n) for n in (1, workers)]
    for name in ("flat", "offsets", "lengths"):
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


def test_the_loop_draws_an_epochs_sources_at_its_start(tmp_path, monkeypatch):
    drawn = []
    original = SampledPairs.__init__

    def spy(self, pairs, tokenizer, alpha, seed, epoch, kept, workers):
        drawn.append(epoch)
        assert kept == tmp_path / "run" / KEPT  # a resumed run reads the epoch's draw back
        assert workers == (os.cpu_count() or 1)  # one training process: every core draws
        original(self, pairs, tokenizer, alpha, seed, epoch, kept, workers)

    monkeypatch.setattr(SampledPairs, "__init__", spy)
    config = reversal(tmp_path, subword_alpha=0.1, average=0, epochs=2)
    train(tmp_path / "run", config, replace(REVERSE_MODEL, d_model=32, d_ff=64))
    assert drawn == [0, 1]


@pytest.mark.parametrize("alpha", [0.1, 0.0])  # the epoch's draw, or the stored segmentation
def test_the_loop_orders_ties_by_the_sides_of_what_it_batches(tmp_path, monkeypatch, alpha):
    seen = []

    def spy(lengths, max_tokens, seed, epoch, then_by=()):
        if seed == config.seed:  # the epoch's batches, not the validation loss's
            seen.append((np.asarray(lengths), then_by))
        return token_batches(lengths, max_tokens, seed, epoch, then_by)

    monkeypatch.setattr("seq2seq.training.epoch.token_batches", spy)
    config = reversal(tmp_path, subword_alpha=alpha, average=0, epochs=1)
    train(tmp_path / "run", config, replace(REVERSE_MODEL, d_model=32, d_ff=64))
    ((lengths, (src, tgt)),) = seen
    assert np.array_equal(np.maximum(src, tgt) + 1, lengths)  # the sides of these very lengths


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
