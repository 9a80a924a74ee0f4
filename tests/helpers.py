"""Plain helpers that several test modules share: the CLI's few-step `train` command, the digit
reversal task, the registered architectures' variants, the RNN's variants, the tokenized training
set and a run's copy with its recorded training changed (one translating the other way). Fixtures
live in conftest.py; this module imports none of it, so conftest.py may import it."""

import json
import random
import shutil
from dataclasses import replace

import pytest
import torch
from safetensors.torch import load_file

from seq2seq.data import tokenized
from seq2seq.data.batch import pad
from seq2seq.data.corpus import corpus_identity, load_pairs
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.decoding.search import DecodeOptions, translate
from seq2seq.models.packed import pack, packing_available
from seq2seq.models.protocol import Seq2SeqModel
from seq2seq.models.quantize import quantize
from seq2seq.models.registry import ARCHITECTURES, build_model, preset_config
from seq2seq.models.rnn import RNN, RNNConfig
from seq2seq.models.transformer import TransformerConfig
from seq2seq.runs.files import LAST, read_metadata
from seq2seq.runs.load import load_run
from seq2seq.training.config import TrainConfig

# --- the CLI's commands: a few steps of `train` (tiny preset, CPU), `evaluate` on two lines -------

SENTENCES = TrainConfig.tokenizer_sentences  # the tokenizer's sample, as `train` draws it
TRAIN = [
    "train",
    "--preset",
    "tiny",
    "--max-steps",
    "4",
    "--max-tokens",
    "256",
    "--warmup",
    "2",
    "--vocab-size",
    "60",
    "--device",
    "cpu",
]


# a fine-tuning's `train` (with --init-from): the model and its shape are the start's
TUNE = [
    "train",
    "--max-tokens",
    "256",
    "--warmup",
    "1",
    "--device",
    "cpu",
    "--fp32",
]


def train_args(data, run, steps: int = 4) -> list:
    """TRAIN for `steps` steps, on the corpus folder `data`, into `run`."""
    return [*TRAIN[:3], "--max-steps", str(steps), *TRAIN[5:], "--data-dir", data, "--run", run]


def evaluate_args(run, tmp_path) -> list:
    """`evaluate` of the run on a two-line file in tmp_path, that file its own reference."""
    (tmp_path / "src.txt").write_text("a dog runs\nthe cat sleeps\n")
    return ["evaluate", "--run", run, "--source", tmp_path / "src.txt", "--reference", tmp_path / "src.txt"]


# --- the digit reversal task, which a small model learns in a few epochs --------------------------

REVERSE_MODEL = TransformerConfig(
    d_model=64, n_heads=4, n_encoder_layers=2, n_decoder_layers=2, d_ff=256, dropout=0.0, max_positions=32
)


def write_reversal_task(folder, n_train=3000, n_val=100, seed=0, reverse=True):
    """src: 3-7 random digits; tgt: the same digits reversed (or copied, with reverse=False).
    Written as `{split}.tsv` files."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for split, n in (("train", n_train), ("val", n_val)):
        lines = []
        for _ in range(n):
            digits = [str(rng.randrange(10)) for _ in range(rng.randint(3, 7))]
            tgt = reversed(digits) if reverse else digits
            lines.append(f"{' '.join(digits)}\t{' '.join(tgt)}\n")
        (folder / f"{split}.tsv").write_text("".join(lines))
    return str(folder / "{split}.tsv")


def val_exact_match(run_dir, data_dir) -> float:
    """Share of the task's validation sources that the run's best model translates exactly."""
    model, tokenizer = load_run(run_dir)
    val = (data_dir / "val.tsv").read_text().splitlines()
    sources, targets = zip(*(line.split("\t") for line in val), strict=True)
    outputs = translate(model, tokenizer, list(sources), DecodeOptions(beam=1)).best
    return sum(o == t for o, t in zip(outputs, targets, strict=True)) / len(targets)


def assert_same_training_state(run_a, run_b) -> None:
    a, b = load_file(run_a / LAST), load_file(run_b / LAST)
    for name in a:
        if name.startswith(("model.", "optim.")):
            assert torch.equal(a[name], b[name]), name


# --- every registered architecture and its variants, tiny, in eval mode ---------------------------

SMALL = dict(d_model=32, vocab_size=40, dropout=0.0, max_positions=64)  # fast, and exhaustive enough
OPTIONS = {  # the options an architecture's variants differ by, besides its tiny preset
    "transformer": {
        "post-ln": dict(norm_first=False),
        "untied": dict(tie_embeddings=False),
        "swiglu": dict(ffn="swiglu"),
        # a source table of its own (separate vocabularies), unscaled embeddings: imported Marian models
        "separate": dict(source_vocab_size=48, scale_embeddings=False),
    },
    "rnn": {
        "bahdanau-lstm": dict(cell="lstm"),
        "luong-dot-gru": dict(attention="luong", score="dot"),
        "luong-general-lstm": dict(attention="luong", score="general", cell="lstm"),
    },
}
VARIANTS = {
    f"{arch}{'-' + name if name else ''}": (arch, options)
    for arch in ARCHITECTURES
    for name, options in {"": {}, **OPTIONS.get(arch, {})}.items()
}
SOURCES = [[5, 9, 12, 3], [7, 3], [11, 4, 6, 8, 20, 3], [30, 31, 3]]


def make(name: str, seed: int = 0) -> Seq2SeqModel:
    """A variant (or its `-int8` or `-packed` form) of the tiny preset, narrowed, in eval mode."""
    base, form = name.removesuffix("-int8").removesuffix("-packed"), name[name.rfind("-") + 1 :]
    arch, options = VARIANTS[base]
    torch.manual_seed(seed)
    model = build_model(preset_config(arch, "tiny", **SMALL, **options)).eval()
    if form == "packed" and not packing_available(model):
        pytest.skip("this PyTorch has no oneDNN linear")
    return {"int8": lambda: quantize(model, "int8"), "packed": lambda: pack(model)}.get(form, lambda: model)()


def sources():
    return pad(SOURCES)


def lens(value: int = 10):
    return torch.full((len(SOURCES),), value)


def tokens_and_scores(results):
    return [[h.tokens for h in hyps] for hyps in results], [h.score for hyps in results for h in hyps]


# --- the RNN's attention and cell variants --------------------------------------------------------

RNN_VARIANTS = {
    "bahdanau-gru": dict(attention="bahdanau", cell="gru"),
    "bahdanau-lstm": dict(attention="bahdanau", cell="lstm"),
    "luong-dot-gru": dict(attention="luong", score="dot", cell="gru"),
    "luong-general-lstm": dict(attention="luong", score="general", cell="lstm"),
}


def rnn_variant(variant: str, seed: int = 0, **overrides) -> RNN:
    torch.manual_seed(seed)
    cfg = RNNConfig(
        vocab_size=40, d_model=32, n_layers=2, dropout=0.0, max_positions=64, **RNN_VARIANTS[variant]
    )
    return RNN(replace(cfg, **overrides)).eval()


# --- the Arrow-backed tokenized training set ------------------------------------------------------


def build(run, corpus: str, tokenizer: Tokenizer, max_len: int = 20, pairs=None):
    identity = corpus_identity(corpus, "train", "en", "fr")
    key = tokenized.cache_key(identity, tokenizer.path, max_len, tokenized.MAX_RATIO)
    load = pairs or (lambda: load_pairs(corpus, "train", "en", "fr"))
    return tokenized.load(tokenized.build_if_missing(run, key, load, tokenizer.path, max_len))


def tsv_corpus(folder, pairs):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "train.tsv").write_text("".join(f"{s}\t{t}\n" for s, t in pairs), encoding="utf-8")
    return str(folder / "{split}.tsv")


# `python -m seq2seq -- train` of a tiny model for a few steps under torchrun (two processes or nodes)
TORCHRUN_TRAIN = [
    "-m",
    "seq2seq",
    "--",
    "train",
    "--preset",
    "tiny",
    "--max-steps",
    "3",
    "--max-tokens",
    "64",
]
TORCHRUN_TRAIN += ["--fp32", "--device", "cpu", "--average", "0"]


class Killed(BaseException):
    """Stands for SIGKILL: nothing after it runs, no handler, no save."""


def kill_at(steps: list, step: int):
    """A should_stop that 'kills' the process once `step` steps were taken."""

    def should_stop():
        if len(steps) >= step:
            raise Killed
        return False

    return should_stop


def record_steps(train_step, steps: list):
    def recorded(self, batch, step, weight, progress):
        steps.append(step)
        return train_step(self, batch, step, weight, progress)

    return recorded


def trainer_state(run) -> dict:
    """The trainer's JSON state saved with a run's last checkpoint."""
    return json.loads(read_metadata(run / LAST)["trainer_state"])


def model_weights(run) -> dict[str, torch.Tensor]:
    """The model's tensors of a run's last checkpoint."""
    return {k: v for k, v in load_file(str(run / "last.safetensors")).items() if k.startswith("model.")}


def with_train(run, folder, name, **fields):
    """A copy of the run in `folder`/`name`, its config's "train" section changed by `fields`."""
    copy = folder / name
    shutil.copytree(run, copy)
    sections = json.loads((copy / "config.json").read_text())
    sections["train"].update(fields)
    (copy / "config.json").write_text(json.dumps(sections))
    return copy


def turned_round(tiny_run, folder):
    """The tiny run copied into `folder`, recorded as translating fr->en (its joint tokenizer reads
    either side)."""
    return with_train(tiny_run[0], folder, "fr-en", src="fr", tgt="en")
