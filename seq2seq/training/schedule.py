"""The learning rate at each step: linear warmup, inverse square-root decay (or none: the rate holds
at its peak), and optionally a linear cooldown to zero over the last part of the run's budget; and
the dropout, raised late in a long run.

Why a cooldown: an inverse square-root schedule never comes down, so when a budget ends the weights
are still taking large, noisy steps; decaying to zero over the budget's last part lands them in the
minimum they were circling (Zhai et al. 2022, "Scaling Vision Transformers", used exactly this
rsqrt + cooldown so one schedule fits any budget; Hägele et al. 2024 show the cooldown matches a
full cosine schedule). It needs to know how far through its budget a run is: `budget_progress`.
Without the decay, a cooldown over the whole budget (1.0) is a linear decay from the peak to zero
(Bergsma et al. 2025, "Straight to Zero", find it the best of the usual shapes for AdamW), and a
shorter one is warmup-stable-decay (Hägele et al. 2024).
"""

import math

from seq2seq.training.config import TrainConfig

# Warmup ends after `warmup` steps or this share of the budget, whichever comes first: a run of a
# few minutes on a slow CPU takes few more steps than the warmup, and would spend its whole budget
# below its peak rate (a linear cooldown over the budget then meeting the warmup half-way).
WARMUP_SHARE = 0.15


def lr_schedule(step: int, peak: float, warmup: int, progress: float, cooldown: float, decay: str) -> float:
    """Linear warmup to `peak` (over `warmup` steps or, with a cooldown, WARMUP_SHARE of the budget,
    whichever is shorter), then decay with 1/sqrt(step) (Vaswani et al. 2017) or, with decay
    "none", held at the peak; over the last `cooldown` share of the budget (`progress` from
    1 - cooldown to 1) that rate falls linearly to 0."""
    step = max(step, 1)
    # the budget shapes the rate only where a cooldown spends it (cooldown 0: the rate ignores it)
    ramp = min(1.0, max(step / warmup, progress / WARMUP_SHARE if cooldown > 0 else 0.0))
    after_warmup = math.sqrt(warmup / step) if decay == "rsqrt" else 1.0
    rate = peak * min(ramp, after_warmup)
    if cooldown <= 0:
        return rate
    return rate * min(1.0, max(0.0, 1.0 - progress) / cooldown)


def budget_progress(
    cfg: TrainConfig, step: int, epochs_done: float | None, elapsed_s: float, resumed_at: float = 0.0
) -> float:
    """How much of its budget this run has used before its next step, 0 to 1: the largest share of
    whichever limits it has, counted as the stop rules count them (steps and epochs over the whole
    run, minutes over this invocation, including what the final validation will take); 0 when it
    has none. A time budget belongs to one invocation, so a run stopped at share `resumed_at` of it
    spreads the rest of its schedule over its new minutes: the rate goes on from where it stopped
    (a linear decay to zero would otherwise climb back to the peak at every resume)."""
    shares = [0.0]
    if cfg.max_steps:
        shares.append(step / cfg.max_steps)
    if cfg.epochs and epochs_done is not None:  # None: the epoch's size is not known (a stream)
        shares.append(epochs_done / cfg.epochs)
    if cfg.max_minutes:
        shares.append(resumed_at + (1.0 - resumed_at) * elapsed_s / (cfg.max_minutes * 60))
    return min(max(shares), 1.0)


def dropout_at(cfg: TrainConfig, dropout: float, epochs_done: float) -> float:
    """The dropout for the next step: the model's own (`dropout`) until epoch `late_dropout_from`,
    then rising linearly to `late_dropout` over `late_dropout_over` epochs ("late dropout", Liu et
    al. 2023, "Dropout Reduces Underfitting"). By epochs, not minutes: overfitting comes from
    seeing the same pairs again, so a CPU whose budget buys few epochs trains as without it."""
    if cfg.late_dropout <= dropout or dropout == 0:  # it only raises; without dropout a model stays so
        return dropout
    if cfg.late_dropout_over <= 0:  # a switch at that epoch
        return cfg.late_dropout if epochs_done >= cfg.late_dropout_from else dropout
    share = (epochs_done - cfg.late_dropout_from) / cfg.late_dropout_over
    return dropout + (cfg.late_dropout - dropout) * min(1.0, max(0.0, share))
