"""The learning-rate schedule: warmup, inverse square root, and the cooldown over the budget's end,
down to the rate the optimizer really gets in a training run."""

import importlib
from dataclasses import replace
from types import SimpleNamespace

import pytest
import torch

from seq2seq.decoding.search import DecodeOptions
from seq2seq.runs.files import read_metrics
from seq2seq.training import loop as loop_module
from seq2seq.training import validation as validation_module
from seq2seq.training.config import TrainConfig
from seq2seq.training.loop import Loop
from seq2seq.training.schedule import WARMUP_SHARE, budget_progress, dropout_at, lr_schedule
from seq2seq.training.train import train
from tests.helpers import REVERSE_MODEL, write_reversal_task


def schedule(step, peak, warmup, progress=0.0, cooldown=0.0, decay="rsqrt"):
    """The schedule these checks start from: the rsqrt decay, no cooldown, unless told."""
    return lr_schedule(step, peak, warmup, progress, cooldown, decay)


def test_lr_schedule_warms_up_then_decays():
    assert schedule(1, 1e-3, 100) == pytest.approx(1e-5)
    assert schedule(100, 1e-3, 100) == pytest.approx(1e-3)
    assert schedule(400, 1e-3, 100) == pytest.approx(5e-4)


def test_the_cooldown_falls_linearly_to_zero_over_the_budgets_last_share():
    rsqrt = schedule(400, 1e-3, 100)
    assert schedule(400, 1e-3, 100, progress=0.5, cooldown=0.2) == pytest.approx(rsqrt)
    assert schedule(400, 1e-3, 100, progress=0.8, cooldown=0.2) == pytest.approx(rsqrt)
    assert schedule(400, 1e-3, 100, progress=0.9, cooldown=0.2) == pytest.approx(rsqrt / 2)
    assert schedule(400, 1e-3, 100, progress=1.0, cooldown=0.2) == 0.0
    assert schedule(400, 1e-3, 100, progress=1.0, cooldown=0.0) == pytest.approx(rsqrt)  # off
    assert schedule(50, 1e-3, 100, progress=0.05, cooldown=0.5) == pytest.approx(0.5e-3)  # in warmup


def test_without_the_decay_the_rate_holds_at_its_peak_and_a_whole_budget_cooldown_is_linear_to_zero():
    assert schedule(400, 1e-3, 100, decay="none") == pytest.approx(1e-3)
    assert schedule(50, 1e-3, 100, decay="none") == pytest.approx(0.5e-3)  # the same warmup
    # warmup-stable-decay: the peak until the cooldown, then the same linear fall
    assert schedule(400, 1e-3, 100, progress=0.9, cooldown=0.2, decay="none") == pytest.approx(0.5e-3)
    for progress in (0.1, 0.5, 0.75, 1.0):  # "straight to zero": the peak times what is left
        rate = schedule(400, 1e-3, 100, progress=progress, cooldown=1.0, decay="none")
        assert rate == pytest.approx(1e-3 * (1 - progress))
    with pytest.raises(ValueError, match="decay must be one of rsqrt, none, not 'cosine'"):
        TrainConfig(decay="cosine")  # a hand-edited config.json: test_cli.py


def test_warmup_ends_at_its_steps_or_its_share_of_the_budget_whichever_comes_first():
    def rate(step, progress, decay="none", cooldown=1.0):
        return schedule(step, 1e-3, 400, progress=progress, cooldown=cooldown, decay=decay)

    share = WARMUP_SHARE
    assert rate(50, share / 2) == pytest.approx(0.5e-3 * (1 - share / 2))
    assert rate(50, share) == pytest.approx(1e-3 * (1 - share))  # a short budget: the peak early
    assert rate(200, 0.01) == pytest.approx(0.5e-3 * 0.99)  # a long one: the warmup's steps
    assert rate(50, share, cooldown=0.0) == pytest.approx(0.125e-3)  # no cooldown: no budget in it
    # in a short budget the peak holds until the warmup's step count, then rsqrt decays from it
    assert rate(100, 0.5, decay="rsqrt", cooldown=0.5) == pytest.approx(1e-3)
    assert rate(1600, 0.5, decay="rsqrt", cooldown=0.5) == pytest.approx(0.5e-3)


def test_budget_progress_is_the_largest_share_of_any_limit():
    cfg = TrainConfig(epochs=None)
    assert budget_progress(cfg, step=50, epochs_done=1.5, elapsed_s=60.0) == 0.0  # no limit: no cooldown
    assert budget_progress(replace(cfg, max_steps=200), 50, 1.5, 60.0) == 0.25
    assert budget_progress(replace(cfg, max_steps=200, epochs=3), 50, 1.5, 60.0) == 0.5
    assert budget_progress(replace(cfg, max_steps=200, max_minutes=1.25), 50, 1.5, 60.0) == 0.8
    assert budget_progress(replace(cfg, max_minutes=0.5), 50, 1.5, 60.0) == 1.0  # over: capped
    # a run stopped at 0.6 of a time budget spreads the rest over its new minutes
    assert budget_progress(replace(cfg, max_minutes=2.0), 50, 1.5, 60.0, resumed_at=0.6) == pytest.approx(0.8)


def test_late_dropout_rises_linearly_by_the_epoch_from_the_models_own():
    late = TrainConfig(late_dropout=0.3, late_dropout_from=10, late_dropout_over=10)
    assert dropout_at(replace(late, late_dropout=0.0), 0.1, epochs_done=40.0) == 0.1  # off
    assert dropout_at(TrainConfig(), 0.1, epochs_done=10.0) == 0.1  # the recipe: ten epochs as without it
    assert dropout_at(TrainConfig(), 0.1, epochs_done=40.0) == pytest.approx(0.3)
    assert dropout_at(TrainConfig(), 0.0, epochs_done=40.0) == 0.0  # --dropout 0: none, ever
    assert dropout_at(TrainConfig(), 0.5, epochs_done=40.0) == 0.5  # it never lowers a higher rate
    assert dropout_at(late, 0.1, epochs_done=9.5) == 0.1
    assert dropout_at(late, 0.1, epochs_done=15.0) == pytest.approx(0.2)
    assert dropout_at(late, 0.1, epochs_done=20.0) == pytest.approx(0.3)
    assert dropout_at(late, 0.1, epochs_done=43.0) == pytest.approx(0.3)
    assert dropout_at(replace(late, late_dropout_over=0), 0.1, epochs_done=10.0) == pytest.approx(0.3)


def test_a_run_with_late_dropout_trains_each_step_at_the_scheduled_rate(tmp_path, monkeypatch):
    """The model's dropout modules hold, at every step, the rate the epoch's progress gives."""
    corpus = write_reversal_task(tmp_path / "data", n_train=400, n_val=10)
    config = TrainConfig(
        corpus=corpus, src="src", tgt="tgt", vocab_size=32, max_tokens=512, warmup=4, device="cpu",
        subword_alpha=0.0, epochs=3, late_dropout=0.3, late_dropout_from=1, late_dropout_over=1,
    )  # fmt: skip
    step, seen = Loop._train_step, []

    def watched_step(self, batch, number, weight, progress):
        seen.append({m.p for m in self.model.modules() if isinstance(m, torch.nn.Dropout)})
        return step(self, batch, number, weight, progress)

    monkeypatch.setattr(Loop, "_train_step", watched_step)
    train(tmp_path / "run", config, replace(REVERSE_MODEL, d_model=32, d_ff=64, dropout=0.1))
    assert len(seen) == 18 and all(len(rates) == 1 for rates in seen)  # 6 steps an epoch, one rate
    rates = [rates.pop() for rates in seen]
    assert rates[:7] == [0.1] * 7  # epoch 0, and epoch 1's first step (1.0 epochs done)
    assert rates[7:12] == pytest.approx([0.1 + 0.2 * k / 6 for k in range(1, 6)])
    assert rates[12:] == pytest.approx([0.3] * 6)
    rows = [row for row in read_metrics(tmp_path / "run") if not row.get("averaged")]
    assert [row["dropout"] for row in rows] == pytest.approx([0.1, 0.1 + 0.2 * 5 / 6, 0.3])


def test_a_run_with_a_cooldown_ends_its_budget_near_a_zero_learning_rate(tmp_path):
    corpus = write_reversal_task(tmp_path / "data", n_train=400, n_val=10)
    config = TrainConfig(
        corpus=corpus, src="src", tgt="tgt", vocab_size=32, max_tokens=512, warmup=4, lr=1e-3, device="cpu",
        subword_alpha=0.0,  # the stored pieces: 6 steps an epoch
        decay="rsqrt",  # the cooldown after the decay; the default's linear decay to zero below
    )  # fmt: skip
    model_cfg = replace(REVERSE_MODEL, d_model=32, d_ff=64)
    train(tmp_path / "plain", replace(config, max_steps=12, cooldown=0.0), model_cfg)
    train(tmp_path / "cooled", replace(config, max_steps=12, cooldown=0.5), model_cfg)
    plain, cooled = (
        [row["lr"] for row in read_metrics(tmp_path / run) if not row.get("averaged")]
        for run in ("plain", "cooled")
    )
    # step 6 is before the cooldown (it starts once 6 of 12 steps are done); step 12 has 11 of 12 done
    assert cooled[0] == pytest.approx(plain[0]) == pytest.approx(schedule(6, 1e-3, 4))
    assert cooled[1] == pytest.approx(schedule(12, 1e-3, 4, progress=11 / 12, cooldown=0.5))
    assert cooled[1] == pytest.approx(plain[1] / 6)
    train(tmp_path / "linear", replace(config, max_steps=12, cooldown=1.0, decay="none"), model_cfg)
    linear = [row["lr"] for row in read_metrics(tmp_path / "linear") if not row.get("averaged")]
    assert linear == pytest.approx([1e-3 * 7 / 12, 1e-3 / 12])  # 5 and 11 of 12 steps done before them


def test_a_time_budgets_progress_never_goes_back_and_ends_near_one(tmp_path, monkeypatch):
    """On a clock that moves only when the test says (a step 1 s; the first validation estimate
    0.5 s a sentence, the validations then measured at 0.1 s), the progress each step is given
    rises to the end of the budget, though the time still owed for validation shrinks."""
    clock = SimpleNamespace(now=0.0)
    fake_time = SimpleNamespace(monotonic=lambda: clock.now, perf_counter=lambda: clock.now)
    monkeypatch.setattr(loop_module, "time", fake_time)
    monkeypatch.setattr(validation_module, "time", fake_time)
    monkeypatch.setattr(importlib.import_module("seq2seq.training.train"), "time", fake_time)
    step, evaluate, seen = Loop._train_step, validation_module.evaluate, []

    def timed_step(self, batch, number, weight, progress):
        clock.now += 1.0
        seen.append(progress)
        return step(self, batch, number, weight, progress)

    def timed_evaluate(model, tokenizer, pairs, options):
        clock.now += (0.1 if seen else 0.5) * len(pairs)
        return evaluate(model, tokenizer, pairs, options)

    monkeypatch.setattr(Loop, "_train_step", timed_step)
    monkeypatch.setattr(validation_module, "evaluate", timed_evaluate)
    corpus = write_reversal_task(tmp_path / "data", n_train=400, n_val=10)  # 6 steps an epoch
    config = TrainConfig(
        corpus=corpus, src="src", tgt="tgt", vocab_size=32, max_tokens=512, average=0, device="cpu"
    )
    model_cfg = replace(REVERSE_MODEL, d_model=32, d_ff=64)
    train(tmp_path / "run", replace(config, max_minutes=0.5, cooldown=0.5), model_cfg)
    assert len(seen) > 12 and seen == sorted(seen)
    assert seen[-1] > 0.9


def test_a_short_time_limit_trains_though_the_first_validation_is_estimated_past_it(tmp_path, monkeypatch):
    """On a clock that moves 1 s a step, a first validation estimated at 1000 s (an untrained
    model decoding to the length limit on a busy machine) is held to a quarter of a one-minute
    limit: the run trains for the rest, where the whole estimate would have left no step."""
    clock = SimpleNamespace(now=0.0)
    fake_time = SimpleNamespace(monotonic=lambda: clock.now, perf_counter=lambda: clock.now)
    for module in (loop_module, validation_module, importlib.import_module("seq2seq.training.train")):
        monkeypatch.setattr(module, "time", fake_time)
    step, steps = Loop._train_step, []

    def timed_step(self, batch, number, weight, progress):
        clock.now += 1.0
        steps.append(number)
        return step(self, batch, number, weight, progress)

    monkeypatch.setattr(Loop, "_train_step", timed_step)
    monkeypatch.setattr(Loop, "_validation_estimate", lambda self, state: 1000.0)
    corpus = write_reversal_task(tmp_path / "data", n_train=400, n_val=10)
    config = TrainConfig(
        corpus=corpus, src="src", tgt="tgt", vocab_size=32, max_tokens=512, average=0, device="cpu"
    )
    model_cfg = replace(REVERSE_MODEL, d_model=32, d_ff=64)
    final = train(tmp_path / "run", replace(config, max_minutes=1.0), model_cfg)
    assert final["stop"] == "max minutes" and "val_bleu" in final
    # 45 s at least before the first validation measures its real cost (nothing, on this clock)
    assert len(steps) >= 45


def test_the_first_validation_estimate_scales_by_batches_after_a_warm_up(monkeypatch):
    """On a GPU a batch of validation sentences costs about the same whatever its size, and the
    first call pays for setting up kernels: on a clock where every call costs 1 s, and the first
    costs 60 s more, 130 sentences in batches of 64 are estimated at 3 batches, 3 s (scaled by
    sentences from a small sample, that was 60 s and more: a short budget on a GPU ran no step)."""
    clock = SimpleNamespace(now=0.0)
    monkeypatch.setattr(loop_module, "time", SimpleNamespace(perf_counter=lambda: clock.now))
    monkeypatch.setattr(validation_module, "time", SimpleNamespace(perf_counter=lambda: clock.now))
    sizes = []

    def timed_evaluate(model, tokenizer, pairs, options):
        clock.now += 1.0 + (60.0 if not sizes else 0.0)
        sizes.append(len(pairs))

    monkeypatch.setattr(validation_module, "evaluate", timed_evaluate)
    loop = SimpleNamespace(
        val_pairs=[("a", "b")] * 130,
        val_options=DecodeOptions(beam=1, batch_size=64),
        model=SimpleNamespace(eval=lambda: None),
        tokenizer=None,
    )
    assert Loop._validation_estimate(loop, SimpleNamespace(validation_seconds=0.0)) == 3.0
    assert sizes == [1, 64]
    assert Loop._validation_estimate(loop, SimpleNamespace(validation_seconds=7.5)) == 7.5  # measured
    assert sizes == [1, 64]
    loop.val_pairs = [("a", "b")] * 10  # fewer than a batch: all of them, once
    assert Loop._validation_estimate(loop, SimpleNamespace(validation_seconds=0.0)) == 1.0
    assert sizes == [1, 64, 1, 10]
    loop.val_pairs = []  # a rank other than 0 validates nothing, and leaves the time to rank 0
    assert Loop._validation_estimate(loop, SimpleNamespace(validation_seconds=0.0)) == 0.0
    assert sizes == [1, 64, 1, 10]


def test_a_run_stopped_mid_time_budget_resumes_its_rate_where_it_stopped(tmp_path, monkeypatch):
    """On a clock that moves 1 s a step, a 30-second budget stopped after step 4 resumes as far
    through its schedule as it stopped (a linear decay to zero must not climb back to the peak);
    once that budget is used up, training the run further is a new budget."""
    clock = SimpleNamespace(now=0.0)
    fake_time = SimpleNamespace(monotonic=lambda: clock.now, perf_counter=lambda: clock.now)
    monkeypatch.setattr(loop_module, "time", fake_time)
    monkeypatch.setattr(validation_module, "time", fake_time)
    monkeypatch.setattr(importlib.import_module("seq2seq.training.train"), "time", fake_time)
    seen, step = [], Loop._train_step  # the budget's share each step trained at

    def timed_step(self, batch, number, weight, progress):
        clock.now += 1.0
        seen.append(progress)
        return step(self, batch, number, weight, progress)

    monkeypatch.setattr(Loop, "_train_step", timed_step)
    corpus = write_reversal_task(tmp_path / "data", n_train=400, n_val=10)
    config = TrainConfig(
        corpus=corpus, src="src", tgt="tgt", vocab_size=32, max_tokens=512, warmup=2, device="cpu",
        epochs=None, max_minutes=0.5, average=0,
    )  # fmt: skip
    model_cfg, run = replace(REVERSE_MODEL, d_model=32, d_ff=64), tmp_path / "run"
    assert train(run, config, model_cfg, None, None, lambda: len(seen) >= 4)["stop"] == "interrupted"
    stopped_at = seen[-1]
    assert 0.1 < stopped_at < 0.2  # 4 of 30 seconds
    seen.clear()
    assert train(run, config, model_cfg)["stop"] == "max minutes"
    assert seen[0] >= stopped_at and seen == sorted(seen) and seen[-1] > 0.95
    seen.clear()
    train(run, config, model_cfg)  # its 30 seconds were used: 30 more are a budget of their own
    assert seen[0] < 0.1
