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
from importlib.resources import files

from seq2seq.decoding.attention import KINDS, AttentionMaps

DIGITS = 4  # weights are rounded: 1e-4 is finer than any shade the page can draw
TITLE = "Attention explorer"
PLACES = ("/*STYLE*/", "/*SCRIPT*/", "<!--DATA-->", "<!--TITLE-->")


def maps_json(maps: AttentionMaps, line: int | None = None) -> dict:
    """The maps of one sentence as plain lists: per kind its weights (L, H, rows, cols), rounded,
    and which pieces label its rows and columns."""
    kinds = {}
    for kind, (title, rows, cols) in KINDS.items():
        if kind in maps.weights:
            weights = maps.weights[kind].double().round(decimals=DIGITS)
            kinds[kind] = {"title": title, "rows": rows, "cols": cols, "weights": weights.tolist()}
    return {
        "line": line,
        "source_text": maps.source_text,
        "translation": maps.translation,
        "source": maps.source,
        "target": maps.target,
        "target_inputs": maps.target_inputs,
        "kinds": kinds,
    }


def sentence_json(maps: AttentionMaps, line: int | None = None) -> str:
    """One sentence of an offline page as JSON text, "<" escaped so that no string in it can close
    the script element that holds it. A page of many lines is built from these texts, which take
    far less memory than the maps."""
    return json.dumps(maps_json(maps, line), ensure_ascii=False).replace("<", "\\u003c")


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
            _asset("explorer.js"),
            data,
            _escape(f"{TITLE}: {about}" if about else TITLE),
        ),
        strict=True,
    ):
        html = html.replace(place, value, 1)
    return html


def _asset(name: str) -> str:
    return files("seq2seq.views").joinpath(name).read_text(encoding="utf-8")


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
