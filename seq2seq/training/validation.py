"""Validation: the loss and greedy BLEU of the model as it trains, the best weights, the mean of
the last validations' weights, and what a validation costs (for a time budget). The loop's half
that scores; training/loop.py is the half that steps."""

import time

import torch

from seq2seq.data.batch import pair_lengths, token_batches
from seq2seq.evaluate import evaluate
from seq2seq.runs import files as ckpt
from seq2seq.training import averaging
from seq2seq.training.resume import TrainingState
from seq2seq.training.step import summed_loss
from seq2seq.views import plots


class Validation:
    """Mixed into the Loop, whose model, tokenizer, validation pairs and run directory it scores
    and writes to."""

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
