"""Using a trained model: greedy and beam search over the protocol (`search.py`), forced scoring of
given translations (`forced.py`), and attention maps of translations (`attention.py`). None of it
asks which architecture it holds.

`options.py` declares how to decode (`DecodeOptions`).

May import: `seq2seq.models`, `seq2seq.data`, `seq2seq.device`, `seq2seq.errors`, `seq2seq.fields`."""
