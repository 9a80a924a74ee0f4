"""The options several commands share, declared once, and the one rule for a run's directory."""

from pathlib import Path

import typer

DATA_DIR = typer.Option(
    None, "--data-dir", envvar="SEQ2SEQ_DATA_DIR", help="Local folder in the Multi30k raw layout."
)
CORPUS = typer.Option("multi30k", help="multi30k, a path pattern with {split}, or a hub id[:config].")
RUN = typer.Option(
    None, "--run", help="Run directory [default: runs/<corpus>-<src>-<tgt>: runs/multi30k-en-fr]."
)
BEAM = typer.Option(5, "--beam", help="Beam size.")
GREEDY = typer.Option(False, "--greedy", help="Greedy search (same as --beam 1).")
LENGTH_PENALTY = typer.Option(1.0, "--length-penalty", help="GNMT length penalty alpha.")
BATCH_SIZE = typer.Option(64, "--batch-size", help="Sentences decoded together.")
DEVICE = typer.Option("auto", "--device", help="auto, cpu or cuda.")
BF16 = typer.Option(
    False, "--bf16", help="bf16 autocast where it runs faster than fp32 (CUDA; a CPU is measured)."
)
QUANTIZE = typer.Option(
    None, "--quantize", help="int8: dynamic int8 linear layers on the CPU (fbgemm) [default: fp32]."
)


def one_of(value: str, choices, flag: str | None = None) -> str:
    """`value` if it is one of `choices` (names, or a dict keyed by them), else the usage error
    naming `flag` and what it takes (no flag: an option's callback, which click names itself)."""
    if value not in choices:
        raise typer.BadParameter(f"{value!r} is not one of {', '.join(choices)}", param_hint=flag)
    return value


def check_precision(quantize: str | None, bf16: bool) -> None:
    """--quantize and --bf16 are two answers to one question; refuse the pair, and unknown modes,
    before any work."""
    from seq2seq.models.quantize import QUANTIZATIONS

    if quantize is not None:
        one_of(quantize, QUANTIZATIONS, "--quantize")
    if quantize is not None and bf16:
        raise typer.BadParameter("int8 and bf16 do not combine; choose one", param_hint="--quantize")


def run_dir(run: Path | None, corpus: str = "multi30k", src: str = "en", tgt: str = "fr") -> Path:
    """The run a command works on: --run, or runs/<corpus>-<src>-<tgt> (`train`, `tokenize`) of the
    defaults (every other command: runs/multi30k-en-fr)."""
    from seq2seq.data.corpus import corpus_name

    return run or Path("runs") / f"{corpus_name(corpus)}-{src}-{tgt}"
