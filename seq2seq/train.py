"""Training: label-smoothed cross-entropy, AdamW with warmup + inverse-square-root decay, token-budget
batches, validation (loss and greedy BLEU) after every epoch and at the stop, best-by-BLEU weights,
early stopping, and exact resume from the run directory."""

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import torch
import torch.nn.functional as F

from seq2seq import checkpoint as ckpt
from seq2seq import plots
from seq2seq.batch import PAD_ID, Batch, collate, token_batches
from seq2seq.data import FilterReport, filter_pairs, load_pairs
from seq2seq.decode import DecodeOptions
from seq2seq.errors import Seq2SeqError
from seq2seq.evaluate import evaluate
from seq2seq.model import ModelConfig, build_model
from seq2seq.tokenizer import Tokenizer, train_tokenizer


@dataclass
class TrainConfig:
    corpus: str = "multi30k"
    src: str = "en"
    tgt: str = "fr"
    vocab_size: int = 8000
    max_tokens: int = 3072  # per batch: sentences x longest side, in pieces
    lr: float = 1e-3  # peak, reached at the end of warmup
    warmup: int = 800  # steps
    label_smoothing: float = 0.1
    clip_norm: float = 1.0
    epochs: int | None = 10  # None: no epoch limit (a time or step budget, or early stopping ends it)
    max_steps: int | None = None
    max_minutes: float | None = None  # wall-clock budget: training, validation and checkpoints
    patience: int = 5  # validations without a better BLEU before stopping early
    seed: int = 1
    device: str = "auto"
    bf16: bool = True  # bf16 autocast where the hardware runs it fast (CUDA, CPUs with AVX512-BF16/AMX)


# The limits belong to one invocation: a resumed run takes them from the new command line.
LIMITS = ("epochs", "max_steps", "max_minutes", "patience", "device", "bf16")


class Reporter:
    """What training tells the outside world; the CLI draws it with rich, tests ignore it."""

    def start(self, info: dict) -> None: ...
    def epoch(self, epoch: int, n_batches: int, done: int) -> None: ...
    def step(self, step: int, loss: float, lr: float, tokens_per_s: float) -> None: ...
    def validated(self, row: dict) -> None: ...


def lr_schedule(step: int, peak: float, warmup: int) -> float:
    """Linear warmup to `peak`, then decay with 1/sqrt(step) (Vaswani et al. 2017)."""
    step = max(step, 1)
    return peak * min(step / warmup, math.sqrt(warmup / step))


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise Seq2SeqError("--device cuda was asked for, but PyTorch sees no CUDA device")
    if name not in ("cpu", "cuda"):
        raise Seq2SeqError(f"unknown device {name!r}; use auto, cpu or cuda")
    return torch.device(name)


def use_bf16(device: torch.device, wanted: bool) -> bool:
    """bf16 autocast only where it is a speed-up: on CUDA, or on CPUs with native bf16 math."""
    if not wanted:
        return False
    if device.type == "cuda":
        return True
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


def train(
    run_dir: Path,
    config: TrainConfig,
    model_config: ModelConfig,
    data_dir: str | None = None,
    reporter: Reporter | None = None,
    should_stop: Callable[[], bool] = lambda: False,
) -> dict:
    """Train (or resume) the run in `run_dir`; returns the final validation row."""
    run_dir, reporter = Path(run_dir), reporter or Reporter()
    start_time = time.monotonic()
    ckpt.remove_stale_temporaries(run_dir)
    resuming = (run_dir / ckpt.LAST).is_file()
    if resuming:
        sections = ckpt.load_config(run_dir)
        stored = TrainConfig(**sections["train"])
        config = replace(stored, **{k: getattr(config, k) for k in LIMITS})
        model_config = ckpt.model_config(sections)
    device = resolve_device(config.device)
    train_pairs, report = filter_pairs(load_pairs(config.corpus, "train", config.src, config.tgt, data_dir))
    val_pairs = load_pairs(config.corpus, "val", config.src, config.tgt, data_dir)
    tokenizer = _tokenizer(run_dir, config, train_pairs)
    model_config = replace(model_config, vocab_size=tokenizer.vocab_size)
    ckpt.save_config(run_dir, ckpt.config_sections(model_config, config, tokenizer))

    torch.manual_seed(config.seed)
    model = build_model(model_config).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, betas=(0.9, 0.98), eps=1e-9)
    state = {"step": 0, "epoch": 0, "batch": 0, "best_bleu": -1.0, "bad_validations": 0}
    if resuming:
        state = ckpt.load_training_state(run_dir / ckpt.LAST, model, optimizer)
    reporter.start(_start_info(config, model, report, len(val_pairs), state, device))

    loop = _Loop(run_dir, config, model, optimizer, tokenizer, train_pairs, val_pairs, device)
    return loop.run(state, reporter, should_stop, start_time)


def _tokenizer(run_dir: Path, config: TrainConfig, pairs: list[tuple[str, str]]) -> Tokenizer:
    path = run_dir / ckpt.TOKENIZER
    if path.is_file():
        return Tokenizer(path)
    return train_tokenizer((text for pair in pairs for text in pair), path, config.vocab_size)


def _start_info(config, model, report: FilterReport, n_val: int, state: dict, device) -> dict:
    return {
        "pairs": report.kept,
        "dropped": report.dropped,
        "val_pairs": n_val,
        "parameters": sum(p.numel() for p in model.parameters()),
        "resumed_step": state["step"],
        "device": str(device) + (" (bf16 autocast)" if use_bf16(device, config.bf16) else ""),
        "config": asdict(config),
    }


class _Loop:
    """The epoch/step loop with its validation and checkpoint points."""

    def __init__(self, run_dir, config, model, optimizer, tokenizer, train_pairs, val_pairs, device):
        self.run_dir, self.config, self.model, self.optimizer = run_dir, config, model, optimizer
        self.tokenizer, self.val_pairs, self.device = tokenizer, val_pairs, device
        self.src_ids = tokenizer.encode([s for s, _ in train_pairs])
        self.tgt_ids = tokenizer.encode([t for _, t in train_pairs])
        self.lengths = lengths(self.src_ids, self.tgt_ids)
        self.val_src = tokenizer.encode([s for s, _ in val_pairs])
        self.val_tgt = tokenizer.encode([t for _, t in val_pairs])
        self.max_len = model.cfg.max_positions
        self.autocast = torch.autocast(device.type, torch.bfloat16, enabled=use_bf16(device, config.bf16))

    def run(self, state: dict, reporter: Reporter, should_stop, start_time: float) -> dict:
        cfg, row = self.config, None
        losses, tokens, train_seconds, validation_seconds = [], 0, 0.0, 0.0
        stop = None
        while stop is None and (cfg.epochs is None or state["epoch"] < cfg.epochs):
            batches = token_batches(self.lengths, cfg.max_tokens, cfg.seed, state["epoch"])
            reporter.epoch(state["epoch"], len(batches), state["batch"])
            while state["batch"] < len(batches):
                stop = self._stop_reason(state, start_time, validation_seconds, should_stop)
                if stop:
                    break
                tick = time.perf_counter()
                batch = self._batch(batches[state["batch"]], self.src_ids, self.tgt_ids)
                loss = self._train_step(batch, state["step"] + 1)
                state["step"], state["batch"] = state["step"] + 1, state["batch"] + 1
                losses.append(loss)
                tokens += batch.n_tokens
                train_seconds += time.perf_counter() - tick
                lr = self.optimizer.param_groups[0]["lr"]
                reporter.step(state["step"], loss, lr, tokens / train_seconds)
            if stop is None:
                state["epoch"], state["batch"] = state["epoch"] + 1, 0
            if not losses:
                continue  # nothing trained since the last validation (e.g. a finished run rerun)
            tick = time.perf_counter()
            row = self._validate(state, losses, tokens / max(train_seconds, 1e-9), start_time)
            validation_seconds = time.perf_counter() - tick
            reporter.validated(row)
            losses, tokens, train_seconds = [], 0, 0.0
            if state["bad_validations"] >= cfg.patience:
                stop = "early stop"
        return {**(row or {"step": state["step"]}), "stop": stop or "epochs"}

    def _stop_reason(self, state, start_time, validation_seconds, should_stop) -> str | None:
        cfg = self.config
        if should_stop():
            return "interrupted"
        if cfg.max_steps is not None and state["step"] >= cfg.max_steps:
            return "max steps"
        # leave room for the final validation, which the budget also pays for
        elapsed = time.monotonic() - start_time + validation_seconds
        if cfg.max_minutes is not None and elapsed >= cfg.max_minutes * 60:
            return "max minutes"
        return None

    def _batch(self, indices: list[int], src_ids: list[list[int]], tgt_ids: list[list[int]]) -> Batch:
        src = [src_ids[i] for i in indices]
        tgt = [tgt_ids[i] for i in indices]
        return collate(src, tgt, self.max_len).to(self.device)

    def _train_step(self, batch: Batch, step: int) -> float:
        cfg = self.config
        self.model.train()
        lr = lr_schedule(step, cfg.lr, cfg.warmup)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        with self.autocast:
            loss = self._loss(batch, cfg.label_smoothing)
        loss = loss / batch.n_tokens
        value = loss.item()
        if not math.isfinite(value):
            raise Seq2SeqError(
                f"the training loss became {value} at step {step}; stopped without saving, "
                f"the last good checkpoint in {self.run_dir} is kept (try a lower --lr)"
            )
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), cfg.clip_norm)
        self.optimizer.step()
        return value

    def _loss(self, batch: Batch, label_smoothing: float) -> torch.Tensor:
        """Cross-entropy summed over real target tokens (padding ignored)."""
        logits = self.model(batch.src, batch.tgt_in)  # (B, T, V)
        return F.cross_entropy(
            logits.float().flatten(0, 1),
            batch.tgt_out.flatten(),
            ignore_index=PAD_ID,
            label_smoothing=label_smoothing,
            reduction="sum",
        )

    @torch.no_grad()
    def val_loss(self) -> float:
        """Mean per-token cross-entropy on the validation set (no label smoothing)."""
        self.model.eval()
        src, tgt = self.val_src, self.val_tgt
        total, count = 0.0, 0
        for indices in token_batches(lengths(src, tgt), self.config.max_tokens, seed=0, epoch=0):
            batch = self._batch(indices, src, tgt)
            with self.autocast:
                total += self._loss(batch, label_smoothing=0.0).item()
            count += batch.n_tokens
        return total / max(count, 1)

    def _validate(self, state: dict, losses: list[float], tokens_per_s: float, start_time) -> dict:
        val_loss = self.val_loss()
        result = evaluate(self.model, self.tokenizer, self.val_pairs, DecodeOptions(beam=1))
        bleu = result.scores.bleu
        improved = bleu > state["best_bleu"]
        state["bad_validations"] = 0 if improved else state["bad_validations"] + 1
        if improved:
            state["best_bleu"] = bleu
            ckpt.save_weights(self.model, self.run_dir / ckpt.BEST)
        row = {
            "step": state["step"],
            "epoch": state["epoch"],  # epochs completed
            "batch": state["batch"],  # batches into the next one (non-zero when stopped mid-epoch)
            "train_loss": sum(losses) / len(losses) if losses else None,
            "val_loss": val_loss,
            "val_bleu": bleu,
            "val_chrf": result.scores.chrf,
            "best": improved,
            "lr": self.optimizer.param_groups[0]["lr"],
            "tokens_per_s": tokens_per_s,
            "elapsed_s": time.monotonic() - start_time,
        }
        ckpt.save_training_state(self.run_dir / ckpt.LAST, self.model, self.optimizer, state)
        ckpt.append_metrics(self.run_dir, row)
        if plots.available():
            plots.learning_curves(ckpt.read_metrics(self.run_dir), self.run_dir / ckpt.CURVES)
        return row


def lengths(src_ids: list[list[int]], tgt_ids: list[list[int]]) -> list[int]:
    """Batching length of each pair: its longer side plus EOS (or BOS)."""
    return [max(len(s), len(t)) + 1 for s, t in zip(src_ids, tgt_ids, strict=True)]
