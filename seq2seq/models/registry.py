"""The two architectures side by side, built from the config that names them. Everything else
(decoding, training, checkpoints, the attention views) sees only the protocol in `protocol.py`."""

from dataclasses import fields, replace

from torch import nn

from seq2seq.models import rnn, transformer
from seq2seq.models.rnn import RNN, RNNConfig
from seq2seq.models.transformer import Transformer, TransformerConfig

ModelConfig = TransformerConfig | RNNConfig
ARCHITECTURES = {  # arch -> (config, model, presets)
    "transformer": (TransformerConfig, Transformer, transformer.PRESETS),
    "rnn": (RNNConfig, RNN, rnn.PRESETS),
}


def build_model(cfg: ModelConfig) -> nn.Module:
    return ARCHITECTURES[cfg.arch][1](cfg)


def preset_config(arch: str, preset: str, **overrides) -> ModelConfig:
    """A preset's shape for an architecture; a missing one names those that exist."""
    config, _, presets = ARCHITECTURES[arch]
    if preset not in presets:
        raise ValueError(f"the {arch} presets are {', '.join(presets)}, not {preset!r}")
    return replace(config(**presets[preset]), **overrides)


def config_from_dict(values: dict) -> ModelConfig:
    """The config a config.json's "model" section describes, refusing unknown or missing fields.
    Runs from before the RNN have no "arch": they are Transformers."""
    values = dict(values)
    arch = values.pop("arch", "transformer")
    if arch not in ARCHITECTURES:
        raise ValueError(f"unknown architecture {arch!r}")
    config = ARCHITECTURES[arch][0]
    expected = {f.name for f in fields(config) if f.init}
    if set(values) != expected:
        raise ValueError(f"the 'model' section does not match this version's {config.__name__}")
    return config(**values)
