"""The run directory's files, named once, each written atomically and read with every mismatch
one clean error:

    config.json        {"model": model config (its "arch" names the architecture), "train":
                       TrainConfig, "tokenizer": {...}} as JSON
    tokenizer.model    the SentencePiece model (an imported Marian model: an archive of two, see
                       data/pair_tokenizer.py)
    model.safetensors  best weights by validation BLEU
    last.safetensors   the training state a run resumes from (written by training/checkpoint.py)
    metrics.jsonl      one JSON row per validation
    curves.png         learning curves drawn from metrics.jsonl (when matplotlib is installed)

Nothing is read by unpickling: tensors through
safetensors, everything else as JSON (inside the safetensors metadata for the trainer state).
"""

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import save_file
from torch import nn

from seq2seq.atomic import write_atomic, write_with
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.errors import Seq2SeqError, first_line
from seq2seq.models.registry import ModelConfig, config_from_dict
from seq2seq.runs.tensor_file import read_metadata, read_tensors

CONFIG, TOKENIZER, BEST, LAST, METRICS, CURVES = (
    "config.json",
    "tokenizer.model",
    "model.safetensors",
    "last.safetensors",
    "metrics.jsonl",
    "curves.png",
)


def save_config(run_dir: Path, sections: dict) -> None:
    path = Path(run_dir) / CONFIG
    with saving(path):
        write_atomic(path, (json.dumps(sections, indent=2) + "\n").encode())


def load_config(run_dir: Path) -> dict:
    path = Path(run_dir) / CONFIG
    if not Path(run_dir).is_dir():
        raise Seq2SeqError(f"run directory {run_dir} does not exist; train one with `seq2seq train`")
    if not path.is_file():
        raise Seq2SeqError(f"{path} is missing; {run_dir} is not a trained run")
    try:
        sections = json.loads(path.read_text(encoding="utf-8"))
        model_config(sections)
    except OSError as e:
        raise Seq2SeqError(f"cannot read {path}: {e.strerror}") from None
    except (ValueError, TypeError, KeyError, RecursionError) as e:  # RecursionError: absurd nesting
        raise Seq2SeqError(f"{path} is not a valid run config ({first_line(e)})") from None
    return sections


def model_config(sections: dict) -> ModelConfig:
    """The model config of a config.json (a Transformer's or an RNN's)."""
    values = sections.get("model") if isinstance(sections, dict) else None
    if not isinstance(values, dict):
        raise ValueError("it has no 'model' section")
    return config_from_dict(values)


def save_weights(model: nn.Module, path: Path, val_bleu: float | None = None) -> None:
    """The weights, with the validation BLEU that made them the best, when they are."""
    tensors = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    metadata = {"format": "pt"} | ({} if val_bleu is None else {"val_bleu": str(float(val_bleu))})
    with saving(path):
        write_with(path, lambda tmp: save_file(tensors, str(tmp), metadata=metadata))


def best_score(run_dir: Path) -> float | None:
    """The validation BLEU recorded with the best weights (None: no best weights, or from before
    they carried it). It, not the training state, is what a later validation must beat: a kill
    between the two writes leaves the training state's copy stale."""
    path = Path(run_dir) / BEST
    if not path.is_file():
        return None
    try:
        value = read_metadata(path).get("val_bleu")
        return None if value is None else float(value)
    except (OSError, ValueError):
        return None


def load_weights(model: nn.Module, path: Path) -> None:
    load_state(model, read_tensors(path)[0], path)


def load_state(model: nn.Module, tensors: dict, path: Path) -> None:
    """Weights into `model`, refusing what `load_state_dict` would take silently: tensors of
    another dtype (it casts an int32 tensor into the float weights) and NaN or infinite values."""
    expected = model.state_dict()
    for name, tensor in tensors.items():
        if name in expected and tensor.dtype != expected[name].dtype:
            raise Seq2SeqError(f"{path}: {name} is {tensor.dtype}, not {expected[name].dtype}")
        if tensor.is_floating_point() and not torch.isfinite(tensor).all():
            raise Seq2SeqError(f"{path}: {name} holds NaN or infinite values")
    try:
        model.load_state_dict(tensors)
    except RuntimeError as e:
        raise Seq2SeqError(f"{path} does not fit the model in config.json ({first_line(e)})") from None


@contextmanager
def saving(path: Path) -> Iterator[None]:
    """A full disk or a folder turned read-only: one line, and the previous file left in place
    (every save goes through a temporary file and a rename)."""
    try:
        yield
    except (OSError, SafetensorError) as e:
        reason = e.strerror if isinstance(e, OSError) and e.strerror else first_line(e)
        kept = f"; the previous {path.name} is kept" if path.exists() else ""
        raise Seq2SeqError(f"cannot save {path} ({reason}){kept}") from None


def remove_stale_temporaries(run_dir: Path) -> None:
    """Delete half-written temporary files a killed run left behind (never a finished file, nor
    a folder or a link's target: a run from elsewhere may hold anything under such a name)."""
    if Path(run_dir).is_dir():
        for tmp in Path(run_dir).glob(".*.tmp"):
            if tmp.is_symlink() or tmp.is_file():
                tmp.unlink(missing_ok=True)


def append_metrics(run_dir: Path, row: dict) -> None:
    """Add a validation's row; a row of the same step (the validation redone after a kill before
    the training state recorded it; the averaged weights' row has a step of its own) is replaced,
    and a torn last line dropped. The file is written
    whole through a rename, so it is never half a row, and a link in its place is replaced, never
    followed out of the run."""
    path = Path(run_dir) / METRICS
    key = (row["step"], row.get("averaged"))
    rows = [r for r in read_metrics(run_dir) if (r.get("step"), r.get("averaged")) != key] + [row]
    with saving(path):
        write_atomic(path, "".join(json.dumps(r) + "\n" for r in rows).encode("utf-8"))


def read_metrics(run_dir: Path) -> list[dict]:
    """The rows so far (read through a link: reading never writes outside the run); a last line
    cut short by a kill or a full disk is left out, any other unreadable line is one error."""
    path = Path(run_dir) / METRICS
    if not path.is_file():
        return []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise Seq2SeqError(f"cannot read {path} ({first_line(e)})") from None
    rows = []
    for number, line in enumerate(lines, start=1):
        try:
            row = json.loads(line) if line.strip() else None
        except ValueError:
            if number == len(lines):
                break  # torn: the next append rewrites the file without it
            raise Seq2SeqError(f"{path}: line {number} is not a JSON row") from None
        if row is not None:
            if not isinstance(row, dict) or not isinstance(row.get("step"), int):
                raise Seq2SeqError(f"{path}: line {number} is not a validation row")
            rows.append(row)
    return rows


def config_sections(model_cfg: ModelConfig, train_cfg, tokenizer: Tokenizer) -> dict:
    return {
        "model": asdict(model_cfg),
        "train": asdict(train_cfg),
        "tokenizer": {"file": TOKENIZER, "vocab_size": tokenizer.vocab_size},
    }
