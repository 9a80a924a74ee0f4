"""Can I trust this translation: word and sentence confidence, source words left uncovered, and how
much the output owes its source, read from one teacher-forced pass (`signals.py`), for a
translation of anyone's.

May import: `seq2seq.decoding` (sources as search reads them), `seq2seq.models`, `seq2seq.data`,
`seq2seq.alignment.words` (pieces merged into words as `align` merges them), and the shared small
modules."""
