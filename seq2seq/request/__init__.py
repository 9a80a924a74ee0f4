"""The one translation pipeline: a request type (`request.py`: lines or a document, the decoding
options, prefixes, terms, a glossary, the case policy, trust) checked as a whole in one place
(`checks.py`), and one entry point that runs it (`translator.py`: tokenized, case folded,
searched, restored, detokenized, then trust and markup as asked). `translate`, `evaluate`, the
server's routes, documents and `seq2seq.translate` all call it; none keeps a step of its own.

May import: `seq2seq.decoding` (the search), `seq2seq.documents` (a document read and written
back), `seq2seq.trust` (confidence), `seq2seq.data`, and the shared small modules."""
