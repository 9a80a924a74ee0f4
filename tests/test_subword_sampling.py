"""Subword regularization: source segmentations sampled per step, lossless, reproducible by seed,
and resumable exactly."""

from dataclasses import replace

import torch
from safetensors.torch import load_file

from seq2seq.training.checkpoint import LAST
from seq2seq.training.config import TrainConfig
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


def test_sampling_changes_what_is_trained_and_a_resumed_run_draws_the_same(tmp_path):
    model_cfg = replace(REVERSE_MODEL, d_model=32, d_ff=64, dropout=0.0)
    config = reversal(tmp_path, subword_alpha=0.1, average=0)
    train(tmp_path / "straight", replace(config, max_steps=8), model_cfg)
    tokenizer = (tmp_path / "straight" / "tokenizer.model").read_bytes()
    for run in ("resumed", "plain"):
        (tmp_path / run).mkdir()
        (tmp_path / run / "tokenizer.model").write_bytes(tokenizer)
    train(tmp_path / "resumed", replace(config, max_steps=3), model_cfg)
    train(tmp_path / "resumed", replace(config, max_steps=8), model_cfg)
    assert_same_training_state(tmp_path / "straight", tmp_path / "resumed")

    train(tmp_path / "plain", replace(config, subword_alpha=0.0, max_steps=8), model_cfg)
    sampled, plain = load_file(tmp_path / "straight" / LAST), load_file(tmp_path / "plain" / LAST)
    assert not all(torch.equal(sampled[k], plain[k]) for k in plain if k.startswith("model."))
