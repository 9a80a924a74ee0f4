"""`seq2seq export`: a run for another inference engine, the same weights and vocabulary."""

from pathlib import Path

import typer

from seq2seq.cli import display
from seq2seq.cli.options import RUN, run_dir


def export(
    output: Path = typer.Argument(..., help="The model directory to write."),
    run: Path | None = RUN,
    to: str = typer.Option("ctranslate2", "--to", help="Engine: ctranslate2."),
    quantization: str | None = typer.Option(None, help="int8, int8_float32, bfloat16, ... [default: fp32]"),
    force: bool = typer.Option(False, "--force", help="Replace OUTPUT if it exists."),
):
    """Convert a run for another inference engine (CTranslate2), the same weights and vocabulary."""
    from seq2seq.export.ctranslate2 import export_ctranslate2

    if to != "ctranslate2":
        raise typer.BadParameter(f"{to!r} is not one of ctranslate2", param_hint="--to")
    out = export_ctranslate2(run_dir(run), output, quantization, force)
    display.exported(out, quantization)
