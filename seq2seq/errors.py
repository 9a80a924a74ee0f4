"""The one error type the library raises for bad input; the CLI turns it into a one-line message."""


class Seq2SeqError(Exception):
    """A problem with what the user gave us (data, options, run directory), not a bug."""
