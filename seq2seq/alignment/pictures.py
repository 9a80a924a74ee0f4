"""Alignments seen: the links (and the gold) drawn over the cross-attention map, as a PNG or in the
offline explorer, with the attribution map beside the attention. Links join words and the maps
pieces, so a link is drawn on every cell of its two words' pieces."""

import numpy as np

from seq2seq.alignment.api import Alignment
from seq2seq.alignment.pharaoh import Link, Links
from seq2seq.views import explorer, plots


def cells(links: set[Link], a: Alignment) -> list[tuple[int, int]]:
    """(row, col) map cells of the pieces of each link's words, in order."""
    sw, tw = a.words_of_pieces
    return sorted(
        (int(r), int(c)) for i, j in links for r in np.flatnonzero(tw == j) for c in np.flatnonzero(sw == i)
    )


def png(a: Alignment, layer: int | None, head: int | None, gold: Links | None = None, attribution=None):
    """`plots.alignment_png` of one pair; `attribution` (T + 1, S + 1) drawn beside when given."""
    sure = cells(gold.sure, a) if gold else []
    possible = cells(gold.possible - gold.sure, a) if gold else []
    return plots.alignment_png(a.maps, layer, head, cells(a.links, a), sure, possible, attribution)


def sentence(a: Alignment, line: int | None = None, gold: Links | None = None, attribution=None) -> str:
    """One pair for an explorer page: its maps, each piece's word, the links, the gold and the
    attribution map (positive part, each row over its largest), as `explorer.escaped_json`."""
    data = explorer.maps_json(a.maps, line)
    sw, tw = a.words_of_pieces
    data["alignment"] = {
        "method": a.method,
        "source_words": [*sw.tolist(), -1],  # EOS: no word
        "target_words": [*tw.tolist(), -1],
        "links": sorted(a.links),
        "sure": sorted(gold.sure) if gold else [],
        "possible": sorted(gold.possible - gold.sure) if gold else [],
    }
    if attribution is not None:
        positive = np.clip(np.asarray(attribution, dtype=np.float64), 0.0, None)
        top = positive.max(axis=1, keepdims=True)
        shares = np.round(positive / np.where(top > 0, top, 1.0), explorer.DIGITS)
        data["kinds"]["attribution"] = {
            "title": "attribution",
            "rows": "target",
            "cols": "source",
            "weights": [[shares.tolist()]],  # one layer, one head
        }
    return explorer.escaped_json(data)


def page(sentences: list[str], about: str = "") -> str:
    return explorer.page(sentences, about)


def notebook_html(alignment: Alignment) -> str:
    """In a notebook: the offline explorer of this pair with its links, inline (`seq2seq/__init__.py`
    registers it as an Alignment's HTML with IPython)."""
    if alignment.maps is None:
        return "<p>(a blank line: nothing to align)</p>"
    described = f"{alignment.method}: {alignment.pharaoh() or 'no links'}"
    return explorer.notebook(page([sentence(alignment)], described))
