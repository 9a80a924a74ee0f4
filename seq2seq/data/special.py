"""The special piece ids every tokenizer of ours is trained to reserve (`tokenizer.py` checks them),
so batching, the models and decoding can rely on them without asking the tokenizer."""

PAD_ID, UNK_ID, BOS_ID, EOS_ID = 0, 1, 2, 3
