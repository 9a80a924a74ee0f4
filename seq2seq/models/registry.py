"""The architectures by name: what a config.json's "arch" and `seq2seq train --arch` refer to. A new
architecture is one `Seq2SeqModel` subclass, its config dataclass, its presets and `train` options
and one line here; `tests/test_protocol.py` then checks it like the others."""

from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace

from seq2seq.fields import from_json
from seq2seq.models import rnn, transformer
from seq2seq.models.configs import CONFIGS
from seq2seq.models.protocol import Seq2SeqModel
from seq2seq.models.rnn import RNN, RNNConfig
from seq2seq.models.transformer import Transformer, TransformerConfig

ModelConfig = TransformerConfig | RNNConfig


@dataclass(frozen=True)
class Architecture:
    config: type  # the dataclass config.json's "model" section holds
    model: Callable[..., Seq2SeqModel]  # built from that config
    presets: dict[str, dict]  # preset name -> the config fields it sets
    options: dict[str, str]  # `seq2seq train` option (beyond --preset, --dropout) -> the field it sets
    added_since: dict[str, object] = field(default_factory=dict)  # field -> its value in older runs

    def fields(self, options: dict[str, object]) -> dict[str, object]:
        """The config fields that the given train options (those of this architecture, not None)
        set over a preset: {"heads": 8} -> {"n_heads": 8}."""
        return {self.options[n]: v for n, v in options.items() if n in self.options and v is not None}


ARCHITECTURES = {
    "transformer": Architecture(
        CONFIGS["transformer"], Transformer, transformer.PRESETS, transformer.OPTIONS, transformer.ADDED_SINCE
    ),
    "rnn": Architecture(CONFIGS["rnn"], RNN, rnn.PRESETS, rnn.OPTIONS),
}
# every architecture's model options, which a resumed run must honour or refuse
ARCHITECTURE_OPTIONS = tuple(dict.fromkeys(name for a in ARCHITECTURES.values() for name in a.options))


def build_model(cfg: ModelConfig) -> Seq2SeqModel:
    return ARCHITECTURES[cfg.arch].model(cfg)


def preset_config(arch: str, preset: str, **overrides) -> ModelConfig:
    """A preset's shape for an architecture; a missing one names those that exist."""
    architecture = ARCHITECTURES[arch]
    if preset not in architecture.presets:
        raise ValueError(f"the {arch} presets are {', '.join(architecture.presets)}, not {preset!r}")
    return replace(architecture.config(**architecture.presets[preset]), **overrides)


def config_from_dict(values: dict) -> ModelConfig:
    """The config a config.json's "model" section describes, refusing unknown or missing fields.
    Runs from before the RNN have no "arch": they are Transformers; runs from before a field was
    added get the value they were trained with (the architecture's `added_since`)."""
    if not isinstance(values, dict):
        raise ValueError("the 'model' section is not a JSON object")
    values = dict(values)
    arch = values.pop("arch", "transformer")
    if arch not in ARCHITECTURES:
        raise ValueError(f"unknown architecture {arch!r}")
    architecture = ARCHITECTURES[arch]
    values = architecture.added_since | values
    config = architecture.config
    expected = {f.name for f in fields(config) if f.init}
    if set(values) != expected:
        raise ValueError(f"the 'model' section does not match this version's {config.__name__}")
    return from_json(config, values, "the 'model' section")
