"""`seq2seq export`: a run for another inference engine, the same weights and vocabulary."""

from pathlib import Path

import typer

from seq2seq.cli import display
from seq2seq.cli.options import RUN, one_of, run_dir

TARGETS = ("ctranslate2", "huggingface")


def export(
    output: Path = typer.Argument(..., help="The model directory to write."),
    run: Path | None = RUN,
    to: str = typer.Option("ctranslate2", "--to", help="Engine: ctranslate2 or huggingface."),
    quantization: str | None = typer.Option(
        None, help="ctranslate2 only: int8, int8_float32, bfloat16, ... [default: fp32]"
    ),
    force: bool = typer.Option(False, "--force", help="Replace OUTPUT if it exists."),
):
    """Convert a run for another inference engine (CTranslate2) or for Hugging Face transformers,
    the same weights and vocabulary."""
    one_of(to, TARGETS, "--to")
    if to == "huggingface":
        from seq2seq.export.huggingface import export_huggingface

        if quantization is not None:
            raise typer.BadParameter("only for --to ctranslate2", param_hint="--quantization")
        display.exported_huggingface(export_huggingface(run_dir(run), output, force))
        return
    from seq2seq.export.ctranslate2 import export_ctranslate2

    out = export_ctranslate2(run_dir(run), output, quantization, force)
    display.exported(out, quantization)
