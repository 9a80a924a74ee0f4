"""What the CLI shows: rich progress bars and tables on a terminal, plain lines elsewhere."""

from pathlib import Path

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from seq2seq.train import Reporter

out = Console()
err = Console(stderr=True, highlight=False, soft_wrap=True)


def error(message: str) -> None:
    err.print(f"error: {message}", markup=False)


def warn(message: str) -> None:
    err.print(f"warning: {message}", markup=False)


def pieces(text: str, pieces: list[str], ids: list[int]) -> None:
    out.print(f"text:   {text}", markup=False)
    out.print(f"pieces: {' '.join(pieces)}", markup=False)
    out.print(f"ids:    {' '.join(map(str, ids))}", markup=False)
    out.print(f"({len(ids)} pieces)")


def tokenizer_trained(path: Path, vocab_size: int, pairs: int, sample: str, split: list[str]):
    out.print(f"trained {path} on {pairs} sentence pairs: {vocab_size} pieces", markup=False)
    out.print(f"example: {sample}", markup=False)
    out.print(f"      -> {' '.join(split)}", markup=False)


def scores(report: dict) -> None:
    table = Table(
        title=f"{report['test_set']}  ({report['sentences']} sentences, "
        f"beam {report['beam']}, {report['seconds']:.1f} s)"
    )
    table.add_column("metric")
    table.add_column("score", justify="right")
    table.add_column("sacreBLEU signature")
    table.add_row("BLEU", f"{report['bleu']:.2f}", report["bleu_signature"])
    table.add_row("chrF", f"{report['chrf']:.2f}", report["chrf_signature"])
    out.print(table)


def training_done(run: Path, final: dict) -> None:
    if "val_bleu" in final:
        out.print(
            f"stopped ({final['stop']}) at step {final['step']}: val BLEU "
            f"{final['val_bleu']:.2f}; best weights in {run / 'model.safetensors'}"
        )
    else:
        out.print(f"nothing to do ({final['stop']}); the run in {run} is complete")


class TrainingDisplay(Reporter):
    """A progress bar per epoch (loss, lr, tokens/s, ETA) and a row per validation."""

    def __init__(self, run: Path):
        self.run = run
        self.progress = Progress(
            TextColumn("epoch {task.fields[epoch]}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn(
                "loss {task.fields[loss]:.3f}  lr {task.fields[lr]:.2e}  {task.fields[tps]:,.0f} tok/s"
            ),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=out,
        )
        self.task = None
        self.table = Table(title=f"validations of {run}")
        for name in ("step", "epoch", "train loss", "val loss", "val BLEU", "val chrF", "tok/s", "minutes"):
            self.table.add_column(name, justify="right")

    def __enter__(self):
        self.progress.start()
        return self

    def __exit__(self, *exc):
        self.progress.stop()
        if self.table.row_count:
            out.print(self.table)

    def start(self, info: dict) -> None:
        self.progress.console.print(
            f"{info['pairs']} training pairs ({info['dropped']} filtered out), "
            f"{info['val_pairs']} validation pairs, {info['parameters']:,} parameters on "
            f"{info['device']}"
            + (f"; resuming from step {info['resumed_step']}" if info["resumed_step"] else ""),
            markup=False,
        )

    def epoch(self, epoch: int, n_batches: int, done: int) -> None:
        if self.task is not None:
            self.progress.remove_task(self.task)
        self.task = self.progress.add_task(
            "train", total=n_batches, completed=done, epoch=epoch + 1, loss=0.0, lr=0.0, tps=0.0
        )

    def step(self, step: int, loss: float, lr: float, tokens_per_s: float) -> None:
        self.progress.update(self.task, advance=1, loss=loss, lr=lr, tps=tokens_per_s)

    def validated(self, row: dict) -> None:
        loss = "-" if row["train_loss"] is None else f"{row['train_loss']:.3f}"
        mark = " *" if row["best"] else ""
        self.table.add_row(
            str(row["step"]),
            str(row["epoch"]),
            loss,
            f"{row['val_loss']:.3f}",
            f"{row['val_bleu']:.2f}{mark}",
            f"{row['val_chrf']:.2f}",
            f"{row['tokens_per_s']:,.0f}",
            f"{row['elapsed_s'] / 60:.1f}",
        )
        self.progress.console.print(
            f"step {row['step']}: val loss {row['val_loss']:.3f}, val BLEU {row['val_bleu']:.2f}"
            f"{' (best)' if row['best'] else ''}",
            markup=False,
        )
