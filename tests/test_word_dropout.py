"""Source word dropout: which pieces it blanks, at what rate, that the run's seed decides it, and
that a training step reads the blanked source."""

import copy

import torch

from seq2seq.data.batch import Batch, blank_source_pieces, collate
from seq2seq.data.special import EOS_ID, PAD_ID, UNK_ID
from seq2seq.device import autocast
from seq2seq.models.registry import build_model
from seq2seq.models.transformer import TransformerConfig
from seq2seq.training.distributed import World
from seq2seq.training.step import TrainStep


def batch_of(rows: list[list[int]]) -> Batch:
    return collate(rows, [[5, 6, 7]] * len(rows), max_len=64)


def test_blanks_readable_pieces_at_the_rate_and_nothing_else():
    g = torch.Generator().manual_seed(0)
    rows = [
        torch.randint(4, 50, (int(n),), generator=g).tolist()
        for n in torch.randint(1, 40, (400,), generator=g)
    ]
    batch = batch_of(rows)
    torch.manual_seed(1)
    blanked = blank_source_pieces(batch, 0.3)
    readable = (batch.src != PAD_ID) & (batch.src != EOS_ID)
    changed = blanked.src != batch.src
    assert torch.equal(blanked.src[changed], torch.full_like(blanked.src[changed], UNK_ID))
    assert not changed[~readable].any()  # EOS and padding stay where they were
    rate = changed.sum().item() / readable.sum().item()  # about 8,000 pieces: standard error 0.005
    assert abs(rate - 0.3) < 0.02
    assert blanked.tgt_in is batch.tgt_in and blanked.n_tokens == batch.n_tokens


def test_the_seed_decides_and_zero_draws_nothing():
    batch = batch_of([[9] * 30] * 20)
    torch.manual_seed(2)
    first = blank_source_pieces(batch, 0.2).src
    torch.manual_seed(2)
    again = blank_source_pieces(batch, 0.2).src
    later = blank_source_pieces(batch, 0.2).src
    assert torch.equal(first, again) and not torch.equal(first, later)
    state = torch.get_rng_state()
    assert blank_source_pieces(batch, 0.0) is batch
    assert torch.equal(torch.get_rng_state(), state)  # a run without it draws the dropout it drew before


def test_a_training_step_reads_the_blanked_source():
    """p = 1 turns every readable piece into UNK: the step's loss is the loss of that batch."""
    torch.manual_seed(3)
    cfg = TransformerConfig(
        vocab_size=60, d_model=32, n_heads=4, n_encoder_layers=1, n_decoder_layers=1, d_ff=64, dropout=0.0
    )
    model = build_model(cfg)
    twin = copy.deepcopy(model)
    batch = batch_of([[10, 11, 12, 13], [20, 21]])
    all_unk = Batch(
        batch.src.masked_fill(batch.src >= 4, UNK_ID), batch.tgt_in, batch.tgt_out, batch.n_tokens
    )
    world = World()

    def step(m, p):
        optimizer = torch.optim.SGD(m.parameters(), lr=0.0)
        return TrainStep(m, optimizer, world, autocast(torch.device("cpu"), False), 1.0, 0.0, p)

    blanked, _ = step(model, 1.0)(batch, lr=0.0)
    plain, _ = step(twin, 0.0)(all_unk, lr=0.0)
    unblanked, _ = step(twin, 0.0)(batch, lr=0.0)
    assert blanked == plain and blanked != unblanked


def test_a_run_trains_with_the_rate_of_its_config(tmp_path, monkeypatch):
    from seq2seq.training import step as step_module
    from seq2seq.training.config import TrainConfig
    from seq2seq.training.train import train
    from tests.test_train import REVERSE_MODEL, write_reversal_task

    rates = []
    blank = step_module.blank_source_pieces
    monkeypatch.setattr(
        step_module, "blank_source_pieces", lambda batch, p: rates.append(p) or blank(batch, p)
    )
    corpus = write_reversal_task(tmp_path / "data", n_train=200, n_val=5)
    config = TrainConfig(
        corpus=corpus, src="src", tgt="tgt", vocab_size=32, max_tokens=512, max_steps=2, device="cpu",
        bf16=False, subword_alpha=0.0, average=0, source_word_dropout=0.25,
    )  # fmt: skip
    train(tmp_path / "run", config, REVERSE_MODEL)
    assert rates == [0.25, 0.25]
