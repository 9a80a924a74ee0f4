"""Text files in and out, as every command reads and writes them: lines from files or standard
input, UTF-8 and checked, streamed in groups (`reading.py`); exactly one line out per line in, to a
file never half-written (a new temporary beside it, renamed once whole) or standard output, and no
output over an input or a run (`writing.py`).

May import: the shared small modules."""
