"""Training: label-smoothed cross-entropy, AdamW with warmup then the run's schedule (held at the
peak and falling linearly to zero over the budget, or an inverse-square-root decay), token-budget
batches, validation (loss and greedy BLEU) after every epoch and at the stop, best-by-BLEU weights,
early stopping, and exact resume from the run directory."""

import os
import time
from collections.abc import Callable, Iterable
from contextlib import nullcontext
from dataclasses import asdict, replace
from pathlib import Path

import torch

from seq2seq.data import tokenized
from seq2seq.data.corpus import MAX_RATIO, FilterReport, Pair, corpus_identity, load_pairs, stream_pairs
from seq2seq.data.opener import open_tokenizer
from seq2seq.data.sampling import KEPT
from seq2seq.data.streamed import Stream, first_pairs
from seq2seq.data.tokenizer import Tokenizer, train_tokenizer
from seq2seq.device import agree_on_bf16, bf16_speedup, precision_note, use_bf16
from seq2seq.errors import Seq2SeqError
from seq2seq.models.registry import ModelConfig, build_model
from seq2seq.runs import files as ckpt
from seq2seq.runs.lock import run_lock
from seq2seq.training import checkpoint, finetune
from seq2seq.training.config import TrainConfig
from seq2seq.training.distributed import World, peers_watched, world
from seq2seq.training.epoch import Epochs, StoredEpochs
from seq2seq.training.guided import Guide, guidance, guide_of
from seq2seq.training.loop import Loop
from seq2seq.training.reporter import Reporter
from seq2seq.training.resume import TrainingState, continued, is_resumable
from seq2seq.training.streaming import StreamedEpochs, check_budget


def train(
    run_dir: Path,
    config: TrainConfig,
    model_config: ModelConfig,
    data_dir: str | None = None,
    reporter: Reporter | None = None,
    should_stop: Callable[[], bool] = lambda: False,
) -> dict:
    """Train (or resume) the run in `run_dir`, holding its lock; returns the final validation row.
    Under torchrun every process calls this; rank 0 holds the lock, writes and reports."""
    with world(config.device) as here:
        config = replace(config, world_size=here.size)
        with run_lock(run_dir) if here.is_main else nullcontext():
            reporter = (reporter or Reporter()) if here.is_main else Reporter()
            with peers_watched(here):
                return _train(Path(run_dir), config, model_config, data_dir, reporter, should_stop, here)


def _train(run_dir, config, model_config, data_dir, reporter, should_stop, here: World) -> dict:
    start_time = time.monotonic()
    resuming = is_resumable(run_dir)
    if not resuming:
        finetune.refuse_imported(run_dir)
    config, model_config = continued(run_dir, config, model_config)
    starting = config.init_from is not None and not resuming  # a fine-tuned run's first start
    if starting:
        model_config = here.from_main(lambda: finetune.start(run_dir, config.init_from))
    folder, model_config, val_pairs, config, told = here.from_main(
        lambda: _prepare(run_dir, config, model_config, data_dir)
    )
    tokenizer = open_tokenizer(run_dir / ckpt.TOKENIZER)
    epochs, guide = _epochs(run_dir, config, model_config, folder, tokenizer, here)
    if config.bf16 and here.size > 1:  # one measurement decides for every process
        agree_on_bf16(here.from_main(lambda: bf16_speedup(here.device)))

    torch.manual_seed(config.seed)
    model = build_model(model_config).to(here.device)
    if starting:
        finetune.load_start(model, config.init_from)
    finetune.freeze(model, config.freeze)
    optimizer = adamw(model, config.lr, config.weight_decay)
    state = TrainingState()
    if resuming:
        saved = checkpoint.load_training_state(run_dir / ckpt.LAST, model, optimizer)
        state = TrainingState.from_json(saved, run_dir / ckpt.LAST)
        best = ckpt.best_score(run_dir)
        if best is not None and best > state.best_bleu:  # killed between the two writes
            state.best_bleu, state.bad_validations = best, 0
    if config.stream:  # again for a resumed run: its state may know the length
        check_budget(config, epochs.stream, state)
    if not here.is_main:  # the same weights everywhere, but each process its own dropout masks
        torch.manual_seed(config.seed * 1_000_003 + 7_919 * here.rank + state.step)
    info = _start_info(config, model, epochs.report, len(val_pairs), state, here)
    reporter.start(info | {"guidance": told})

    loop = Loop(run_dir, config, model, optimizer, tokenizer, epochs, val_pairs, here, guide)
    return loop.run(state, reporter, should_stop, start_time)


def _epochs(
    run_dir: Path,
    config: TrainConfig,
    model_config: ModelConfig,
    folder: str | None,
    tokenizer: Tokenizer,
    here: World,
) -> tuple[Epochs, Guide | None]:
    """What every epoch trains on (its parts) and guided alignment's targets, if any: the stored
    set in `folder`, or the stream (every process reads it)."""
    if config.stream:
        stream = Stream(config.corpus, "train", config.src, config.tgt)
        return StreamedEpochs(stream, tokenizer, config, model_config.max_positions - 1, here), None
    train_set = tokenized.load(folder)
    kept = run_dir / KEPT if here.is_main else None  # rank 0 alone keeps the epoch's draw
    workers = max(1, (os.cpu_count() or 1) // here.size)  # each process draws: they share the cores
    guide = guide_of(config, train_set, tokenizer, run_dir)
    return StoredEpochs(train_set, tokenizer, config, kept, workers), guide


def adamw(
    model: torch.nn.Module, lr: float, weight_decay: float = TrainConfig.weight_decay
) -> torch.optim.AdamW:
    """AdamW whose update runs as one fused kernel per parameter group: the default on a CPU is a
    loop of a dozen operator calls per parameter (its multi-tensor form is CUDA's default only).
    The same arithmetic: 1.02-1.03x the training step on a `small` model, bf16 or fp32
    (`scripts/bench_train_step.py`); its state resumes into either form."""
    return torch.optim.AdamW(
        model.parameters(), lr=lr, betas=(0.9, 0.98), eps=1e-9, weight_decay=weight_decay, fused=True
    )


def _prepare(run_dir: Path, config: TrainConfig, model_config: ModelConfig, data_dir):
    """Rank 0's part of the start: the validation pairs, guided alignment decided (and eflomal's
    links computed), the tokenizer (trained on a sample of the training pairs, as `seq2seq
    tokenize` does, if the run has none), the tokenized training set (built only when the corpus,
    the tokenizer or the filter changed) and config.json. Returns the set's folder, the model's
    config, the validation pairs, the recipe as decided and what to tell of its guidance. Corpus
    files are streamed, once for each of the two that needs them; a hub
    dataset is read once (its content is its identity) and handed to both."""
    ckpt.remove_stale_temporaries(run_dir)
    if config.stream:
        config, told = guidance(config, run_dir, list)
        return *_prepare_stream(run_dir, config, model_config), config, told
    val_pairs = load_pairs(config.corpus, "val", config.src, config.tgt, data_dir)
    identity = corpus_identity(config.corpus, "train", config.src, config.tgt, data_dir)
    if identity is None:  # a hub dataset: known by its content
        loaded = load_pairs(config.corpus, "train", config.src, config.tgt, data_dir)
        identity = tokenized.content_identity(loaded)

        def train_pairs() -> Iterable[Pair]:
            return loaded
    else:

        def train_pairs() -> Iterable[Pair]:
            return stream_pairs(config.corpus, "train", config.src, config.tgt, data_dir)

    config, told = guidance(config, run_dir, train_pairs)
    path = run_dir / ckpt.TOKENIZER
    tokenizer = _tokenizer(path, config, train_pairs)
    max_len = model_config.max_positions - 1
    key = tokenized.cache_key(identity, path, max_len, MAX_RATIO)
    folder = tokenized.build_if_missing(run_dir, key, train_pairs, path, max_len)
    return str(folder), _saved_config(run_dir, config, model_config, tokenizer), val_pairs, config, told


def _prepare_stream(
    run_dir: Path, config: TrainConfig, model_config: ModelConfig
) -> tuple[None, ModelConfig, list[Pair]]:
    """`_prepare` for a streamed corpus: the validation split read whole, a tokenizer the run lacks
    trained on the training stream's first sentences (it is read once), nothing stored."""
    validation = Stream(config.corpus, "val", config.src, config.tgt)
    val_pairs = list(validation.pairs())
    if not val_pairs:
        raise Seq2SeqError(f"{validation.where} is empty")
    if not is_resumable(run_dir):  # before the tokenizer is trained: said at once
        check_budget(config, Stream(config.corpus, "train", config.src, config.tgt), TrainingState())

    def train_pairs() -> Iterable[Pair]:
        return first_pairs(config.corpus, config.src, config.tgt, config.tokenizer_sentences)

    tokenizer = _tokenizer(run_dir / ckpt.TOKENIZER, config, train_pairs)
    return None, _saved_config(run_dir, config, model_config, tokenizer), val_pairs


def _tokenizer(path: Path, config: TrainConfig, train_pairs: Callable[[], Iterable[Pair]]) -> Tokenizer:
    """The run's tokenizer, trained on a sample of the training pairs (as `seq2seq tokenize` does)
    or a fine-tuned run's start's, if the run has none."""
    if not path.is_file():
        if config.init_from is not None:  # a fine-tuned run's first start: the start's tokenizer
            finetune.copy_tokenizer(path, config.init_from, train_pairs())
        else:
            texts = (text for pair in train_pairs() for text in pair)
            train_tokenizer(
                texts, path, config.vocab_size, sentences=config.tokenizer_sentences, seed=config.seed
            )
    return open_tokenizer(path)  # checks it (special ids) before it tokenizes anything


def _saved_config(
    run_dir: Path, config: TrainConfig, model_config: ModelConfig, tokenizer: Tokenizer
) -> ModelConfig:
    """config.json written with the model sized to the tokenizer (the source's: as started)."""
    model_config = replace(model_config, vocab_size=tokenizer.target_vocab_size)
    ckpt.save_config(run_dir, ckpt.config_sections(model_config, config, tokenizer))
    return model_config


def _start_info(config, model, report: FilterReport, n_val: int, state: TrainingState, here: World) -> dict:
    bf16 = " (bf16 autocast)" if use_bf16(here.device, config.bf16) else ""
    return {
        "pairs": None if config.stream else report.kept,  # a stream's: counted as it is read
        "dropped": report.dropped,
        "filtered": {"empty": report.empty, "too_long": report.too_long, "bad_ratio": report.bad_ratio},
        "max_len": report.max_len,
        "val_pairs": n_val,
        "parameters": sum(p.numel() for p in model.parameters()),
        "resumed_step": state.step,
        "device": f"{here.device}{bf16}",
        "precision": precision_note(here.device, config.bf16),  # which, and why
        "world_size": here.size,
        "backend": here.backend,
        "config": asdict(config),
    }
