"""A run for other inference engines, the same weights and vocabulary: CTranslate2
(`ctranslate2.py`). A new target is one module here and one `--to` choice in `cli/export.py`.

May import: `seq2seq.training.checkpoint` (to load a run), `seq2seq.models`, `seq2seq.data`."""
