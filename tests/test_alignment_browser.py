"""Alignments seen in a real browser: `seq2seq align --attention-html` draws the links found on the
cross-attention cells of their words' pieces, marks the gold, shows the attribution a toggle away,
offline; in a notebook, `_repr_html_` of an AttentionMaps or an Alignment is the same explorer in
an iframe, which draws with no network. Both architectures."""

import json
import re
import shutil
from types import SimpleNamespace

import pytest

import seq2seq
from seq2seq.alignment.api import align
from seq2seq.decoding.attention import attention
from seq2seq.runs.load import load_run
from tests.cli_helpers import run_cli
from tests.conftest import EN, FR, caption_tokenizer
from tests.serve_helpers import write_runs

pytest.importorskip("playwright.sync_api", reason="browser tests need playwright (the test extra)")
CHROMIUM = shutil.which("chromium")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium on PATH: apt-get install -y chromium")
ARCHS = ["transformer", "rnn"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("runs")
    return write_runs(folder, caption_tokenizer(folder / "tokenizer.model"))


@pytest.fixture(scope="module")
def offline(browser):
    context = browser.new_context(offline=True)
    asked = []
    context.route(re.compile(r"^https?://"), lambda route: (asked.append(route.request.url), route.abort()))
    yield context, asked
    context.close()


def piece_cells(alignment: dict, links) -> set[tuple[int, int]]:
    sw, tw = alignment["source_words"], alignment["target_words"]
    return {(r, c) for i, j in links for r, w in enumerate(tw) if w == j for c, v in enumerate(sw) if v == i}


def marked(page, name: str) -> set[tuple[int, int]]:
    found = page.eval_on_selector_all(
        f"#panel-cross td.cell.{name}",
        "cells => cells.map(c => [Number(c.dataset.row), Number(c.dataset.col)])",
    )
    return {tuple(x) for x in found}


@pytest.mark.parametrize("arch", ARCHS)
def test_the_page_draws_the_links_and_the_gold_and_toggles_attribution(
    offline, runs, tmp_path, capsys, monkeypatch, arch
):
    (tmp_path / "s.txt").write_text("\n".join(EN[:2]) + "\n")
    (tmp_path / "t.txt").write_text("\n".join(FR[:2]) + "\n")
    (tmp_path / "g.txt").write_text("0-0 1-1 2?2\n0-0\n")
    html = tmp_path / "a.html"
    result = run_cli(
        ["align", "--run", runs[arch], "--source", tmp_path / "s.txt", "--target", tmp_path / "t.txt",
         "--gold", tmp_path / "g.txt", "--attention-html", html, "--steps", "4"],
        capsys, monkeypatch,
    )  # fmt: skip
    assert result.code == 0, result.err
    context, asked = offline
    page = context.new_page()
    page.goto(html.as_uri())
    page.wait_for_selector("#explorer[data-state=ready]")
    data = json.loads(page.locator("#maps-data").text_content())["sentences"][0]
    a = data["alignment"]
    assert marked(page, "link") == piece_cells(a, a["links"]) and a["links"]
    assert marked(page, "gold-sure") == piece_cells(a, [[0, 0], [1, 1]])
    assert marked(page, "gold-possible") == piece_cells(a, [[2, 2]])
    assert page.locator("#panel-attribution").is_hidden()
    page.locator("#attribution-toggle").check()
    assert page.locator("#panel-attribution").is_visible()
    rows, cols = len(data["target"]), len(data["source"])
    assert page.locator("#panel-attribution td.cell").count() == rows * cols
    assert page.locator("#panel-attribution td.cell.link").count() == len(marked(page, "link"))
    assert not asked
    page.close()


@pytest.mark.parametrize("arch", ARCHS)
def test_in_a_notebook_maps_and_alignments_show_the_explorer_inline(offline, runs, arch):
    model, tokenizer = load_run(runs[arch])
    shown = [
        notebook_html(attention(model, tokenizer, EN[0], FR[0])),
        notebook_html(align(model, tokenizer, [EN[0]], [FR[0]])[0]),
    ]
    context, asked = offline
    for html, links in zip(shown, (False, True), strict=True):
        assert html.startswith("<iframe srcdoc=") and "http" not in html.split("srcdoc=")[1][:200]
        page = context.new_page()
        page.set_content(html)
        frame = page.frame_locator("iframe")
        frame.locator("#explorer[data-state=ready]").wait_for()
        assert frame.locator("#panel-cross td.cell").count() > 0
        assert (frame.locator("#panel-cross td.cell.link").count() > 0) == links
        page.close()
    assert not asked


class HtmlFormatter:
    """IPython's HTML formatter as `register_notebook_views` uses it: printers by class name."""

    def __init__(self):
        self.printers = {}

    def for_type_by_name(self, module, name, printer):
        self.printers[module, name] = printer


def notebook_html(obj) -> str:
    """What a notebook shows for `obj`: the printer seq2seq registers with IPython for its class."""
    formatter = HtmlFormatter()
    shell = SimpleNamespace(display_formatter=SimpleNamespace(formatters={"text/html": formatter}))
    seq2seq.register_notebook_views(shell)
    return formatter.printers[type(obj).__module__, type(obj).__name__](obj)
