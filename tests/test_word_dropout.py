"""Word dropout on the source and on the decoder's input: which pieces each blanks, at what rate,
that the run's seed decides it, and that a training step reads the blanked batch (and still
predicts the whole target)."""

import copy
from dataclasses import replace

import pytest
import torch

from seq2seq.data.batch import blank_source_pieces, blank_target_inputs, collate
from seq2seq.data.special import BOS_ID, EOS_ID, PAD_ID, UNK_ID
from seq2seq.device import autocast
from seq2seq.models.registry import build_model
from seq2seq.models.transformer import TransformerConfig
from seq2seq.training.distributed import World
from seq2seq.training.step import TrainStep


def random_rows(seed: int) -> list[list[int]]:
    g = torch.Generator().manual_seed(seed)
    return [
        torch.randint(4, 50, (int(n),), generator=g).tolist()
        for n in torch.randint(1, 40, (400,), generator=g)
    ]


@pytest.mark.parametrize(
    "blank, side, marker, untouched",
    [
        (blank_source_pieces, "src", EOS_ID, ("tgt_in", "tgt_out")),
        (blank_target_inputs, "tgt_in", BOS_ID, ("src", "tgt_out")),
    ],
)
def test_blanks_readable_pieces_at_the_rate_and_nothing_else(blank, side, marker, untouched):
    """The source loses pieces but never its EOS; the decoder's input never its BOS, and what the
    decoder must predict (tgt_out) never changes."""
    rows = random_rows(0)
    batch = collate(rows, rows[::-1], max_len=64)
    torch.manual_seed(1)
    blanked = blank(batch, 0.3)
    before, after = getattr(batch, side), getattr(blanked, side)
    readable = (before != PAD_ID) & (before != marker)
    changed = after != before
    assert torch.equal(after[changed], torch.full_like(after[changed], UNK_ID))
    assert not changed[~readable].any()  # the marker and padding stay where they were
    rate = changed.sum().item() / readable.sum().item()  # about 8,000 pieces: standard error 0.005
    assert abs(rate - 0.3) < 0.02
    assert all(getattr(blanked, name) is getattr(batch, name) for name in untouched)
    assert blanked.n_tokens == batch.n_tokens


@pytest.mark.parametrize("blank, side", [(blank_source_pieces, "src"), (blank_target_inputs, "tgt_in")])
def test_the_seed_decides_and_zero_draws_nothing(blank, side):
    batch = collate([[9] * 30] * 20, [[8] * 30] * 20, max_len=64)
    torch.manual_seed(2)
    first = getattr(blank(batch, 0.2), side)
    torch.manual_seed(2)
    again = getattr(blank(batch, 0.2), side)
    later = getattr(blank(batch, 0.2), side)
    assert torch.equal(first, again) and not torch.equal(first, later)
    state = torch.get_rng_state()
    assert blank(batch, 0.0) is batch
    assert torch.equal(torch.get_rng_state(), state)  # a run without it draws the dropout it drew before


def test_a_training_step_reads_the_blanked_batch():
    """p = 1 turns every readable piece into UNK: the step's loss is the loss of that batch, whose
    labels are the whole target."""
    torch.manual_seed(3)
    cfg = TransformerConfig(
        vocab_size=60, d_model=32, n_heads=4, n_encoder_layers=1, n_decoder_layers=1, d_ff=64, dropout=0.0
    )
    model = build_model(cfg)
    twin = copy.deepcopy(model)
    batch = collate([[10, 11, 12, 13], [20, 21]], [[30, 31, 32], [40, 41, 42, 43]], max_len=64)
    all_unk = replace(batch, src=batch.src.masked_fill(batch.src >= 4, UNK_ID))
    unk_in = replace(batch, tgt_in=batch.tgt_in.masked_fill(batch.tgt_in >= 4, UNK_ID))
    world = World()

    def step(m, source_p, target_p=0.0):
        optimizer = torch.optim.SGD(m.parameters(), lr=0.0)
        plain = autocast(torch.device("cpu"), False)
        return TrainStep(m, optimizer, world, plain, 1.0, 0.0, source_p, target_p)

    unblanked, _ = step(twin, 0.0)(batch, lr=0.0)
    blanked, _ = step(model, 1.0)(batch, lr=0.0)
    assert blanked == step(twin, 0.0)(all_unk, lr=0.0)[0] and blanked != unblanked
    target_blanked, _ = step(model, 0.0, 1.0)(batch, lr=0.0)
    assert target_blanked == step(twin, 0.0)(unk_in, lr=0.0)[0] and target_blanked != unblanked


def test_a_run_trains_with_the_rate_of_its_config(tmp_path, monkeypatch):
    from seq2seq.training import step as step_module
    from seq2seq.training.config import TrainConfig
    from seq2seq.training.train import train
    from tests.test_train import REVERSE_MODEL, write_reversal_task

    rates = []
    for name in ("blank_source_pieces", "blank_target_inputs"):
        blank = getattr(step_module, name)
        recorded = lambda batch, p, blank=blank: rates.append(p) or blank(batch, p)  # noqa: E731
        monkeypatch.setattr(step_module, name, recorded)
    corpus = write_reversal_task(tmp_path / "data", n_train=200, n_val=5)
    config = TrainConfig(
        corpus=corpus, src="src", tgt="tgt", vocab_size=32, max_tokens=512, max_steps=2, device="cpu",
        bf16=False, subword_alpha=0.0, average=0, source_word_dropout=0.25, target_word_dropout=0.15,
    )  # fmt: skip
    train(tmp_path / "run", config, REVERSE_MODEL)
    assert rates == [0.25, 0.15, 0.25, 0.15]
