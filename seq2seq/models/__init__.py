"""The architectures: the `Seq2SeqModel` protocol (`protocol.py`), the registry that names them
(`registry.py`), the Transformer and the RNN, their decoding caches, and int8 quantization.

May import: `seq2seq.data.special` (the fixed piece ids), `seq2seq.errors`, `seq2seq.fields` (typed
configs from JSON). Nothing downstream."""
