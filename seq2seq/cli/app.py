"""The command line: options -> config -> one library call. Only this layer prints or exits."""

import contextlib
import errno
import io
import os
import sys
import traceback
from typing import NoReturn

import typer

from seq2seq.allocator import keep_freed_memory
from seq2seq.cli import display
from seq2seq.cli.align import align
from seq2seq.cli.align_train import align_train
from seq2seq.cli.check import check
from seq2seq.cli.evaluate import evaluate, score
from seq2seq.cli.export import export, import_model
from seq2seq.cli.options import command as expanded
from seq2seq.cli.options import spelled
from seq2seq.cli.serve import serve
from seq2seq.cli.train import tokenize, train
from seq2seq.cli.translate import translate
from seq2seq.errors import Seq2SeqError
from seq2seq.files.reading import ReaderLeft

app = typer.Typer(
    help="Train and run a small encoder-decoder translator (a Transformer, or an RNN with attention), "
    "and see its cross-attention.",
    add_completion=False,
    pretty_exceptions_enable=False,
    # click's plain help: rich's would read "[default: ...]" in a help text as markup and drop it,
    # and print every switch with a "<bool>" value it does not take
    rich_markup_mode=None,
)


# One rule for where a command goes: cli/<group>.py holds a group of commands as plain functions
# (train.py: tokenize, train; translate.py; evaluate.py: evaluate, score; export.py: export, import;
# serve.py; check.py), registered here.
for command in (tokenize, train, translate, evaluate, score, align, check, export, serve):
    app.command()(expanded(command))
app.command("import")(expanded(import_model))
app.command("align-train")(expanded(align_train))


def discard_stdout() -> None:
    """What is still buffered for a stdout that failed would fail again at exit (status 120):
    send it nowhere instead."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


# click's UsageError, wherever this Typer version keeps click (newer releases vendor it)
UsageError = typer.BadParameter.__mro__[1]


def main() -> None:
    """Run the app with every error as one line on stderr: exit 2 for bad input or usage."""
    if len(sys.argv) == 1:
        sys.argv.append("--help")
    keep_freed_memory()
    for stream in (sys.stdout, sys.stderr):  # UTF-8 whatever PYTHONIOENCODING or the locale says
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(encoding="utf-8", errors="replace")
    try:
        code = app(standalone_mode=False)
    except UsageError as e:
        hint = f" (see `{e.ctx.command_path} --help`)" if e.ctx else ""
        display.error(e.format_message() + hint)
        code = 2
    except Seq2SeqError as e:
        display.error(spelled(e))
        code = 2
    except typer.Abort:  # Ctrl-C outside training
        display.error("interrupted")
        code = 130
    except ReaderLeft:  # `seq2seq translate ... | head`: the reader left, nothing to report
        discard_stdout()
        code = 0
    except OSError as e:  # standard output on a full disk (ENOSPC, EIO), or any file a library read
        code = os_error(e)
    except Exception as e:  # torch's OutOfMemoryError; torch is imported by then if it can occur
        code = out_of_memory(e)
    finish(code if isinstance(code, int) else 0)


def os_error(e: OSError) -> int:
    if e.filename is None and e.errno in (errno.ENOSPC, errno.EIO, errno.EDQUOT):
        display.error(f"cannot write standard output: {e.strerror}")
    else:
        display.error(f"{e.filename}: {e.strerror or e}" if e.filename else str(e.strerror or e))
    discard_stdout()
    return 2


def out_of_memory(e: Exception) -> int:
    """Out of GPU memory is one line; anything else is a bug, raised (on a torchrun rank: its
    traceback, then `finish`, not an abort)."""
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(e, torch.cuda.OutOfMemoryError):
        if not in_torchrun_job():
            raise e
        traceback.print_exc()
        finish(1)
    display.error(
        "out of GPU memory: lower --max-tokens (train) or --batch-size (translate, evaluate, "
        "score); the run's last checkpoint is kept"
    )
    return 2


def finish(code: int) -> NoReturn:
    """Exit with `code`; a torchrun process skips the interpreter's finalization (os._exit, once
    stdout and stderr are flushed). DDP keeps gloo's process group, and so its worker threads,
    alive past destroy_process_group; a worker that lets go of a tensor while the interpreter
    finalizes cannot take the GIL and aborts the process ("terminate called without an active
    exception", SIGABRT; an upstream fix, pytorch/pytorch PR 179291, was abandoned), which fails
    the whole job after a good run. Everything the run writes is closed by the time the command
    returns."""
    if in_torchrun_job():
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        os._exit(code)
    sys.exit(code)


def in_torchrun_job() -> bool:
    """One process of a torchrun job. Looked up, not imported: a command that never imported torch
    has no process group, and `--help` stays fast."""
    distributed = sys.modules.get("seq2seq.training.distributed")
    return distributed is not None and distributed.launched_by_torchrun()
