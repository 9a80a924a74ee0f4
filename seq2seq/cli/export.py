"""`seq2seq export`: a run for another inference engine, the same weights and vocabulary; and
`seq2seq import`, the other way: a Marian (OPUS-MT) checkpoint as a run."""

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


def import_model(
    source: str = typer.Argument(
        ..., help="A Hugging Face Marian checkpoint (OPUS-MT): its folder, or its Hub id when online."
    ),
    out: Path = typer.Argument(..., help="The run directory to write."),
    src: str | None = typer.Option(None, help="Source language [default: the checkpoint's]."),
    tgt: str | None = typer.Option(None, help="Target language [default: the checkpoint's]."),
    force: bool = typer.Option(False, "--force", help="Replace OUT if it exists."),
):
    """Import a Marian model (Helsinki-NLP's OPUS-MT, as transformers saves it: config.json, the
    weights, source.spm, target.spm, vocab.json) as a run: translate, evaluate, serve, the
    attention views, export and fine-tuning (train --init-from) then work on it."""
    from seq2seq.export.marian import import_marian

    display.imported(import_marian(source, out, force, src, tgt))
