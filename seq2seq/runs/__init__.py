"""The run directory: its files named once and written atomically (`files.py`), a run opened for
decoding (`load.py`: model and tokenizer), and what its recipe recorded that readers need
(`recipe.py`: languages, guided alignment). Training writes a run through it; translating,
evaluating, aligning, serving and exporting read one through it, never through training.

May import: `seq2seq.models`, `seq2seq.data`, and the shared small modules."""
