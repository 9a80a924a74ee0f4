"""`translate`'s lines as a library: what steers each line's search (prefixes, terms) and records it
(the beam's trace), a group of lines translated with its maps (`lines.py`), and the views of each
line's attention (the terminal map, pictures, the explorer page: `views.py`). The command reads and
writes the text and shows progress; everything between is here, tested without it.

May import: `seq2seq.decoding`, `seq2seq.files` (the files of prefixes, terms and outputs),
`seq2seq.views` (pictures and the explorer page), `seq2seq.trust` (--confidence),
`seq2seq.documents.case` (ALL-CAPS and Title-Case lines), and the shared small modules."""
