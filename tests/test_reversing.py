"""Bidirectional training: the first N epochs hold every pair both ways, the reversed ones in the
stored pieces; rows read in any order, lengths that cut the batches, training that resumes exactly,
and a model that learns both directions."""

import json
import random
from dataclasses import replace

import pytest

from seq2seq.data.reversing import BothWays
from seq2seq.decoding.search import DecodeOptions, translate
from seq2seq.training.checkpoint import load_run
from seq2seq.training.config import TrainConfig
from seq2seq.training.epoch import epoch_pairs
from seq2seq.training.train import train
from tests.cli_helpers import run_cli
from tests.conftest import write_multi30k
from tests.test_joining import Listed, listed
from tests.test_subword_sampling import assert_resumes_the_same_and_changes_training, reversal, sampled_corpus
from tests.test_train import REVERSE_MODEL


def test_both_ways_holds_the_epoch_s_pairs_then_the_stored_ones_reversed():
    forward = listed(9, seed=1)  # as a sampled epoch beside its stored set, told apart by the pieces
    stored = Listed([[1000 + p for p in row] for row in forward.src], [[2000] * 3 for _ in range(9)])
    epoch = BothWays(forward, forward.rows, stored)
    assert len(epoch) == 18
    src, tgt = epoch.rows(range(18))
    assert (src[:9], tgt[:9]) == forward.rows(range(9))
    assert (tgt[9:], src[9:]) == stored.rows(range(9))  # target -> source, in the stored pieces
    assert [a.tolist() for a in epoch.side_lengths()] == [list(map(len, src)), list(map(len, tgt))]
    assert epoch.lengths.tolist() == [max(len(s), len(t)) + 1 for s, t in zip(src, tgt, strict=True)]
    mixed = [17, 0, 9, 4, 12, 8]  # any order, both halves interleaved, as a batch reads them
    assert epoch.rows(mixed) == ([src[i] for i in mixed], [tgt[i] for i in mixed])
    assert epoch.rows([3]) == forward.rows([3]) and epoch.rows([]) == ([], [])


# the stored pieces, an epoch's sampled sources, and its sampled targets
@pytest.mark.parametrize(("alpha", "target_alpha"), [(0.0, 0.0), (0.1, 0.0), (0.0, 0.1)])
def test_the_first_n_epochs_train_both_ways_the_rest_forward(tmp_path, alpha, target_alpha):
    tokenizer, stored = sampled_corpus(tmp_path)
    config = TrainConfig(subword_alpha=alpha, target_subword_alpha=target_alpha, bidirectional=2, seed=3)
    n = len(stored)
    stored_src, stored_tgt = stored.rows(range(n))
    for epoch in (0, 1, 2):
        pairs, rows = epoch_pairs(stored, tokenizer, config, epoch, max_len=64)
        _, forward_rows = epoch_pairs(stored, tokenizer, replace(config, bidirectional=0), epoch, 64)
        assert len(pairs.lengths) == (2 * n if epoch < 2 else n)
        src, tgt = rows(range(len(pairs.lengths)))
        assert (src[:n], tgt[:n]) == forward_rows(range(n))  # the epoch's own (sampled) pairs first
        if epoch < 2:
            assert (src[n:], tgt[n:]) == (stored_tgt, stored_src)  # then each reversed, unsampled
        assert (src[:n] != stored_src, tgt[:n] != stored_tgt) == (alpha > 0, target_alpha > 0)


def test_bidirectional_training_changes_training_and_a_resumed_run_draws_the_same(tmp_path):
    model_cfg = replace(REVERSE_MODEL, d_model=32, d_ff=64, dropout=0.0)
    # 3 steps end inside the both-ways epoch 0 (4 batches), 8 run through forward epochs of 2
    config = reversal(tmp_path, subword_alpha=0.1, bidirectional=1, average=0, max_tokens=2048)
    assert_resumes_the_same_and_changes_training(tmp_path, config, model_cfg, {"bidirectional": 0})


def test_the_per_step_draw_of_older_runs_and_joining_refuse_bidirectional_training():
    with pytest.raises(ValueError, match="bidirectional needs sample_by_epoch"):
        TrainConfig(subword_alpha=0.1, sample_by_epoch=False, bidirectional=2)
    TrainConfig(subword_alpha=0.0, sample_by_epoch=False, bidirectional=2)  # nothing drawn: fine
    with pytest.raises(ValueError, match="bidirectional and concat cannot be combined"):
        TrainConfig(bidirectional=2, concat=0.5)


def test_the_command_line_sets_it_in_the_recipe_and_refuses_it_with_concat(capsys, monkeypatch, tmp_path):
    data = write_multi30k(tmp_path / "corpus", {"train": 40, "val": 4})
    args = ["train", "--data-dir", str(data), "--run", str(tmp_path / "run"), "--bidirectional", "2"]
    result = run_cli([*args, "--concat", "0.5"], capsys, monkeypatch, b"")
    assert result.code == 2 and "bidirectional and concat cannot be combined" in result.err
    assert len(result.err.splitlines()) == 1 and not (tmp_path / "run").exists()
    result = run_cli([*args, "--preset", "tiny", "--max-steps", "1"], capsys, monkeypatch, b"")
    assert result.code == 0, result.err
    assert json.loads((tmp_path / "run" / "config.json").read_text())["train"]["bidirectional"] == 2


def digits_to_letters(folder, n: int, seed: int = 0) -> str:
    """src: 3-6 random digits; tgt: the same as letters (0 -> a, ...), so each direction is its
    own task and the source's symbols tell which."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for split, count in (("train", n), ("val", 10)):
        lines = []
        for _ in range(count):
            digits = [rng.randrange(10) for _ in range(rng.randint(3, 6))]
            lines.append(" ".join(map(str, digits)) + "\t" + " ".join("abcdefghij"[d] for d in digits) + "\n")
        (folder / f"{split}.tsv").write_text("".join(lines))
    return str(folder / "{split}.tsv")


def exact(model, tokenizer, sources: list[str], targets: list[str]) -> float:
    outputs = translate(model, tokenizer, sources, DecodeOptions(beam=1)).best
    return sum(o == t for o, t in zip(outputs, targets, strict=True)) / len(targets)


def test_a_model_trained_both_ways_translates_back_from_the_target_language(tmp_path):
    """Letters in, digits out is a task only the reversed pairs teach (the corpus maps digits to
    letters): 250 small steps learn both directions (0.88 and 0.84 exact when written)."""
    corpus = digits_to_letters(tmp_path / "data", n=2000)
    config = TrainConfig(
        corpus=corpus, src="src", tgt="tgt", vocab_size=40, max_tokens=256, lr=3e-3, warmup=50,
        label_smoothing=0.0, subword_alpha=0.0, bidirectional=2, epochs=2, average=0, device="cpu",
        bf16=False,
    )  # fmt: skip
    train(tmp_path / "run", config, replace(REVERSE_MODEL, dropout=0.0))
    model, tokenizer = load_run(tmp_path / "run")
    rng = random.Random(5)
    numbers = [[rng.randrange(10) for _ in range(rng.randint(3, 6))] for _ in range(50)]
    digits = [" ".join(map(str, n)) for n in numbers]
    letters = [" ".join("abcdefghij"[d] for d in n) for n in numbers]
    assert exact(model, tokenizer, digits, letters) >= 0.5
    assert exact(model, tokenizer, letters, digits) >= 0.5
