"""Shared fixtures: tiny models and small corpora written into tmp_path, never the repo."""

import gzip
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from seq2seq.data.tokenizer import Tokenizer, train_tokenizer
from seq2seq.models.transformer import Transformer, TransformerConfig
from seq2seq.runs import files as ckpt
from seq2seq.training.config import TrainConfig
from tests.cli_helpers import run_cli, run_process
from tests.helpers import SENTENCES, TRAIN

# a worker a core: one torch thread each, as the CLI's subprocesses have
if os.environ.get("PYTEST_XDIST_WORKER"):
    torch.set_num_threads(1)

EN = ["a dog runs", "two men sit", "the cat sleeps", "a red car", "a girl plays", "the sun sets"]
FR = [
    "un chien court",
    "deux hommes assis",
    "le chat dort",
    "une voiture rouge",
    "une fille joue",
    "le soleil se couche",
]


def tiny_model(vocab_size: int = 40, seed: int = 0, **overrides) -> Transformer:
    """A 2+2 layer model small enough for exhaustive checks; dropout off so it is deterministic."""
    torch.manual_seed(seed)
    cfg = TransformerConfig(
        vocab_size=vocab_size,
        d_model=32,
        n_heads=4,
        n_encoder_layers=2,
        n_decoder_layers=2,
        d_ff=64,
        dropout=0.0,
        max_positions=64,
        **overrides,
    )
    return Transformer(cfg).eval()


def caption_tokenizer(path: Path, vocab_size: int = 120) -> Tokenizer:
    """A SentencePiece model of the test captions, both languages."""
    texts = [f"{e} {i}" for i, e in enumerate(EN * 20)] + [f"{f} {i}" for i, f in enumerate(FR * 20)]
    return train_tokenizer(texts, path, vocab_size, sentences=SENTENCES)


def write_run(run: Path, make_model: Callable[[int], torch.nn.Module], tokenizer: Tokenizer | None = None):
    """A run directory holding make_model(vocabulary size), as `seq2seq train` would leave it; with
    the caption tokenizer (trained there) unless one is given."""
    run.mkdir(parents=True, exist_ok=True)
    if tokenizer is None:
        tokenizer = caption_tokenizer(run / ckpt.TOKENIZER)
    else:
        (run / ckpt.TOKENIZER).write_bytes(tokenizer.sp.serialized_model_proto())
    model = make_model(tokenizer.vocab_size)
    ckpt.save_config(run, ckpt.config_sections(model.cfg, TrainConfig(guided_alignment=None), tokenizer))
    ckpt.save_weights(model, run / ckpt.BEST)
    return run


def saved_step(run: Path) -> int:
    """The step of the run's training state (0: none yet); the file is replaced whole, by rename."""
    if not (run / ckpt.LAST).is_file():
        return 0
    return json.loads(ckpt.read_metadata(run / ckpt.LAST)["trainer_state"])["step"]


def write_multi30k(folder: Path, sizes: dict[str, int], langs=("en", "fr"), gz: bool = True):
    """A Multi30k-layout folder of synthetic, line-aligned captions."""
    folder.mkdir(parents=True, exist_ok=True)
    for split, n in sizes.items():
        for lang, words in zip(langs, (EN, FR), strict=False):
            lines = "".join(f"{words[i % len(words)]} {i}\n" for i in range(n))
            name = folder / f"{split}.{lang}{'.gz' if gz else ''}"
            if gz:
                with gzip.open(name, "wt", encoding="utf-8") as f:
                    f.write(lines)
            else:
                name.write_text(lines, encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def browser():
    """Headless Debian chromium driven by Playwright, one per module that asks (the browser tests
    skip their module first when either is missing)."""
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="browser tests need playwright (the test extra)"
    )
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("no chromium on PATH: apt-get install -y chromium (.ci/run does, as root)")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium)
        yield browser
        browser.close()


@pytest.fixture
def cli(capsys, monkeypatch):
    """Runs the CLI in this process: `cli("translate", "--run", run, "a dog")`, with stdin= the
    bytes it reads, gives its Result (exit code, stdout, stderr)."""
    return lambda *args, stdin=b"": run_cli(list(args), capsys, monkeypatch, stdin)


@pytest.fixture(scope="module")
def run(request, tmp_path_factory) -> Path:
    """A run of an untrained tiny Transformer, one for each module that asks, its weights seeded by
    the module's RUN_SEED (0 where it sets none), so modules do not share what their tests do to it;
    a module that sets RUN_TRAINED = True gets its `tiny_run` (trained by the CLI) instead."""
    if getattr(request.module, "RUN_TRAINED", False):
        return request.getfixturevalue("tiny_run")[0]
    seed = getattr(request.module, "RUN_SEED", 0)
    return write_run(tmp_path_factory.mktemp("run"), lambda v: tiny_model(vocab_size=v, seed=seed))


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> tuple[Path, Path]:
    """A tiny run trained by the CLI (in a subprocess, as a user would), and its corpus folder; one
    for each module that asks, so what one module's tests do to it never reaches another's."""
    root = tmp_path_factory.mktemp("trained")
    data = write_multi30k(root / "corpus", {"train": 60, "val": 6})
    result = run_process([*TRAIN, "--data-dir", data, "--run", root / "run"])
    assert result.code == 0, result.err
    return root / "run", data


@pytest.fixture
def corpus_dir(tmp_path: Path) -> Path:
    return write_multi30k(tmp_path / "corpus", {"train": 60, "val": 12, "test_2016_flickr": 12})
