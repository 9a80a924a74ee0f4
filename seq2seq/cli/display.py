"""What the CLI shows: rich progress bars and tables on a terminal, plain lines elsewhere."""

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
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

from seq2seq.files.reading import ReaderLeft
from seq2seq.training.reporter import Reporter


class Stdout(Console):
    """Standard output: a reader that leaves (`seq2seq evaluate ... | head`) ends the command
    quietly, as it does for translate (rich's own answer is exit 1)."""

    def on_broken_pipe(self) -> None:
        raise ReaderLeft


out = Stdout()
err = Console(stderr=True, highlight=False, soft_wrap=True)


def error(message: str) -> None:
    err.print(f"error: {message}", markup=False)


def warn(message: str) -> None:
    err.print(f"warning: {message}", markup=False)


def note(message: str) -> None:
    """What a command did, on stderr (stdout keeps its one output)."""
    err.print(message, markup=False)


def prompt(text: str) -> None:
    """Plain writes: a Ctrl-C in the middle of a rich print would leave rich's buffer open."""
    sys.stderr.write(text)
    sys.stderr.flush()


@contextmanager
def line_progress(enabled: bool, total: int | None, unit: str = "lines") -> Iterator[Callable[[int], None]]:
    """A bar over the input lines (or a document's sentences) on a terminal's stderr (total None:
    a count only); yields the function that moves it on by n of them."""
    if not (enabled and err.is_terminal):
        yield lambda n: None
        return
    columns = [TextColumn("translating"), BarColumn(), MofNCompleteColumn(), TextColumn(unit)]
    with Progress(*columns, TimeElapsedColumn(), TimeRemainingColumn(), console=err) as progress:
        task = progress.add_task("translate", total=total)
        yield lambda n: progress.advance(task, n)


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
    if "flagged" in report:
        counts = ", ".join(f"{flag} {n}" for flag, n in report["flagged"].items()) or "none"
        out.print(f"flagged lines (of {report['sentences']}): {counts}", markup=False)
    if "paired_test" in report:
        paired_test(report["paired_test"], report["run"])


def paired_test(test: dict, run: str) -> None:
    """Both systems' scores, each with its resampled mean and 95% CI, and the p-values."""
    from seq2seq.evaluate import TESTS

    table = Table(title=f"{TESTS[test['test']]}, {test['resamples']} samples")
    table.add_column("system")
    table.add_column("BLEU (mean ± 95% CI)", justify="right")
    table.add_column("chrF (mean ± 95% CI)", justify="right")
    for who, label in (("baseline", "baseline"), ("system", "this run")):
        cells = [f"{e['score']:.2f} ({e['mean']:.2f} ± {e['ci']:.2f})" for e in _estimates(test, who)]
        table.add_row(label, *cells)
    table.add_row("p-value", *(_p_value(test[m]["p_value"]) for m in ("bleu", "chrf")))
    out.print(table)
    out.print(f"baseline: {test['baseline']}; this run: {run}", markup=False)
    out.print(f"signature: {test['bleu']['signature']}", markup=False, soft_wrap=True)


def _estimates(test: dict, who: str) -> list[dict]:
    return [test[metric][who] for metric in ("bleu", "chrf")]


def _p_value(p: float) -> str:
    return f"{p:.4f} ({'' if p < 0.05 else 'not '}significant)"


def attention_heatmap(maps, layer: int | None, head: int | None) -> None:
    """The cross-attention of one translation (`AttentionMaps`) on stderr, so stdout keeps one line
    per input line."""
    from seq2seq.views.heatmap import heatmap_lines

    for line in heatmap_lines(maps, "cross", layer, head, err.width):
        err.print(line, soft_wrap=False)  # the grid fits the width; a long title wraps


def exported(path: Path, quantization: str | None) -> None:
    out.print(f"wrote the CTranslate2 model {path} ({quantization or 'float32'} weights)", markup=False)


def imported(run: Path) -> None:
    out.print(
        f"wrote the run {run} (translate, evaluate, serve it; fine-tune it with --init-from)", markup=False
    )


def exported_huggingface(path: Path) -> None:
    ships_code = (path / "modeling_gated.py").exists()  # a gated block: the model is code of the folder's
    how = "; the model with trust_remote_code=True, for the modeling_gated.py it ships" if ships_code else ""
    out.print(
        f"wrote the Hugging Face model {path} (AutoModelForSeq2SeqLM and AutoTokenizer load it{how})",
        markup=False,
    )


def training_done(run: Path, final: dict) -> None:
    if final["stop"] == "interrupted" and final["step"] == 0:
        out.print(f"interrupted before a step could run; {run} holds no trained weights")
    elif final["stop"] == "interrupted":
        out.print(
            f"interrupted at step {final['step']}; the training state is saved in {run}: rerun the same "
            "command to continue",
            markup=False,
        )
    elif "val_bleu" in final:
        averaged = f" (the mean of the last {final['averaged']} checkpoints)" if final.get("averaged") else ""
        out.print(
            f"stopped ({final['stop']}) at step {final['step']}: val BLEU {final['val_bleu']:.2f}"
            f"{averaged}; best weights in {run / 'model.safetensors'}"
        )
    elif final["stop"] == "max minutes":
        out.print(
            f"the --max-minutes time limit was spent before a step could run: {run} holds no trained "
            "weights (what was set up, such as the tokenizer, is kept); rerun with a larger --max-minutes",
            markup=False,
        )
    else:
        out.print(f"nothing to do ({final['stop']}); the run in {run} is complete")


def _training_pairs(info: dict) -> str:
    """What the run trains on: the stored pairs and what the filter dropped, or a stream."""
    config = info["config"]
    if info["pairs"] is None:
        return f"training pairs streamed from {config['corpus']}, {config['stream_part']:,} a part"
    return f"{info['pairs']} training pairs ({info['dropped']} filtered out{_reasons(info)})"


def _reasons(info: dict) -> str:
    why = {"empty": "empty", "too_long": f"over {info['max_len']} pieces", "bad_ratio": "lengths 3x apart"}
    counts = [f"{n} {why[k]}" for k, n in info["filtered"].items() if n]
    return f": {', '.join(counts)}" if counts else ""


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
            f"{_training_pairs(info)}, {info['val_pairs']} validation pairs, "
            f"{info['parameters']:,} parameters on {info['device']}"
            + (f" x {info['world_size']} processes ({info['backend']})" if info["world_size"] > 1 else "")
            + (f"; resuming from step {info['resumed_step']}" if info["resumed_step"] else ""),
            markup=False,
        )
        if ":" in info["precision"]:  # a choice with its reason: "fp32: a bf16 GEMM runs at 0.6x ..."
            self.progress.console.print(f"precision: {info['precision']}", markup=False)
        if info.get("guidance"):  # --guided-alignment decided: eflomal's links, or why not
            self.progress.console.print(f"alignment: {info['guidance']}", markup=False)

    def epoch(self, epoch: int, n_batches: int | None, done: int) -> None:
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
        averaged = f"mean of last {row['averaged']}" if row.get("averaged") else None
        speed = "-" if row.get("tokens_per_s") is None else f"{row['tokens_per_s']:,.0f}"
        self.table.add_row(
            str(row["step"]),
            averaged or str(row["epoch"]),
            loss,
            f"{row['val_loss']:.3f}",
            f"{row['val_bleu']:.2f}{mark}",
            f"{row['val_chrf']:.2f}",
            speed,
            f"{row['elapsed_s'] / 60:.1f}",
        )
        self.progress.console.print(
            f"step {row['step']}{f' ({averaged})' if averaged else ''}: val loss {row['val_loss']:.3f}, "
            f"val BLEU {row['val_bleu']:.2f}{' (best)' if row['best'] else ''}",
            markup=False,
        )
