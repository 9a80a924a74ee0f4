"""Training: label-smoothed cross-entropy, AdamW with warmup + inverse-square-root decay, token-budget
batches, validation (loss and greedy BLEU) after every epoch and at the stop, best-by-BLEU weights,
early stopping, and exact resume from the run directory."""

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

import torch

from seq2seq import checkpoint as ckpt
from seq2seq.data import FilterReport, filter_pairs, load_pairs
from seq2seq.device import resolve_device, use_bf16
from seq2seq.errors import Seq2SeqError
from seq2seq.lock import run_lock
from seq2seq.loop import Loop, Reporter
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
    save_every_minutes: float = 5.0  # training state saved this often between validations
    seed: int = 1
    device: str = "auto"
    bf16: bool = True  # bf16 autocast where the hardware runs it fast (CUDA, CPUs with AVX512-BF16/AMX)


# The limits belong to one invocation: a resumed run takes them from the new command line.
LIMITS = ("epochs", "max_steps", "max_minutes", "patience", "save_every_minutes", "device", "bf16")


def stored_train_config(run_dir: Path) -> TrainConfig:
    """The training config a run recorded. A field this version lacks is an error (the run is from
    elsewhere); one it adds since takes its default."""
    values = ckpt.load_config(run_dir).get("train")
    where = Path(run_dir) / ckpt.CONFIG
    if not isinstance(values, dict):
        raise Seq2SeqError(f"{where} has no 'train' section; {run_dir} is not a run this version wrote")
    unknown = sorted(set(values) - {f.name for f in fields(TrainConfig)})
    if unknown:
        raise Seq2SeqError(
            f"{where}: the 'train' section has fields this version does not know: {', '.join(unknown)}"
        )
    return TrainConfig(**values)


def train(
    run_dir: Path,
    config: TrainConfig,
    model_config: ModelConfig,
    data_dir: str | None = None,
    reporter: Reporter | None = None,
    should_stop: Callable[[], bool] = lambda: False,
) -> dict:
    """Train (or resume) the run in `run_dir`, holding its lock; returns the final validation row."""
    with run_lock(run_dir):
        return _train(Path(run_dir), config, model_config, data_dir, reporter or Reporter(), should_stop)


def _train(run_dir, config, model_config, data_dir, reporter, should_stop) -> dict:
    start_time = time.monotonic()
    ckpt.remove_stale_temporaries(run_dir)
    resuming = (run_dir / ckpt.LAST).is_file()
    if resuming:
        stored = stored_train_config(run_dir)
        config = replace(stored, **{k: getattr(config, k) for k in LIMITS})
        model_config = ckpt.model_config(ckpt.load_config(run_dir))
    device = resolve_device(config.device)
    train_pairs = load_pairs(config.corpus, "train", config.src, config.tgt, data_dir)
    val_pairs = load_pairs(config.corpus, "val", config.src, config.tgt, data_dir)
    tokenizer = _tokenizer(run_dir, config, train_pairs)  # on every pair, as `seq2seq tokenize` does
    train_pairs, report = filter_pairs(train_pairs, tokenizer.count_pieces, model_config.max_positions - 1)
    model_config = replace(model_config, vocab_size=tokenizer.vocab_size)
    ckpt.save_config(run_dir, ckpt.config_sections(model_config, config, tokenizer))

    torch.manual_seed(config.seed)
    model = build_model(model_config).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, betas=(0.9, 0.98), eps=1e-9)
    state = {"step": 0, "epoch": 0, "batch": 0, "best_bleu": -1.0, "bad_validations": 0, "validated_step": 0}
    if resuming:
        state = ckpt.load_training_state(run_dir / ckpt.LAST, model, optimizer)
        best = ckpt.best_score(run_dir)
        if best is not None and best > state["best_bleu"]:  # killed between the two writes
            state["best_bleu"], state["bad_validations"] = best, 0
    reporter.start(_start_info(config, model, report, len(val_pairs), state, device))

    loop = Loop(run_dir, config, model, optimizer, tokenizer, train_pairs, val_pairs, device)
    return loop.run(state, reporter, should_stop, start_time)


def _tokenizer(run_dir: Path, config: TrainConfig, pairs: list[tuple[str, str]]) -> Tokenizer:
    path = run_dir / ckpt.TOKENIZER
    if path.is_file():
        return Tokenizer(path)
    return train_tokenizer(
        (text for pair in pairs for text in pair), path, config.vocab_size, seed=config.seed
    )


def _start_info(config, model, report: FilterReport, n_val: int, state: dict, device) -> dict:
    return {
        "pairs": report.kept,
        "dropped": report.dropped,
        "filtered": {"empty": report.empty, "too_long": report.too_long, "bad_ratio": report.bad_ratio},
        "max_len": report.max_len,
        "val_pairs": n_val,
        "parameters": sum(p.numel() for p in model.parameters()),
        "resumed_step": state["step"],
        "device": str(device) + (" (bf16 autocast)" if use_bf16(device, config.bf16) else ""),
        "config": asdict(config),
    }
