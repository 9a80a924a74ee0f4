"""The command line, a thin edge: the only package that imports Typer, prints or exits. `app.py`
wires the commands and turns every library error into one line; each group of commands has its
file (`train.py`: tokenize, train; `translate.py`; `evaluate.py`: evaluate, score; `export.py`;
`serve.py`), with the options they share in `options.py`, what they show in `display.py` and
lines in and out in `io.py`. Command modules import the library inside the command, so `--help` stays fast.

May import: anything in the package."""
