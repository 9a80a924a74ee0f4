"""The attention explorer: AttentionMaps as plain JSON, and the page that draws them.

One page (explorer.html + explorer.css + explorer.js, shipped in this folder) serves both uses:
- `seq2seq serve` returns it at `/`; with no maps inside, the page asks `POST /attention`;
- `seq2seq translate --attention-html FILE` writes it with the CSS, the script and every line's
  maps inlined (`sentence_json`; the CLI writes the file): one offline file, no network, that a
  teacher can hand out. Several lines go into that one file with a sentence selector (the script
  and styles are shared, and one file is what gets handed around), rather than a file per line as
  --attention-png writes.
"""

import json
from dataclasses import asdict
from importlib.resources import files

from seq2seq.decoding.attention import KINDS, AttentionMaps

DIGITS = 4  # weights are rounded: 1e-4 is finer than any shade the page can draw
TITLE = "Attention explorer"
PLACES = ("/*STYLE*/", "/*SCRIPT*/", "<!--DATA-->", "<!--TITLE-->")


def maps_json(maps: AttentionMaps, line: int | None = None, lists: bool = True) -> dict:
    """The maps of one sentence as plain lists: per kind its weights (L, H, rows, cols), rounded,
    and which pieces label its rows and columns; with `lists` False the weights stay tensors of
    those values (for a writer that turns them to text row by row)."""
    kinds = {}
    for kind, (title, rows, cols) in KINDS.items():
        if kind in maps.weights:
            weights = maps.weights[kind].double().round(decimals=DIGITS)
            weights = weights.tolist() if lists else weights
            kinds[kind] = {"title": title, "rows": rows, "cols": cols, "weights": weights}
    out = {
        "line": line,
        "source_text": maps.source_text,
        "translation": maps.translation,
        "source": maps.source,
        "target": maps.target,
        "target_inputs": maps.target_inputs,
        "kinds": kinds,
        "forced": maps.forced,
    }
    if maps.alternatives is not None:
        out["alternatives"] = [rounded(asdict(position)) for position in maps.alternatives]
    if maps.beam is not None:
        out["beam"] = maps.beam
    return out


def rounded(position: dict) -> dict:
    """An alternatives entry with its probabilities and entropy to 6 decimals: a tenth of a
    percent of a percent, finer than the page shows, and a page a third smaller."""
    position["p"], position["entropy"] = round(position["p"], 6), round(position["entropy"], 6)
    for choice in position["top"]:
        choice["p"] = round(choice["p"], 6)
    return position


def sentence_json(maps: AttentionMaps, line: int | None = None) -> str:
    """One sentence of an offline page as JSON text, "<" escaped so that no string in it can close
    the script element that holds it. A page of many lines is built from these texts, which take
    far less memory than the maps."""
    return escaped_json(maps_json(maps, line))


def escaped_json(sentence: dict) -> str:
    """A sentence dict (`maps_json`, and what else a page draws over it) as an offline page's JSON."""
    return json.dumps(sentence, ensure_ascii=False).replace("<", "\\u003c")


def page(sentences: list[str] | None = None, about: str = "") -> str:
    """The explorer page, self-contained: its CSS and script inlined, and, for a file, the
    sentences (`sentence_json` texts) and a line `about` them. Without sentences it is the served
    page, which asks the server."""
    html = _asset("explorer.html")
    data = ""
    if sentences is not None:
        about_json = json.dumps(about, ensure_ascii=False).replace("<", "\\u003c")
        text = f'{{"about": {about_json}, "sentences": [{", ".join(sentences)}]}}'
        data = f'<script type="application/json" id="maps-data">{text}</script>'
    for place, value in zip(
        PLACES,
        (
            _asset("explorer.css"),
            # the hooks before the drawing
            _asset("alignment.js") + _asset("search.js") + _asset("trust.js") + _asset("explorer.js"),
            data,
            _escape(f"{TITLE}: {about}" if about else TITLE),
        ),
        strict=True,
    ):
        html = html.replace(place, value, 1)
    return html


def notebook(html: str, height: int = 640) -> str:
    """A page for a notebook cell (`_repr_html_`): inside an iframe's srcdoc, so its script runs
    and its ids and styles stay its own, offline like the page itself."""
    quoted = html.replace("&", "&amp;").replace('"', "&quot;")
    return (
        f'<iframe srcdoc="{quoted}" style="width: 100%; height: {height}px; border: 0" '
        'sandbox="allow-scripts" title="attention explorer"></iframe>'
    )


def _asset(name: str) -> str:
    return files("seq2seq.views").joinpath(name).read_text(encoding="utf-8")


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def maps_html(maps) -> str:
    """In a notebook: the offline explorer of an AttentionMaps, inline (`seq2seq/__init__.py`
    registers it as the maps' HTML with IPython)."""
    return notebook(page([sentence_json(maps)], maps.source_text))
