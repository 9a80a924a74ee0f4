"""The training state a run resumes from (last.safetensors): the latest weights *and* the
optimizer, schedule and RNG state in one file, so a kill can never pair the weights of one step
with the optimizer of another. The run's other files are `seq2seq/runs/`'s."""

import json
from pathlib import Path

import torch
from safetensors.torch import save_file
from torch import nn

from seq2seq.atomic import write_with
from seq2seq.errors import Seq2SeqError, first_line
from seq2seq.runs.files import load_state, saving
from seq2seq.runs.tensor_file import read_tensors


def save_training_state(path: Path, model: nn.Module, optimizer, state: dict) -> None:
    """One file: weights under `model.`, optimizer tensors under `optim.`, the rest as JSON."""
    tensors = {f"model.{k}": v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    optim = optimizer.state_dict()
    optim_json = {"param_groups": optim["param_groups"], "state": {}}
    for idx, values in optim["state"].items():
        optim_json["state"][str(idx)] = {}
        for name, value in values.items():
            if torch.is_tensor(value):
                tensors[f"optim.{idx}.{name}"] = value.detach().cpu().contiguous()
            else:
                optim_json["state"][str(idx)][name] = value
    tensors["rng.cpu"] = torch.get_rng_state()
    if torch.cuda.is_available():
        tensors["rng.cuda"] = torch.cuda.get_rng_state()
    metadata = {"format": "pt", "trainer_state": json.dumps(state), "optimizer": json.dumps(optim_json)}
    with saving(path):
        write_with(path, lambda tmp: save_file(tensors, str(tmp), metadata=metadata))


def load_training_state(path: Path, model: nn.Module, optimizer) -> dict:
    """Restore weights, optimizer and RNG in place; return the trainer's JSON state."""
    tensors, metadata = read_tensors(path)
    try:
        state = json.loads(metadata["trainer_state"])
        optim_json = json.loads(metadata["optimizer"])
    except (KeyError, ValueError) as e:
        raise Seq2SeqError(f"{path} has no valid trainer state ({e})") from None
    load_state(model, {k[6:]: v for k, v in tensors.items() if k.startswith("model.")}, path)
    try:  # anything structurally altered (groups, ids, shapes, the RNG) is one line, not a traceback
        optimizer.load_state_dict(_optimizer_state(optim_json, tensors, optimizer))
        torch.set_rng_state(tensors["rng.cpu"])
        if "rng.cuda" in tensors and torch.cuda.is_available():
            torch.cuda.set_rng_state(tensors["rng.cuda"])
    except (KeyError, ValueError, TypeError, RuntimeError, AttributeError, IndexError) as e:
        raise Seq2SeqError(
            f"{path} has a trainer state that does not fit this model ({first_line(e)})"
        ) from None
    return state


def _optimizer_state(optim_json: dict, tensors: dict, optimizer) -> dict:
    """The optimizer's state dict from the checkpoint's JSON and tensors, each moment tensor checked
    against its parameter's shape (`load_state_dict` does not; the first step would fail)."""
    state = {int(i): dict(values) for i, values in optim_json["state"].items()}
    for key, value in tensors.items():
        if key.startswith("optim."):
            _, idx, name = key.split(".", 2)
            state.setdefault(int(idx), {})[name] = value
    params = [p for group in optimizer.param_groups for p in group["params"]]
    for idx, values in state.items():
        for name, value in values.items():
            if name != "step" and torch.is_tensor(value) and value.shape != params[idx].shape:
                raise ValueError(f"optimizer state {idx}.{name} has shape {tuple(value.shape)}")
    return {"state": state, "param_groups": optim_json["param_groups"]}
