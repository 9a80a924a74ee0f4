"""The options several commands share, declared once."""

import typer

DATA_DIR = typer.Option(
    None, "--data-dir", envvar="SEQ2SEQ_DATA_DIR", help="Local folder in the Multi30k raw layout."
)
CORPUS = typer.Option("multi30k", help="multi30k, a path pattern with {split}, or a hub id[:config].")
RUN = typer.Option(None, "--run", help="Run directory [default: runs/<corpus>-<src>-<tgt>].")
BEAM = typer.Option(5, "--beam", help="Beam size.")
GREEDY = typer.Option(False, "--greedy", help="Greedy search (same as --beam 1).")
LENGTH_PENALTY = typer.Option(1.0, "--length-penalty", help="GNMT length penalty alpha.")
BATCH_SIZE = typer.Option(64, "--batch-size", help="Sentences decoded together.")
DEVICE = typer.Option("auto", "--device", help="auto, cpu or cuda.")
BF16 = typer.Option(
    False, "--bf16", help="bf16 autocast where the device computes it natively (CUDA, AVX512-BF16 CPUs)."
)
