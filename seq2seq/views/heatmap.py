"""The terminal view of an attention map: a grid of weights in percent, each cell shaded by its
weight, as rich Text lines for whoever prints them."""

from rich.text import Text

from seq2seq.decoding.attention import AttentionMaps

CELL = 5  # characters per column: a weight in percent, or the start of a source piece


def heatmap_lines(
    maps: AttentionMaps, kind: str, layer: int | None, head: int | None, width: int
) -> list[Text]:
    """One row per output piece, one column per source piece, each cell its weight in percent on
    a shade of that weight; columns that do not fit `width` continue in a block below. The first
    two lines are titles."""
    weights = maps.map(kind, layer, head)  # (rows, cols)
    rows, cols = maps.labels(kind)
    lines = [
        Text(f"{maps.describe(kind, layer, head)} (% per row)", style="bold"),
        Text(f"{maps.source_text}  ->  {maps.translation}"),
    ]
    label = min(max(map(len, rows)), 14)
    per_block = max(1, (width - label - 1) // (CELL + 1))
    for start in range(0, len(cols), per_block):
        block = range(start, min(start + per_block, len(cols)))
        header = Text(" " * (label + 1))
        for j in block:
            header.append(f"{_fit(cols[j], CELL):>{CELL}} ", style="bold")
        lines.append(header)
        for i, row in enumerate(rows):
            line = Text(f"{_fit(row, label):<{label}} ")
            for j in block:
                w = float(weights[i, j])
                percent = round(100 * w)
                line.append(f"{percent if percent else '.':>{CELL - 1}} ", style=_shade(w))
                line.append(" ")
            lines.append(line)
    return lines


def _fit(piece: str, width: int) -> str:
    return piece if len(piece) <= width else piece[: width - 1] + "…"


def _shade(weight: float) -> str:
    """Dark to bright (viridis' ends and middle) with a readable foreground."""
    stops = [(68, 1, 84), (59, 82, 139), (33, 145, 140), (94, 201, 98), (253, 231, 37)]
    x = min(max(weight, 0.0), 1.0) * (len(stops) - 1)
    i = min(int(x), len(stops) - 2)
    r, g, b = (round(a + (x - i) * (c - a)) for a, c in zip(stops[i], stops[i + 1], strict=True))
    return f"{'black' if weight > 0.55 else 'white'} on rgb({r},{g},{b})"
