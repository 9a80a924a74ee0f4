"""The attention explorer in a real browser (headless Debian chromium driven by Playwright): the
served page and a `translate --attention-html` file opened from disk with the network cut off draw
the three panels with a cell per (row piece, column piece), switch layers and heads, and light up
the source pieces an output piece read most; and text a user or a client sent (markup, event
handlers, `javascript:` URLs, a closing `</script>`, right-to-left or zero-width text) shows as
text and runs nothing."""

import json
import re
import shutil

import pytest

from tests.cli_helpers import run_cli
from tests.conftest import caption_tokenizer
from tests.serve_helpers import SENTENCES, live_server, make_app, post, write_runs

pytest.importorskip("playwright.sync_api", reason="browser tests need playwright (the test extra)")
pytest.importorskip("fastapi", reason='the server needs the extra: pip install -e ".[serve]"')
CHROMIUM = shutil.which("chromium")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium on PATH: apt-get install -y chromium (.ci/run does, as root)"
)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("runs")
    return write_runs(folder, caption_tokenizer(folder / "tokenizer.model"))


@pytest.fixture(scope="module")
def served(runs):
    with live_server(make_app(runs["transformer"], beam=2)) as url:
        yield url


def mean(heads: list) -> list:
    return [
        [sum(h[i][j] for h in heads) / len(heads) for j in range(len(heads[0][0]))]
        for i in range(len(heads[0]))
    ]


def close(a: list[list[float]], b: list[list[float]], tolerance: float) -> bool:
    same_shape = [len(x) for x in a] == [len(y) for y in b]
    return same_shape and all(
        abs(u - v) <= tolerance for x, y in zip(a, b, strict=True) for u, v in zip(x, y, strict=True)
    )


def cells(page, kind: str) -> list[list[float]]:
    """The weights a panel draws, row by row, read from its cells."""
    table = page.locator(f"#panel-{kind} table.map")
    rows, cols = int(table.get_attribute("data-rows")), int(table.get_attribute("data-cols"))
    flat = page.eval_on_selector_all(
        f"#panel-{kind} td.cell", "cells => cells.map(c => Number(c.dataset.weight))"
    )
    assert len(flat) == rows * cols
    return [flat[i * cols : (i + 1) * cols] for i in range(rows)]


def check_page(page, sentence: dict) -> None:
    """The checks both pages pass, against the maps the page was given."""
    assert page.locator("#translation").inner_text() == sentence["translation"]
    for kind in ("encoder", "decoder", "cross"):
        if kind not in sentence["kinds"]:
            assert "no " + kind in page.locator(f"#panel-{kind}").inner_text().lower()
            assert page.locator(f"#panel-{kind} td.cell").count() == 0
            continue
        k = sentence["kinds"][kind]
        rows, cols = sentence[k["rows"]], sentence[k["cols"]]
        shown = cells(page, kind)
        assert (len(shown), len(shown[0])) == (len(rows), len(cols))
        expected = mean(k["weights"][-1])  # the default: last layer, mean of heads
        assert close(shown, expected, 1.1e-4)  # the page's mean of rounded weights, rounded
        if kind == "decoder":  # the future: marked, and empty
            future = page.eval_on_selector_all(
                "#panel-decoder td.future",
                "cs => cs.map(c => [Number(c.dataset.row), Number(c.dataset.col)])",
            )
            assert future == [[i, j] for i in range(len(rows)) for j in range(len(cols)) if j > i]
            assert all(shown[i][j] == 0 for i, j in future)
    cross = sentence["kinds"]["cross"]
    layers, heads = len(cross["weights"]), len(cross["weights"][0])
    page.select_option("#panel-cross .layer-select", str(0))
    page.select_option("#panel-cross .head-select", str(heads - 1))
    assert page.locator("#panel-cross table.map").get_attribute("data-layer") == "1"
    assert cells(page, "cross") == cross["weights"][0][heads - 1]
    if layers > 1:
        page.select_option("#panel-cross .layer-select", str(layers - 1))
        assert cells(page, "cross") == cross["weights"][-1][heads - 1]
    weights = cells(page, "cross")
    for i in sorted({0, 1, 2, len(weights) - 1} & set(range(len(weights)))):  # an output piece lights up
        page.hover(f'#target-strip .piece[data-index="{i}"]')
        # the source pieces it read most
        lit = page.eval_on_selector_all(
            "#source-strip .piece.lit", "ps => ps.map(p => Number(p.dataset.index))"
        )
        shown = page.eval_on_selector_all(
            "#source-strip .piece", "ps => ps.map(p => Number(p.dataset.weight))"
        )
        row = weights[i]
        assert shown == row
        assert lit == [j for j, w in enumerate(row) if w >= 0.5 * max(row)]
        assert row.index(max(row)) in lit
        assert page.locator(f'#panel-cross tr[data-row="{i}"] td.focus').count() == len(row)
    page.hover('#source-strip .piece[data-index="0"]')  # and the reverse: a source piece, its column
    shown = page.eval_on_selector_all("#target-strip .piece", "ps => ps.map(p => Number(p.dataset.weight))")
    assert shown == [row[0] for row in weights]


def test_the_served_page_translates_and_explores(browser, served):
    page = browser.new_page()
    page.goto(served)
    page.fill("#source-input", SENTENCES[3])
    page.click("#translate-button")
    page.wait_for_selector("#explorer[data-state=ready]")
    status, sentence = post(f"{served}/attention", {"text": SENTENCES[3]})
    assert status == 200
    check_page(page, sentence)
    assert "transformer en→fr" in page.locator("#about").inner_text()
    page.fill("#forced-input", "un chien court")  # a given translation: its maps
    page.click("#translate-button")
    page.locator("#translation").filter(
        has_text="un chien court"
    ).wait_for()  # no eval: the page's CSP forbids it
    forced = post(f"{served}/attention", {"text": SENTENCES[3], "translation": "un chien court"})[1]
    assert len(cells(page, "cross")) == len(forced["target"])
    pieces = page.eval_on_selector_all("#target-strip .piece", "ps => ps.map(p => p.dataset.piece)")
    assert pieces == forced["target"]
    page.fill("#source-input", " ")  # a bad request: its one-line error, shown
    page.evaluate("document.getElementById('source-input').required = false")
    page.click("#translate-button")
    page.wait_for_selector("#explorer[data-state=error]")
    assert page.locator("#status").inner_text() == "text is empty"
    page.close()


@pytest.mark.parametrize("arch", ["transformer", "rnn"])
def test_the_html_file_works_offline(browser, runs, tmp_path, capsys, monkeypatch, arch):
    html = tmp_path / "explorer.html"
    result = run_cli(
        ["translate", "--run", runs[arch], "--beam", "2", "--attention-html", html, *SENTENCES[:2]],
        capsys,
        monkeypatch,
    )
    assert result.code == 0, result.err
    data = json.loads(re.search(r'id="maps-data">(.*?)</script>', html.read_text()).group(1))
    assert [s["translation"] for s in data["sentences"]] == result.out.splitlines()
    context = browser.new_context(offline=True)
    asked = []
    context.route(re.compile(r"^https?://"), lambda route: (asked.append(route.request.url), route.abort()))
    page = context.new_page()
    page.goto(html.as_uri())
    page.wait_for_selector("#explorer[data-state=ready]")
    page.select_option("#sentence-select", "1")
    check_page(page, data["sentences"][1])
    assert asked == []  # nothing outside the file was even asked for
    context.close()


def test_a_long_sentence_scrolls_inside_its_panel(browser, runs, tmp_path, capsys, monkeypatch):
    html = tmp_path / "long.html"
    long = " ".join(SENTENCES * 5)
    args = ["translate", "--run", runs["transformer"], "--greedy", "--attention-html", html, long]
    assert run_cli(args, capsys, monkeypatch).code == 0
    page = browser.new_page(viewport={"width": 1000, "height": 700})
    page.goto(html.as_uri())
    page.wait_for_selector("#explorer[data-state=ready]")
    boxes = [page.locator(f"#panel-{k}").bounding_box() for k in ("encoder", "decoder", "cross")]
    for a in boxes:  # the panels never overlap
        for b in boxes:
            if a is not b:
                apart = a["x"] + a["width"] <= b["x"] or b["x"] + b["width"] <= a["x"]
                assert apart or a["y"] + a["height"] <= b["y"] or b["y"] + b["height"] <= a["y"]
    for kind in ("encoder", "decoder", "cross"):  # each scrolls within the page's width
        size = page.eval_on_selector(
            f"#panel-{kind} .scroll", "s => [s.scrollWidth, s.clientWidth, s.scrollHeight, s.clientHeight]"
        )
        assert size[0] > size[1] or size[2] > size[3]
        assert page.locator(f"#panel-{kind}").bounding_box()["width"] <= 1000
    page.close()


# Hostile text: sentences, translations and pieces a user or a client sent are rendered as text,
# in the served page and in the offline file alike.
PAYLOADS = [
    "a dog <script>window.pwned = 1</script>",
    'a cat <img src=x onerror="window.pwned = 2">',
    "javascript:window.pwned = 3",
    "a man </script><script>window.pwned = 4</script>",
    '"><svg onload="window.pwned = 5"> two men',
    "\u202eevil\u202c a girl \u2067rtl\u2069",
    "zero\u200bwidth a dog",
]


def watched(page) -> list[str]:
    """What would show that something ran: dialogs, page errors, requests to other origins."""
    seen = []
    page.on("dialog", lambda d: (seen.append(f"dialog {d.message}"), d.dismiss()))
    page.on("pageerror", lambda e: seen.append(f"error {e}"))
    return seen


def assert_nothing_ran(page, seen: list[str]) -> None:
    assert page.evaluate("() => window.pwned") is None
    assert page.locator("#explorer script, #explorer img, #explorer svg, #explorer iframe").count() == 0
    assert seen == []


@pytest.mark.parametrize("payload", PAYLOADS)
def test_the_served_page_shows_hostile_text_as_text(browser, served, payload):
    page = browser.new_page()
    seen = watched(page)
    page.goto(served)
    page.fill("#source-input", payload)
    page.fill("#forced-input", payload)  # a given translation: the output strip shows its pieces
    page.click("#translate-button")
    page.wait_for_selector("#explorer[data-state=ready]")
    assert page.locator("#translation").inner_text() == payload.strip()
    assert_nothing_ran(page, seen)
    page.close()


def test_the_offline_file_shows_hostile_text_as_text(browser, runs, tmp_path, capsys, monkeypatch):
    html = tmp_path / "hostile.html"
    args = ["translate", "--run", runs["rnn"], "--greedy", "--attention-html", html, *PAYLOADS]
    assert run_cli(args, capsys, monkeypatch).code == 0
    assert not re.search(r"<script>window|onerror=\"window|<svg", html.read_text(encoding="utf-8"))
    context = browser.new_context(offline=True)
    page = context.new_page()
    seen = watched(page)
    page.goto(html.as_uri())
    page.wait_for_selector("#explorer[data-state=ready]")
    options = page.eval_on_selector_all("#sentence-select option", "os => os.map(o => o.textContent)")
    for number, payload in enumerate(PAYLOADS):
        assert payload in options[number]
        page.select_option("#sentence-select", str(number))
        assert_nothing_ran(page, seen)
    context.close()
