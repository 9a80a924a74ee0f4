"""A run for other inference engines, the same weights and vocabulary: CTranslate2
(`ctranslate2.py`) and Hugging Face transformers (`huggingface.py`, with its tokenizer in
`hf_tokenizer.py` and its model card in `model_card.py`); `folder.py` keeps every export off the
run it comes from. A new target is one module here and one `--to` choice in `cli/export.py`. The
other way, `marian.py` imports a Hugging Face Marian checkpoint (OPUS-MT) as a run.

May import: `seq2seq.runs` (to open and write a run), `seq2seq.models`, `seq2seq.data`,
`seq2seq.decoding` (decoding defaults), `seq2seq.evaluate` (the sacreBLEU signature)."""
