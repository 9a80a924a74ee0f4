"""The architectures: the `Seq2SeqModel` protocol (`protocol.py`), the registry that names them
(`registry.py`), the Transformer and the RNN, their decoding caches, int8 quantization, packed
GEMMs for fp32 decoding on the CPU, and the dropout whose mask is cheap there.

May import: `seq2seq.data.special` (the fixed piece ids), `seq2seq.errors`, `seq2seq.fields` (typed
configs from JSON), `seq2seq.device` (`speedup`, which times whether packing pays). Nothing
downstream."""
