"""The training loop: steps, validation (loss and greedy BLEU), checkpoints and the stop rules."""

import time
from dataclasses import dataclass, field
from functools import partial

import torch

from seq2seq.data.batch import Batch, collate, pair_lengths, token_batches
from seq2seq.decoding.search import DecodeOptions
from seq2seq.device import autocast
from seq2seq.errors import Seq2SeqError
from seq2seq.evaluate import evaluate
from seq2seq.training import averaging
from seq2seq.training import checkpoint as ckpt
from seq2seq.training.config import TrainConfig
from seq2seq.training.distributed import World, rank_batch
from seq2seq.training.epoch import EpochPart
from seq2seq.training.reporter import Reporter
from seq2seq.training.resume import TrainingState
from seq2seq.training.schedule import budget_progress, dropout_at, lr_schedule
from seq2seq.training.step import NonFiniteLoss, TrainStep, data_parallel, summed_loss
from seq2seq.views import plots

# Why a loop stops, by precedence: when processes differ (one was interrupted, another ran out of
# time) the highest wins on all of them, so "interrupted" (save, validate nothing) overrides the rest.
STOPS = (None, "max minutes", "early stop", "max steps", "interrupted")


class Loop:
    """The epoch/step loop with its validation and checkpoint points. Under torchrun every process
    runs it on its share of each step's batches; rank 0 alone validates, saves and reports, and
    the others take the outcome from it (World.from_main)."""

    def __init__(
        self, run_dir, config, model, optimizer, tokenizer, epochs, val_pairs, world: World, guide=None
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
            for number, part in enumerate(self.epochs.parts(state)):
                if number == 0:
                    known = self.epochs.batches_known(part)
                    reporter.epoch(state.epoch, known and self._steps(known), self._steps(state.batch))
                stop = self._train_part(state, part, tally, reporter, should_stop, start_time)
                if stop:
                    break
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

    def _train_part(
        self, state, part: EpochPart, tally: "Tally", reporter, should_stop, start_time
    ) -> str | None:
        """Train on the part's batches from `state.batch`; why it stopped before their end, if it did."""
        cfg, batches = self.config, part.batches
        while state.batch < len(batches):
            to_pay = tally.step_seconds + tally.validation_seconds * (2 if self.averaging else 1)
            epochs_done = state.epoch + part.done(state.batch)
            stop, progress = self._stop_reason(state, start_time, to_pay, should_stop, epochs_done)
            if stop:
                return stop
            tick = time.perf_counter()
            self._set_dropout(epochs_done)
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
    def averaging(self) -> bool:
        return self.config.average > 1

    def _steps(self, n_batches: int) -> int:
        """Steps that train on `n_batches` of an epoch: one batch per process each."""
        return -(-n_batches // self.world.size)

    def _validation_estimate(self, state: TrainingState) -> float:
        """What the final validation will cost, so a time budget leaves room for it: the last one
        measured (kept in the training state), or before any, one batch of validation sentences
        decoded and scaled by the number of batches (an untrained model decodes to the length
        limit: this errs long). By batches, not sentences: on a GPU a batch costs about the same
        whatever its size, and the first call sets up kernels, so it is warmed up untimed."""
        if state.validation_seconds:
            return state.validation_seconds
        # none on ranks other than 0: they leave the time to rank 0
        sample = self.val_pairs[: self.val_options.batch_size]
        if not sample:
            return 0.0
        self.model.eval()
        evaluate(self.model, self.tokenizer, sample[:1], self.val_options)
        tick = time.perf_counter()
        evaluate(self.model, self.tokenizer, sample, self.val_options)
        batches = -(-len(self.val_pairs) // len(sample))
        return (time.perf_counter() - tick) * batches

    def _stop_reason(
        self, state, start_time, still_to_pay: float, should_stop, epochs_done: float
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

    @torch.no_grad()
    def val_loss(self) -> float:
        """Mean per-token cross-entropy on the validation set (no label smoothing)."""
        self.model.eval()
        src, tgt = self.val_src, self.val_tgt
        total, count = 0.0, 0
        rows = lambda indices: ([src[i] for i in indices], [tgt[i] for i in indices])  # noqa: E731
        for indices in token_batches(pair_lengths(src, tgt), self.config.max_tokens, seed=0, epoch=0):
            batch = self._batch(indices, rows)
            with self.autocast:
                total += summed_loss(self.model, batch, label_smoothing=0.0).item()
            count += batch.n_tokens
        return total / max(count, 1)

    def _validate(self, state: TrainingState, losses: list[float], tokens_per_s: float, start_time) -> dict:
        """Score the model (a resumed run may validate steps trained before it started: then
        `losses` is empty), keep it if best, record the row and save the state."""
        tick = time.perf_counter()
        row = self._scored(state, start_time)
        state.bad_validations = 0 if row["best"] else state.bad_validations + 1
        row |= {
            "train_loss": sum(losses) / len(losses) if losses else None,
            "tokens_per_s": tokens_per_s,
        }
        state.validated_step, state.validation_seconds = state.step, time.perf_counter() - tick
        ckpt.append_metrics(self.run_dir, row)  # first: the state saved next marks this step validated
        self.save(state)
        if self.averaging:
            averaging.save_snapshot(self.run_dir, self.model, state.step, keep=self.config.average)
        self._draw_curves()
        return row

    def _validate_average(self, state: TrainingState, start_time: float) -> dict | None:
        """Score the mean of the last snapshots' weights like any checkpoint (best if it beats the
        best), then put the trained weights back; the row says how many were averaged."""
        paths = averaging.snapshot_paths(self.run_dir)[-self.config.average :]
        if len(paths) < 2:
            return None
        trained = {k: v.detach().clone() for k, v in self.model.state_dict().items()}
        self.model.load_state_dict(averaging.averaged_state(paths, self.model))
        try:
            row = self._scored(state, start_time) | {"train_loss": None, "tokens_per_s": None}
        finally:
            self.model.load_state_dict(trained)
        row["averaged"] = len(paths)
        ckpt.append_metrics(self.run_dir, row)
        self.save(state)  # the best score it may have raised
        self._draw_curves()
        return row

    def _scored(self, state: TrainingState, start_time: float) -> dict:
        """Validation loss and greedy BLEU of the model as it is now; the weights become the run's
        best if the BLEU beats the best so far."""
        val_loss = self.val_loss()
        result = evaluate(self.model, self.tokenizer, self.val_pairs, self.val_options)
        bleu = result.scores.bleu
        improved = bleu > state.best_bleu
        if improved:
            state.best_bleu = bleu
            ckpt.save_weights(self.model, self.run_dir / ckpt.BEST, val_bleu=bleu)
        return {
            "step": state.step,
            "epoch": state.epoch,  # epochs completed
            "batch": state.batch,  # batches into the next one (non-zero when stopped mid-epoch)
            "val_loss": val_loss,
            "val_bleu": bleu,
            "val_chrf": result.scores.chrf,
            "best": improved,
            "lr": self.optimizer.param_groups[0]["lr"],
            "dropout": self.dropout,
            "elapsed_s": time.monotonic() - start_time,
        }

    def _draw_curves(self) -> None:
        if plots.available():
            plots.learning_curves(ckpt.read_metrics(self.run_dir), self.run_dir / ckpt.CURVES)

    def save(self, state: TrainingState) -> None:
        """The training state to resume from at exactly the next batch (rank 0 writes it)."""
        state.progress = self.progress
        if self.world.is_main:
            ckpt.save_training_state(self.run_dir / ckpt.LAST, self.model, self.optimizer, state.to_json())


@dataclass
class Tally:
    """What the steps since the last validation add up to, and the clocks the stop rules read."""

    losses: list[float] = field(default_factory=list)
    tokens: int = 0
    train_seconds: float = 0.0
    step_seconds: float = 0.0  # the last step's
    validation_seconds: float = 0.0  # the last validation's, or an estimate of the first
    saved: float = field(default_factory=time.monotonic)  # when the state was last saved


def out_of_patience(cfg: TrainConfig, state: TrainingState) -> bool:
    """Whether early stopping is on and the last `patience` validations did not beat the best."""
    return cfg.patience > 0 and state.bad_validations >= cfg.patience
