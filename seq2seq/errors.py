"""The one error type the library raises for bad input; the CLI turns it into a one-line message."""


class Seq2SeqError(Exception):
    """A problem with what the user gave us (data, options, run directory), not a bug."""


def first_line(error: Exception) -> str:
    """The gist of a library's (often multi-line) error, to quote inside our one-line message."""
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0]


class OptionError(Seq2SeqError):
    """A value given for one option (named as the command line spells it) that cannot be used."""

    def __init__(self, option: str, message: str):
        super().__init__(f"Invalid value for '{option}': {message}")
        self.option = option


class FieldError(Seq2SeqError):
    """A request or a command's value that cannot be used as given, naming the library's fields at
    fault (`prefixes`, `avoid`, `output`); each edge spells them its own way (the command line its
    flags, the server its JSON names), each in one table."""

    def __init__(self, fields: str | tuple[str, ...], message: str):
        self.fields = (fields,) if isinstance(fields, str) else tuple(fields)
        self.message = message
        super().__init__(f"{', '.join(self.fields)}: {message}")


def spelled_fields(error: Exception, names: dict[str, str], default) -> list[str] | None:
    """The fields a FieldError names, as an edge spells them (`names`, else `default(field)`),
    each once; None for any other error."""
    fields = getattr(error, "fields", None)
    return list(dict.fromkeys(names.get(f) or default(f) for f in fields)) if fields else None
