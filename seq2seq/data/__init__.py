"""Text to tensors: corpora through `datasets` (`corpus.py`), the joint SentencePiece tokenizer,
Arrow storage of tokenized pairs, token-budget batches, and the special ids every part relies on.

May import: `seq2seq.errors`, `seq2seq.atomic`, `seq2seq.allocator` (the tokenizer's trainer hands back
the gigabytes it frees). Nothing downstream (no model, no decoding)."""
