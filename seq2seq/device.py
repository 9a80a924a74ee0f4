"""Where training and decoding run, and in which precision."""

import torch

from seq2seq.errors import Seq2SeqError


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


def autocast(device: torch.device, wanted: bool) -> torch.autocast:
    """The one precision rule of training and decoding alike: fp32, unless bf16 is wanted and
    `use_bf16` says the device computes it fast."""
    return torch.autocast(device.type, torch.bfloat16, enabled=use_bf16(device, wanted))
