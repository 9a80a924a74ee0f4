"""The page is safe with hostile text: sentences, translations and pieces a user or a client sent
are rendered as text, in the served page and in the offline file alike. Markup, event handlers,
`javascript:` URLs and a closing `</script>` run nothing, and right-to-left or zero-width text
shows as the characters it is."""

import re
import shutil

import pytest

from tests.cli_helpers import run_cli
from tests.conftest import caption_tokenizer
from tests.serve_helpers import live_server, make_app, write_runs

sync_api = pytest.importorskip("playwright.sync_api", reason="browser tests need playwright (the test extra)")
pytest.importorskip("fastapi", reason='the server needs the extra: pip install -e ".[serve]"')
CHROMIUM = shutil.which("chromium")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium on PATH: apt-get install -y chromium")

PAYLOADS = [
    "a dog <script>window.pwned = 1</script>",
    'a cat <img src=x onerror="window.pwned = 2">',
    "javascript:window.pwned = 3",
    "a man </script><script>window.pwned = 4</script>",
    '"><svg onload="window.pwned = 5"> two men',
    "\u202eevil\u202c a girl \u2067rtl\u2069",
    "zero\u200bwidth a dog",
]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile")
    return write_runs(folder, caption_tokenizer(folder / "tokenizer.model"))


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM)
        yield browser
        browser.close()


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
def test_the_served_page_shows_hostile_text_as_text(browser, runs, payload):
    with live_server(make_app(runs["transformer"], beam=2)) as url:
        page = browser.new_page()
        seen = watched(page)
        page.goto(url)
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
