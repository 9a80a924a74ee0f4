"""Making and keeping a run: the recipe (`config.py`), the entry point (`train.py`), the loop and
one step, torchrun data parallelism, the training state it resumes from (`checkpoint.py`; the
run's other files are `seq2seq.runs`'), the resume rules and typed training state (`resume.py`),
and the lock that keeps one writer per run.

May import: `seq2seq.runs` (it writes a run through it), `seq2seq.models`, `seq2seq.data`,
`seq2seq.decoding` (validation), `seq2seq.evaluate`, `seq2seq.views.plots` (the curves),
`seq2seq.alignment.pharaoh`, `seq2seq.alignment.words` and `seq2seq.alignment.baseline` (guided
alignment's links, its words and eflomal, its teacher), and the shared small modules."""
