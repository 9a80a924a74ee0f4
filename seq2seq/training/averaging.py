"""Checkpoint averaging: the mean of the weights saved at the last N validations.

Late in training the weights wander about a minimum with the noise of each batch; their mean lies
nearer it than any one of them and usually translates better (Vaswani et al. 2017 averaged the last
5 checkpoints of the base model; fairseq's average_checkpoints.py and OpenNMT's average_models do
the same after the fact). Here the run keeps the weights of its last N validations in `snapshots/`
and, when training ends, validates their mean like any other checkpoint: it becomes the run's
best weights only if it scores higher.
"""

from pathlib import Path

import torch
from torch import nn

from seq2seq.runs import files as ckpt

SNAPSHOTS = "snapshots"


def snapshot_paths(run_dir: Path) -> list[Path]:
    """The run's snapshots, oldest first (the step is in the name, zero-padded)."""
    folder = Path(run_dir) / SNAPSHOTS
    if not folder.is_dir() or folder.is_symlink():
        return []
    return sorted(p for p in folder.glob("step-*.safetensors") if p.is_file() and not p.is_symlink())


def save_snapshot(run_dir: Path, model: nn.Module, step: int, keep: int) -> None:
    """The weights of this validation, and only the newest `keep` snapshots left on disk."""
    folder = Path(run_dir) / SNAPSHOTS
    if folder.is_symlink():  # never written through: the run's files stay inside the run
        folder.unlink()
    folder.mkdir(exist_ok=True)
    ckpt.save_weights(model, folder / f"step-{step:09d}.safetensors")
    for old in snapshot_paths(run_dir)[:-keep]:
        old.unlink(missing_ok=True)


def averaged_state(paths: list[Path], model: nn.Module) -> dict[str, torch.Tensor]:
    """The element-wise mean of the snapshots' weights (summed in float64, so the order and the
    count do not round it), each checked as `load_weights` checks one file; `model` gives the
    names, shapes and dtypes and is left as it was."""
    reference = {k: v.detach().clone() for k, v in model.state_dict().items()}
    total: dict[str, torch.Tensor] = {}
    for path in paths:
        ckpt.load_weights(model, path)  # every check of a single file: names, shapes, dtype, NaN
        for name, value in model.state_dict().items():
            value = value.detach().to("cpu", torch.float64)
            total[name] = total[name] + value if name in total else value
    model.load_state_dict(reference)
    return {name: (value / len(paths)).to(reference[name].dtype) for name, value in total.items()}
