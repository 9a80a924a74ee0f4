"""Word alignment: from the model's cross-attention or attribution (`methods.py`, `attribution.py`),
merged into words (`words.py`, `extract.py`), read and written as Pharaoh (`pharaoh.py`), scored
against gold links (`score.py`), beside a statistical aligner (`baseline.py`, `symmetry.py`);
`api.py` is `seq2seq.align`; `runs.py` aligns as `seq2seq align` does with a run (its trained head,
a reverse run, eflomal on its training pairs).

May import: `seq2seq.decoding` (the attention maps, search), `seq2seq.models`, `seq2seq.data`,
`seq2seq.runs` (a run's recipe),
`seq2seq.views` (the explorer draws the links), and the shared small modules."""
