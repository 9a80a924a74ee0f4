"""Pictures: attention maps side by side, a run's learning curves, and runs compared by the minute.
The only module that imports matplotlib (an optional extra), and it does so when a picture is asked
for."""

import importlib.util
import io
from pathlib import Path

from seq2seq.atomic import write_atomic
from seq2seq.decoding.attention import KINDS, AttentionMaps
from seq2seq.errors import Seq2SeqError

INSTALL_HINT = 'pip install -e ".[plot]"'
AXES = {  # what a map's rows (queries) and columns (keys) are
    "encoder": ("source piece", "attends to source piece"),
    "decoder": ("position producing", "attends to decoder input"),
    "cross": ("position producing", "attends to source piece"),
}


def available() -> bool:
    return importlib.util.find_spec("matplotlib") is not None


def require() -> None:
    """Fail before any work is done, not after a long translation."""
    if not available():
        raise Seq2SeqError(f"pictures need matplotlib; install it with `{INSTALL_HINT}`")


def attention_png(maps: AttentionMaps, layer: int | None = None, head: int | None = None) -> bytes:
    """Every attention kind of `maps` side by side, labelled with the pieces, as a PNG file's bytes
    (the caller writes them); positions a query cannot see (exactly zero weight, e.g. the
    decoder's future) are left blank."""
    np, Figure = _matplotlib()
    kinds = [k for k in KINDS if k in maps.weights]
    widths = [len(maps.labels(k)[1]) for k in kinds]
    height = max(len(maps.labels(k)[0]) for k in kinds)
    figure = Figure(
        figsize=(2.5 + 0.32 * (sum(widths) + 3 * len(kinds)), 2.4 + 0.32 * height), layout="constrained"
    )
    axes = figure.subplots(1, len(kinds), width_ratios=widths, squeeze=False)[0]
    for ax, kind in zip(axes, kinds, strict=True):
        weights = maps.map(kind, layer, head).numpy()
        rows, cols = maps.labels(kind)
        image = ax.imshow(np.ma.masked_equal(weights, 0.0), cmap=_colormap(), vmin=0.0, vmax=1.0)
        ax.set_xticks(range(len(cols)), cols, rotation=90, fontsize=8)
        ax.set_yticks(range(len(rows)), rows, fontsize=8)
        ax.set_title(maps.describe(kind, layer, head).replace(", ", "\n", 1), fontsize=9)
        ax.set_xlabel(AXES[kind][1], fontsize=8)
        ax.set_ylabel(AXES[kind][0], fontsize=8)
    figure.colorbar(image, ax=list(axes), shrink=0.8, label="attention weight")
    figure.suptitle(f"{maps.source_text}\n→ {maps.translation}", fontsize=10)
    return _png(figure)


Cells = list[tuple[int, int]]  # (row, col) of a map: (output piece, source piece)


def alignment_png(
    maps: AttentionMaps,
    layer: int | None,
    head: int | None,
    links: Cells,
    sure: Cells = (),
    possible: Cells = (),
    attribution=None,
) -> bytes:
    """The cross-attention map with word links drawn over it: the links found as red squares, gold
    Sure links as black dots and only-Possible ones as hollow circles (cells of the pieces of linked
    words); beside it, when given, an attribution map (T + 1, S + 1) of the same pieces, each row
    scaled to its largest value."""
    np, Figure = _matplotlib()
    rows, cols = maps.labels("cross")
    panels = [("cross", maps.map("cross", layer, head).numpy(), maps.describe("cross", layer, head))]
    if attribution is not None:
        panels.append(("attribution", np.asarray(attribution), "attribution (each row / its largest)"))
    figure = Figure(
        figsize=(2.5 + 0.32 * (len(panels) * (len(cols) + 3)), 2.6 + 0.32 * len(rows)), layout="constrained"
    )
    axes = figure.subplots(1, len(panels), squeeze=False)[0]
    for ax, (kind, weights, title) in zip(axes, panels, strict=True):
        if kind == "attribution":
            top = np.abs(weights).max(axis=1, keepdims=True)
            weights = np.clip(weights, 0, None) / np.where(top > 0, top, 1.0)
        ax.imshow(weights, cmap=_colormap(), vmin=0.0, vmax=1.0)
        for cells, style in (
            (links, dict(marker="s", s=120, facecolors="none", edgecolors="#d62728", linewidths=1.5)),
            (sure, dict(marker="o", s=14, c="black")),
            (possible, dict(marker="o", s=26, facecolors="none", edgecolors="black", linewidths=0.8)),
        ):
            if len(cells):
                r, c = zip(*cells, strict=True)
                ax.scatter(c, r, **style)
        ax.set_xticks(range(len(cols)), cols, rotation=90, fontsize=8)
        ax.set_yticks(range(len(rows)), rows, fontsize=8)
        ax.set_title(title.replace(", ", "\n", 1), fontsize=9)
    about = (
        "red squares: links found; dots: gold Sure; circles: gold Possible"
        if sure or possible
        else "red squares: links found"
    )
    figure.suptitle(f"{maps.source_text}\n→ {maps.translation}\n{about}", fontsize=9)
    return _png(figure)


def learning_curves(rows: list[dict], path: Path) -> None:
    """Train and validation loss, and validation BLEU, against the step; the best checkpoint (the
    last validation that improved BLEU) marked."""
    _, Figure = _matplotlib()
    averaged = [r for r in rows if r.get("averaged")]
    rows = [r for r in rows if not r.get("averaged")]
    steps = [r["step"] for r in rows]
    figure = Figure(figsize=(9, 3.6), layout="constrained")
    loss, bleu = figure.subplots(1, 2)
    trained = [r for r in rows if r.get("train_loss") is not None]
    loss.plot(
        [r["step"] for r in trained],
        [r["train_loss"] for r in trained],
        "o-",
        label="train (label-smoothed, mean since last validation)",
    )
    loss.plot(steps, [r["val_loss"] for r in rows], "o-", label="validation")
    loss.set(xlabel="step", ylabel="loss per target piece", title="loss")
    loss.legend()
    bleu.plot(steps, [r["val_bleu"] for r in rows], "o-", color="C2")
    if averaged:
        a = averaged[-1]
        bleu.plot([a["step"]], [a["val_bleu"]], "D", color="C1", label=f"mean of last {a['averaged']}")
    best = [r for r in rows + averaged if r.get("best")]
    if best:
        b = best[-1]
        bleu.plot(
            [b["step"]], [b["val_bleu"]], "*", color="C3", markersize=14, label="best (model.safetensors)"
        )
    if best or averaged:
        bleu.legend(loc="lower right")
    bleu.set(xlabel="step", ylabel="BLEU", title="validation BLEU (greedy)")
    for ax in (loss, bleu):
        ax.grid(alpha=0.3)
    _save(figure, path)


def minutes_to_bleu(rows: list[dict], bleu: float) -> float | None:
    """Training minutes at the first validation that reached `bleu` (None: none did): the
    quality-per-minute figure, read from metrics.jsonl rather than trusted to memory."""
    reached = [r for r in rows if not r.get("averaged") and r["val_bleu"] >= bleu]
    return reached[0]["elapsed_s"] / 60 if reached else None


def bleu_by_minutes(runs: dict[str, list[dict]], path: Path, bleu: float = 50.0) -> None:
    """Validation BLEU against training minutes, one line per run (named by its label), with the
    minutes each took to reach `bleu` in its label: runs with different step costs compared on the
    axis a user pays in."""
    _, Figure = _matplotlib()
    figure = Figure(figsize=(7, 4.2), layout="constrained")
    ax = figure.subplots()
    for label, rows in runs.items():
        reached = minutes_to_bleu(rows, bleu)
        rows = [r for r in rows if not r.get("averaged")]  # the averaged weights have no time of their own
        when = f"{reached:.1f} min to {bleu:g}" if reached is not None else f"never {bleu:g}"
        ax.plot(
            [r["elapsed_s"] / 60 for r in rows],
            [r["val_bleu"] for r in rows],
            ".-",
            label=f"{label} ({when})",
        )
    ax.axhline(bleu, color="grey", linestyle="--", linewidth=1)
    ax.set(xlabel="training minutes", ylabel="BLEU", title="validation BLEU (greedy) against training time")
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    _save(figure, path)


def _colormap():
    import matplotlib

    return matplotlib.colormaps["viridis"].with_extremes(bad="white")  # masked: cannot be seen


def _png(figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    return buffer.getvalue()


def _save(figure, path: Path) -> None:
    """Render in memory, then write atomically: a failed picture leaves no half-written file."""
    try:
        write_atomic(Path(path), _png(figure))
    except OSError as e:
        raise Seq2SeqError(f"cannot write {path}: {e.strerror}") from None


def _matplotlib():
    """numpy and matplotlib's Figure (no pyplot: no global state, no display needed)."""
    require()
    import numpy as np
    from matplotlib.figure import Figure

    return np, Figure
