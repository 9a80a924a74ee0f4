"""The training loop: steps, validation (loss and greedy BLEU), checkpoints and the stop rules."""

import time
from dataclasses import dataclass, field
from functools import partial
from itertools import count

from seq2seq.data.batch import Batch, collate
from seq2seq.decoding.search import DecodeOptions
from seq2seq.device import autocast
from seq2seq.errors import Seq2SeqError
from seq2seq.runs import files as ckpt
from seq2seq.training import checkpoint
from seq2seq.training.config import TrainConfig
from seq2seq.training.distributed import World, rank_batch
from seq2seq.training.epoch import EpochPart, Epochs
from seq2seq.training.reporter import Reporter
from seq2seq.training.resume import TrainingState
from seq2seq.training.schedule import budget_progress, dropout_at, lr_schedule
from seq2seq.training.step import NonFiniteLoss, TrainStep, data_parallel
from seq2seq.training.validation import Validation

# Why a loop stops, by precedence: when processes differ (one was interrupted, another ran out of
# time) the highest wins on all of them, so "interrupted" (save, validate nothing) overrides the rest.
STOPS = (None, "max minutes", "early stop", "max steps", "interrupted")
VALIDATION_SHARE = 0.25  # of --max-minutes, at most, held back for the final validation(s)


class Loop(Validation):
    """The epoch/step loop with its validation and checkpoint points. Under torchrun every process
    runs it on its share of each step's batches; rank 0 alone validates, saves and reports, and
    the others take the outcome from it (World.from_main)."""

    def __init__(
        self,
        run_dir,
        config,
        model,
        optimizer,
        tokenizer,
        epochs: Epochs,
        val_pairs,
        world: World,
        guide=None,
    ):
        """`epochs`: what each epoch trains on (training/epoch.py, training/streaming.py); `guide`:
        guided alignment's targets, if the run has them."""
        self.run_dir, self.config, self.model, self.optimizer = run_dir, config, model, optimizer
        self.tokenizer, self.epochs, self.world, self.device = tokenizer, epochs, world, world.device
        self.val_pairs = val_pairs if world.is_main else []
        self.val_src = tokenizer.encode([s for s, _ in self.val_pairs])
        self.val_tgt = tokenizer.encode([t for _, t in self.val_pairs], "target")
        self.max_len = model.cfg.max_positions
        self.val_options = DecodeOptions(beam=1, bf16=config.bf16)  # --fp32 validates in fp32 too
        self.dropout = model.cfg.dropout  # what the model's dropout modules are set to now
        self.progress = 0.0  # the share of the budget used (schedule.budget_progress), saved in the state
        self.resumed_at = 0.0  # the share used when this invocation began
        self.autocast = autocast(self.device, config.bf16)
        self.guide = guide
        parallel = data_parallel(model, world)
        steps = (parallel, optimizer, world, self.autocast, config.clip_norm, config.label_smoothing, guide)
        self.train_step = TrainStep(*steps)

    def run(self, state: TrainingState, reporter: Reporter, should_stop, start_time: float) -> dict:
        cfg, row = self.config, None
        # a budget used up (1.0) was a finished run's: training it further is a new budget
        self.resumed_at = self.progress = state.progress if state.progress < 1.0 else 0.0
        tally = Tally(validation_seconds=self._validation_estimate(state) if cfg.max_minutes else 0.0)
        self._set_dropout(state.epoch)  # for a resumed run's row before its first step, which sets it exactly
        stop = None
        while stop is None and (cfg.epochs is None or state.epoch < cfg.epochs):
            stop = self._walk_epoch(state, tally, reporter, should_stop, start_time)
            if stop is None:
                self.epochs.ended(state)
                state.epoch, state.batch = state.epoch + 1, 0
            if stop == "interrupted":  # save, and no validation: it would count toward patience and
                self.save(state)  # make the resumed run another than the one never interrupted
                return {"step": state.step, "stop": stop}  # (nor the averaged weights' below)
            if state.step == state.validated_step:
                continue  # nothing trained since the last validation (e.g. a finished run rerun)
            tokens_per_s = tally.tokens / max(tally.train_seconds, 1e-9)
            validate = partial(self._validate, state, tally.losses, tokens_per_s, start_time)
            row, state = self.world.from_main(lambda: (validate(), state))  # noqa: B023 (called here)
            tally.validation_seconds, tally.saved = state.validation_seconds, time.monotonic()
            reporter.validated(row)
            tally.losses, tally.tokens, tally.train_seconds = [], 0, 0.0
            if out_of_patience(cfg, state):
                stop = "early stop"
        if row is not None and self.averaging:  # this invocation trained: its end is scored averaged too
            averaged = self.world.from_main(lambda: self._validate_average(state, start_time))
            if averaged is not None:
                reporter.validated(averaged)
                row = averaged if averaged["best"] else row
        return {**(row or {"step": state.step}), "stop": stop or "epochs"}

    def _walk_epoch(self, state, tally: "Tally", reporter, should_stop, start_time) -> str | None:
        """Train on the epoch's parts from where the state stands; why it stopped before their end,
        if it did. The stop rules are asked before a part is read too: a finished run reads none,
        and a stop does not wait for one."""
        parts = self.epochs.parts(state)
        for number in count():
            stop, _ = self._stop_reason(
                state, start_time, tally.to_pay(self.averaging, self.limit_s), should_stop, None
            )
            part = None if stop else next(parts, None)
            if part is None:
                return stop
            if number == 0:
                known = self.epochs.batches_known(part)
                reporter.epoch(state.epoch, known and self._steps(known), self._steps(state.batch))
            stop = self._train_part(state, part, tally, reporter, should_stop, start_time)
            if stop or part.last:
                return stop
        return None

    def _train_part(
        self, state, part: EpochPart, tally: "Tally", reporter, should_stop, start_time
    ) -> str | None:
        """Train on the part's batches from `state.batch`; why it stopped before their end, if it did."""
        cfg, batches = self.config, part.batches
        while state.batch < len(batches):
            done = part.done(state.batch)
            epochs_done = state.epoch + done if part.paced else None  # None: not known
            stop, progress = self._stop_reason(
                state, start_time, tally.to_pay(self.averaging, self.limit_s), should_stop, epochs_done
            )
            if stop:
                return stop
            tick = time.perf_counter()
            self._set_dropout(state.epoch + (done if part.paced else 0.0))
            index, weight = rank_batch(batches, state.batch, self.world)
            batch = self._batch(batches[index], part.rows, part.lines)
            loss, n_tokens = self._train_step(batch, state.step + 1, weight, progress)
            state.step += 1
            state.batch = min(state.batch + self.world.size, len(batches))
            tally.losses.append(loss)
            tally.tokens += n_tokens
            tally.step_seconds = time.perf_counter() - tick
            tally.train_seconds += tally.step_seconds
            reporter.step(
                state.step, loss, self.optimizer.param_groups[0]["lr"], tally.tokens / tally.train_seconds
            )
            if time.monotonic() - tally.saved >= cfg.save_every_minutes * 60:
                self.save(state)  # a kill loses at most this interval, not a whole epoch
                tally.saved = time.monotonic()
        return None

    @property
    def limit_s(self) -> float | None:
        """--max-minutes in seconds, if the run has a time limit."""
        return None if self.config.max_minutes is None else self.config.max_minutes * 60

    @property
    def averaging(self) -> bool:
        return self.config.average > 1

    def _steps(self, n_batches: int) -> int:
        """Steps that train on `n_batches` of an epoch: one batch per process each."""
        return -(-n_batches // self.world.size)

    def _stop_reason(
        self, state, start_time, still_to_pay: float, should_stop, epochs_done: float | None
    ) -> tuple[str | None, float]:
        """Why to stop before the next step, if at all, and how much of the budget is used (for
        the cooldown), agreed by every process; the time budget must also cover that step and the
        final validation (`still_to_pay` seconds), so it is rank 0's clock that counts (only it
        knows what validation costs)."""
        cfg, reason = self.config, None
        elapsed = time.monotonic() - start_time + still_to_pay if self.world.is_main else 0.0
        if should_stop():
            reason = "interrupted"
        elif cfg.max_steps is not None and state.step >= cfg.max_steps:
            reason = "max steps"
        elif out_of_patience(cfg, state):  # a rerun of a run that stopped early
            reason = "early stop"
        elif cfg.max_minutes is not None and elapsed >= cfg.max_minutes * 60:
            reason = "max minutes"
        progress = budget_progress(cfg, state.step, epochs_done, elapsed, self.resumed_at)
        code, progress = self.world.largest([STOPS.index(reason), progress])
        # never backwards: the time still to pay shrinks when a validation is measured shorter
        # than estimated, and the cooldown must not raise the rate again for that
        self.progress = max(self.progress, progress)
        return STOPS[int(code)], self.progress

    def _batch(self, indices, rows, lines=None) -> Batch:
        """The batch of these pairs; `lines(indices)`: their lines in the corpus, for the guide."""
        src, tgt = rows(indices)
        batch = collate(src, tgt, self.max_len)
        if self.guide is not None and lines is not None:  # validation's loss is the translation's alone
            batch.alignment = self.guide.targets(src, tgt, lines(indices), self.max_len)
        return batch.to(self.device)

    def _set_dropout(self, epochs_done: float) -> None:
        """The dropout the schedule gives this step (a function of the epochs done, so a resumed
        run picks it up where it stopped)."""
        p = dropout_at(self.config, self.model.cfg.dropout, epochs_done)
        if p != self.dropout:
            self.model.set_dropout(p)
            self.dropout = p

    def _train_step(self, batch: Batch, step: int, weight: float, progress: float) -> tuple[float, int]:
        cfg = self.config
        lr = lr_schedule(step, cfg.lr, cfg.warmup, progress, cfg.cooldown, cfg.decay)
        try:
            return self.train_step(batch, lr, weight)
        except NonFiniteLoss as e:
            raise Seq2SeqError(
                f"the training loss became {e.args[0]} at step {step}; stopped without saving, "
                f"the last good checkpoint in {self.run_dir} is kept (try a lower --lr)"
            ) from None

    def save(self, state: TrainingState) -> None:
        """The training state to resume from at exactly the next batch (rank 0 writes it)."""
        state.progress = self.progress
        if self.world.is_main:
            checkpoint.save_training_state(
                self.run_dir / ckpt.LAST, self.model, self.optimizer, state.to_json()
            )


@dataclass
class Tally:
    """What the steps since the last validation add up to, and the clocks the stop rules read."""

    losses: list[float] = field(default_factory=list)
    tokens: int = 0
    train_seconds: float = 0.0
    step_seconds: float = 0.0  # the last step's
    validation_seconds: float = 0.0  # the last validation's, or an estimate of the first
    saved: float = field(default_factory=time.monotonic)  # when the state was last saved

    def to_pay(self, averaging: bool, limit_s: float | None) -> float:
        """What the next step and the final validation(s) will cost, for the time limit. The
        validations' share is held to a quarter of the limit: before the first validation it is
        an untrained model decoding to the length limit, which errs long, and on a busy machine
        it could claim the whole of a short limit, so that nothing trained. A final validation
        that costs more than its share runs past the limit by the difference."""
        validations = self.validation_seconds * (2 if averaging else 1)
        if limit_s is not None:
            validations = min(validations, VALIDATION_SHARE * limit_s)
        return self.step_seconds + validations


def out_of_patience(cfg: TrainConfig, state: TrainingState) -> bool:
    """Whether early stopping is on and the last `patience` validations did not beat the best."""
    return cfg.patience > 0 and state.bad_validations >= cfg.patience
