import importlib
import json
from dataclasses import replace
from types import SimpleNamespace

import pytest
import torch

from seq2seq.models.rnn import RNNConfig
from seq2seq.runs.files import BEST, CURVES, LAST, read_metadata, read_metrics
from seq2seq.training import loop as loop_module
from seq2seq.training import validation as validation_module
from seq2seq.training.config import TrainConfig
from seq2seq.training.loop import Loop
from seq2seq.training.train import adamw, train
from tests.helpers import (
    REVERSE_MODEL,
    Killed,
    assert_same_training_state,
    kill_at,
    record_steps,
    trainer_state,
    val_exact_match,
    write_reversal_task,
)


def test_tiny_model_learns_to_reverse_digits(tmp_path):
    corpus = write_reversal_task(tmp_path / "data")
    config = TrainConfig(
        corpus=corpus,
        src="src",
        tgt="tgt",
        vocab_size=32,
        max_tokens=1024,
        lr=2e-3,
        warmup=100,
        label_smoothing=0.0,
        subword_alpha=0.0,  # digits split one way: sampling has nothing to teach here, and costs time
        epochs=20,  # 12 gave 90% exact, 18 passed: 20 for a margin across CPUs
        patience=30,
        device="cpu",
        bf16=False,  # fp32: the test is about learning, and tiny shapes gain nothing from bf16
        guided_alignment=None,  # seeded throughout: eflomal's links (auto, from 1,000 pairs) are not
    )
    final = train(tmp_path / "run", config, REVERSE_MODEL)
    exact = val_exact_match(tmp_path / "run", tmp_path / "data")
    assert exact >= 0.95, f"exact match {exact:.2%}, final {final}"
    bleus = [row["val_bleu"] for row in read_metrics(tmp_path / "run")]
    assert bleus[-1] > bleus[0]


@pytest.mark.parametrize(
    "model_cfg",  # dropout on: the RNG state must resume too
    [
        replace(REVERSE_MODEL, d_model=32, d_ff=64, dropout=0.1),
        RNNConfig(d_model=32, n_layers=2, dropout=0.1, max_positions=32, cell="lstm"),
    ],
    ids=["transformer", "rnn"],
)
def test_resumed_training_equals_uninterrupted(tmp_path, model_cfg):
    corpus = write_reversal_task(tmp_path / "data", n_train=400, n_val=10)
    config = TrainConfig(  # late dropout's ramp from epoch 0.5: the resumed run starts mid-ramp
        corpus=corpus, src="src", tgt="tgt", vocab_size=32, max_tokens=512, warmup=5, device="cpu",
        bf16=False, late_dropout=0.3, late_dropout_from=0.5, late_dropout_over=1.0,
        weight_decay=0.05,  # resumed from the optimizer's state
        cooldown=0.0,  # a rate that ignores the budget: the first invocation's is 5 steps, not 12
    )  # fmt: skip
    train(tmp_path / "straight", replace(config, max_steps=12), model_cfg)
    (tmp_path / "resumed").mkdir()
    (tmp_path / "resumed" / "tokenizer.model").write_bytes(
        (tmp_path / "straight" / "tokenizer.model").read_bytes()
    )
    first = train(tmp_path / "resumed", replace(config, max_steps=5), model_cfg)
    assert first["step"] == 5 and first["stop"] == "max steps"
    second = train(tmp_path / "resumed", replace(config, max_steps=12), model_cfg)
    assert second["step"] == 12
    assert_same_training_state(tmp_path / "straight", tmp_path / "resumed")
    steps = [row["step"] for row in read_metrics(tmp_path / "resumed")]
    assert steps[0] == 5 and steps[-1] == 12 and (tmp_path / "resumed" / BEST).is_file()


def test_a_kill_between_validations_loses_at_most_the_save_interval(tmp_path, monkeypatch):
    corpus = write_reversal_task(tmp_path / "data", n_train=400, n_val=10)
    config = TrainConfig(
        corpus=corpus, src="src", tgt="tgt", vocab_size=32, max_tokens=512, warmup=5, device="cpu",
        bf16=False, subword_alpha=0.0,  # the stored pieces: 6 batches an epoch
    )  # fmt: skip
    model_cfg = replace(REVERSE_MODEL, d_model=32, d_ff=64, dropout=0.1)
    train(tmp_path / "straight", replace(config, max_steps=12), model_cfg)
    steps = []
    monkeypatch.setattr(Loop, "_train_step", record_steps(Loop._train_step, steps))
    every_step = replace(config, max_steps=12, save_every_minutes=0)
    with pytest.raises(Killed):  # 6 batches an epoch: killed after step 8, mid-epoch
        train(tmp_path / "killed", every_step, model_cfg, None, None, kill_at(steps, 8))
    assert [row["step"] for row in read_metrics(tmp_path / "killed")] == [6]
    assert trainer_state(tmp_path / "killed")["step"] == 8  # not 6, the last validation
    monkeypatch.undo()
    again = train(tmp_path / "killed", replace(config, max_steps=12), model_cfg)
    assert again["step"] == 12
    assert_same_training_state(tmp_path / "straight", tmp_path / "killed")


def test_an_interrupt_saves_and_validates_nothing(tmp_path, monkeypatch):
    """A stop's validation would count toward patience (the resumed run would be another run), and a
    scheduler's grace period may not last that long: save the state, then stop."""
    corpus = write_reversal_task(tmp_path / "data", n_train=400, n_val=10)
    config = TrainConfig(corpus=corpus, src="src", tgt="tgt", vocab_size=32, max_tokens=512, device="cpu")
    steps = []
    monkeypatch.setattr(Loop, "_train_step", record_steps(Loop._train_step, steps))
    monkeypatch.setattr(Loop, "_validate", lambda *args: (_ for _ in ()).throw(Killed()))  # never reached
    stop_after_3 = lambda: len(steps) >= 3  # noqa: E731 (Ctrl-C or SIGTERM after step 3)
    small = replace(REVERSE_MODEL, d_model=32, d_ff=64)
    final = train(tmp_path / "run", config, small, None, None, stop_after_3)
    state = trainer_state(tmp_path / "run")
    assert final == {"step": 3, "stop": "interrupted"} and state["step"] == 3 and state["batch"] == 3


def test_a_kill_between_the_best_weights_and_the_training_state_keeps_the_best(tmp_path, monkeypatch):
    corpus = write_reversal_task(tmp_path / "data", n_train=400, n_val=10)
    config = TrainConfig(  # lr 0: every validation scores the same, so none may count as better
        corpus=corpus, src="src", tgt="tgt", vocab_size=32, max_tokens=512, lr=0.0, device="cpu",
        subword_alpha=0.0,  # the stored pieces: 6 batches an epoch
    )  # fmt: skip
    small = replace(REVERSE_MODEL, d_model=32, d_ff=64)
    save = Loop.save

    def killed_after_the_best(self, state):  # the first save after an improvement: SIGKILL
        if state.best_bleu > -1:
            raise Killed
        save(self, state)

    monkeypatch.setattr(Loop, "save", killed_after_the_best)
    with pytest.raises(Killed):  # every step saved until the validation at step 6 improves
        train(tmp_path / "run", replace(config, max_steps=12, save_every_minutes=0), small)
    monkeypatch.undo()
    assert trainer_state(tmp_path / "run")["best_bleu"] == -1  # the stale copy
    train(tmp_path / "run", replace(config, max_steps=12), small)
    rows = [(r["step"], r["best"], r.get("averaged")) for r in read_metrics(tmp_path / "run")]
    assert rows == [(6, False, None), (12, False, None), (12, False, 2)]  # 6: validated on resume


def test_a_time_budget_pays_for_the_final_validation_from_the_first_run_on(tmp_path, monkeypatch):
    """On a clock that moves only when the test says (a step 1 s, a validation sentence 0.1 s),
    an 8-second limit ends with the final validations (the last weights' and their average's, 1 s
    each: the quarter of the limit they may hold back) inside it, before any validation was timed."""
    clock = SimpleNamespace(now=0.0)
    fake_time = SimpleNamespace(monotonic=lambda: clock.now, perf_counter=lambda: clock.now)
    monkeypatch.setattr(loop_module, "time", fake_time)
    monkeypatch.setattr(validation_module, "time", fake_time)
    monkeypatch.setattr(importlib.import_module("seq2seq.training.train"), "time", fake_time)
    step, evaluate = Loop._train_step, validation_module.evaluate

    def timed_step(self, batch, number, weight, progress):
        clock.now += 1.0
        return step(self, batch, number, weight, progress)

    def timed_evaluate(model, tokenizer, pairs, options):
        clock.now += 0.1 * len(pairs)
        return evaluate(model, tokenizer, pairs, options)

    monkeypatch.setattr(Loop, "_train_step", timed_step)
    monkeypatch.setattr(validation_module, "evaluate", timed_evaluate)
    corpus = write_reversal_task(tmp_path / "data", n_train=400, n_val=10)  # 6 steps an epoch
    config = TrainConfig(
        corpus=corpus, src="src", tgt="tgt", vocab_size=32, max_tokens=512, max_minutes=8 / 60, device="cpu"
    )
    final = train(tmp_path / "run", config, replace(REVERSE_MODEL, d_model=32, d_ff=64))
    assert final["stop"] == "max minutes" and 1 <= final["step"] < 6
    assert final["elapsed_s"] <= 8.0


def test_rerun_of_a_finished_run_trains_no_further(tmp_path):
    corpus = write_reversal_task(tmp_path / "data", n_train=100, n_val=5)
    config = TrainConfig(
        corpus=corpus, src="src", tgt="tgt", vocab_size=32, max_tokens=512, max_steps=3, device="cpu"
    )
    small = replace(REVERSE_MODEL, d_model=32, d_ff=64)
    train(tmp_path / "run", config, small)
    again = train(tmp_path / "run", config, small)
    assert again["stop"] == "max steps" and again["step"] == 3


def test_rerun_of_a_run_that_stopped_early_trains_no_further(tmp_path):
    corpus = write_reversal_task(tmp_path / "data", n_train=100, n_val=5)
    config = TrainConfig(  # lr 0: no validation after the first improves, so patience 1 ends it
        corpus=corpus, src="src", tgt="tgt", vocab_size=32, max_tokens=512, lr=0.0, patience=1, device="cpu"
    )
    small = replace(REVERSE_MODEL, d_model=32, d_ff=64)
    first = train(tmp_path / "run", config, small)
    rows = read_metrics(tmp_path / "run")
    assert first["stop"] == "early stop" and [r.get("averaged") for r in rows] == [None, None, 2]
    again = train(tmp_path / "run", config, small)
    assert again == {"step": first["step"], "stop": "early stop"}
    assert read_metrics(tmp_path / "run") == rows


def test_no_early_stop_by_default_the_run_uses_its_whole_budget(tmp_path):
    """The same run as above (lr 0: no validation ever improves) with the default patience (off)
    trains to its epoch limit."""
    corpus = write_reversal_task(tmp_path / "data", n_train=100, n_val=5)
    config = TrainConfig(
        corpus=corpus, src="src", tgt="tgt", vocab_size=32, max_tokens=512, lr=0.0, epochs=3, device="cpu"
    )
    result = train(tmp_path / "run", config, replace(REVERSE_MODEL, d_model=32, d_ff=64))
    assert result["stop"] != "early stop"
    assert [r["epoch"] for r in read_metrics(tmp_path / "run") if "averaged" not in r] == [1, 2, 3]


def test_each_validation_redraws_the_learning_curves(tmp_path):
    pytest.importorskip("matplotlib")
    from matplotlib.image import imread

    corpus = write_reversal_task(tmp_path / "data", n_train=100, n_val=5)
    config = TrainConfig(
        corpus=corpus, src="src", tgt="tgt", vocab_size=32, max_tokens=512, epochs=2, device="cpu"
    )
    train(tmp_path / "run", config, replace(REVERSE_MODEL, d_model=32, d_ff=64))
    assert [r.get("averaged") for r in read_metrics(tmp_path / "run")] == [None, None, 2]
    assert imread(tmp_path / "run" / CURVES).ndim == 3


def test_weight_decay_reaches_the_optimizer_and_shrinks_every_weight_by_lr_times_decay(tmp_path):
    """AdamW's decay is decoupled: with a zero gradient a step only multiplies by 1 - lr * decay."""
    layer = torch.nn.Linear(3, 2)
    before = [p.detach().clone() for p in layer.parameters()]
    optimizer = adamw(layer, lr=0.1, weight_decay=0.5)
    for p in layer.parameters():
        p.grad = torch.zeros_like(p)
    optimizer.step()
    for p, old in zip(layer.parameters(), before, strict=True):
        torch.testing.assert_close(p.detach(), old * (1 - 0.1 * 0.5))
    corpus = write_reversal_task(tmp_path / "data", n_train=40, n_val=4)
    config = TrainConfig(
        corpus=corpus, src="src", tgt="tgt", vocab_size=32, max_tokens=256, device="cpu", bf16=False,
        weight_decay=0.3, max_steps=1, average=0,
    )  # fmt: skip
    train(tmp_path / "run", config, REVERSE_MODEL)
    optimizer = json.loads(read_metadata(tmp_path / "run" / LAST)["optimizer"])
    assert [group["weight_decay"] for group in optimizer["param_groups"]] == [0.3]
    assert json.loads((tmp_path / "run" / "config.json").read_text())["train"]["weight_decay"] == 0.3
