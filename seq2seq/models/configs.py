"""Each architecture's config dataclass by name, without torch: what `seq2seq train` builds its
shape options from (`registry.py` pairs each with its model)."""

from seq2seq.models.rnn_config import RNNConfig
from seq2seq.models.transformer_config import TransformerConfig

CONFIGS = {"transformer": TransformerConfig, "rnn": RNNConfig}
