"""What the search weighed, in the explorer (search.js) in a real browser (headless Debian chromium
driven by Playwright): each output piece's probability and the k alternatives at its position are
what POST /attention returned, an alternative clicked on the served page translates again starting
with its prefix, and the beam search is drawn as a tree with a node per node of the record, its
n-best marked; an offline page lists the alternatives as text that nothing clicks, however hostile,
and draws the tree of ~40 steps without a node over another."""

import math
import shutil
import time

import pytest

from seq2seq.views.explorer import escaped_json, page
from tests.conftest import caption_tokenizer
from tests.serve_helpers import SENTENCES, live_server, make_app, post, write_runs

pytest.importorskip("playwright.sync_api", reason="browser tests need playwright (the test extra)")
CHROMIUM = shutil.which("chromium")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium on PATH: apt-get install -y chromium (.ci/run does, as root)"
)
HOSTILE = "<img src=x onerror=alert(1)>"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    pytest.importorskip("fastapi", reason='the server needs the extra: pip install -e ".[serve]"')
    folder = tmp_path_factory.mktemp("runs")
    return write_runs(folder, caption_tokenizer(folder / "tokenizer.model"))


@pytest.fixture(scope="module", params=["transformer", "rnn"])
def served(request, runs):
    with live_server(make_app(runs[request.param], beam=2)) as url:
        yield url


# --- what the page shows ------------------------------------------------------------------------


def watched(page) -> list[str]:
    """What would show that something ran: dialogs and page errors."""
    seen = []
    page.on("dialog", lambda d: (seen.append(f"dialog {d.message}"), d.dismiss()))
    page.on("pageerror", lambda e: seen.append(f"error {e}"))
    return seen


def assert_alternatives(page, position: dict) -> None:
    """The panel lists the position's alternatives, in order, and its entropy."""
    shown = page.eval_on_selector_all(
        "#alternatives .alternative", "rows => rows.map(r => [r.dataset.piece, Number(r.dataset.p)])"
    )
    assert [piece for piece, _ in shown] == [c["piece"] for c in position["top"]]
    assert all(abs(p - c["p"]) <= 1e-3 for (_, p), c in zip(shown, position["top"], strict=True))
    head = page.locator("#alternatives .alternatives-head").inner_text()
    assert f"entropy {position['entropy']:.2f} nats" in head


def assert_chips(page, sentence: dict) -> None:
    probs = page.eval_on_selector_all("#target-strip .piece", "ps => ps.map(p => Number(p.dataset.prob))")
    assert len(probs) == len(sentence["target"]) == len(sentence["alternatives"])
    assert all(abs(p - a["p"]) <= 1e-3 for p, a in zip(probs, sentence["alternatives"], strict=True))
    assert page.locator("#target-strip .piece .prob").count() == len(probs)
    forced = page.eval_on_selector_all(
        "#target-strip .piece.forced", "ps => ps.map(p => Number(p.dataset.index))"
    )
    assert forced == list(range(sentence["forced"]))


def assert_tree(page, beam: dict) -> None:
    """A node per node of the record, each in its state; the n-best and the edges to them marked."""
    nodes = page.eval_on_selector_all(
        "#beam-tree g.node", "gs => gs.map(g => [Number(g.dataset.id), g.dataset.state])"
    )
    assert sorted(nodes) == sorted([n["id"], n["state"]] for n in beam["nodes"])
    nbest = page.eval_on_selector_all("#beam-tree g.node.nbest", "gs => gs.map(g => Number(g.dataset.id))")
    assert sorted(nbest) == sorted(beam["nbest"])
    best = page.eval_on_selector_all("#beam-tree g.node.best", "gs => gs.map(g => Number(g.dataset.id))")
    assert best == beam["nbest"][:1]
    parent = {n["id"]: n["parent"] for n in beam["nodes"]}
    path = set()
    for node in beam["nbest"]:
        while node is not None:
            path.add(node)
            node = parent[node]
    edges = page.eval_on_selector_all("#beam-tree .edge.nbest", "es => es.map(e => Number(e.dataset.id))")
    assert sorted(edges) == sorted(path - {0})  # the root has no edge
    assert page.locator("#beam-tree .edge").count() == len(beam["nodes"]) - 1
    assert page.locator("#beam-nbest li").count() == len(beam["nbest"])


def wait_for(page, check, timeout: float = 30) -> None:
    """Poll a Python check on the page (the served page's CSP forbids the eval wait_for_function needs)."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "the page never got there"
        page.wait_for_timeout(50)


def ready_with(page, prefix: str, translation: str) -> bool:
    """The answer to the request with this prefix (the form shows it once asked) is drawn."""
    asked = page.input_value("#prefix-input") == prefix
    ready = page.get_attribute("#explorer", "data-state") == "ready"
    return asked and ready and page.locator("#translation").inner_text() == translation


# --- the served page ------------------------------------------------------------------------------


def test_the_served_page_shows_the_alternatives_and_translates_from_one(browser, served):
    text = SENTENCES[1]
    status, sentence = post(f"{served}/attention", {"text": text})
    assert status == 200, sentence
    page = browser.new_page()
    seen = watched(page)
    page.goto(served)
    page.fill("#source-input", text)
    page.click("#translate-button")
    page.wait_for_selector("#explorer[data-state=ready]")
    assert page.locator("#translation").inner_text() == sentence["translation"]
    assert_chips(page, sentence)
    assert page.locator("#beam-panel").is_hidden()  # none asked for
    page.hover('#target-strip .piece[data-index="1"]')
    position = sentence["alternatives"][1]
    assert_alternatives(page, position)
    clickable = [c for c in position["top"] if c["prefix"] is not None]
    buttons = page.locator("#alternatives button.alternative")
    assert buttons.count() == len(clickable) >= 2
    choice = clickable[1]
    redecoded = post(f"{served}/attention", {"text": text, "prefix": choice["prefix"]})[1]
    buttons.nth(1).click()  # the pointer crosses other pieces on its way: the panel stays
    wait_for(page, lambda: ready_with(page, choice["prefix"], redecoded["translation"]))
    assert redecoded["translation"].startswith(choice["prefix"])
    assert redecoded["forced"] >= 1
    assert_chips(page, redecoded)

    page.check("#beam-toggle")  # the beam as a tree, for the sentence the form now holds
    page.click("#translate-button")
    page.wait_for_selector("#beam-tree g.node")
    page.wait_for_selector("#explorer[data-state=ready]")
    traced = post(f"{served}/attention", {"text": text, "prefix": choice["prefix"], "beam_trace": True})[1]
    assert page.locator("#translation").inner_text() == traced["translation"]
    assert_tree(page, traced["beam"])

    page.hover('#target-strip .piece[data-index="0"]')  # an alternative, with the box still on
    first = next(c for c in traced["alternatives"][0]["top"] if c["prefix"] is not None)
    again = post(f"{served}/attention", {"text": text, "prefix": first["prefix"], "beam_trace": True})[1]
    page.locator("#alternatives button.alternative").first.click()
    wait_for(page, lambda: ready_with(page, first["prefix"], again["translation"]))
    assert_tree(page, again["beam"])
    assert seen == []
    page.close()


# --- an offline page, from hand-made sentences ---------------------------------------------------


def spell(pieces: list[str]) -> str:
    return "".join(p for p in pieces if p != "</s>").replace("\u2581", " ").strip()


def sentence(source: list[str], target: list[str], forced: int = 0) -> dict:
    """A sentence as the page gets it: one cross-attention map, uniform, and the alternatives at
    each position (the output piece first; a hostile piece among them)."""
    cross = [[[round(1 / len(source), 4)] * len(source) for _ in target]]  # 1 layer, 1 head
    d = {
        "line": None,
        "source_text": spell(source),
        "translation": spell(target),
        "source": source,
        "target": target,
        "target_inputs": ["<s>", *target[:-1]],
        "kinds": {
            "cross": {"title": "cross-attention", "rows": "target", "cols": "source", "weights": [cross]}
        },
    }
    alternatives = []
    for i, piece in enumerate(target):
        top = [(piece, 0.6), ("\u2581other", 0.2), (HOSTILE, 0.1), ("</s>", 0.05)]
        entropy = -sum(p * math.log(p) for _, p in top)
        choices = [
            {"piece": q, "p": p, "prefix": None if q == "</s>" else spell([*target[:i], q])} for q, p in top
        ]
        alternatives.append({"piece": piece, "p": 0.6, "entropy": entropy, "top": choices})
    return d | {"alternatives": alternatives, "forced": forced}


def beam_record(steps: int, k: int, hostile: bool = False) -> dict:
    """A beam search's record: at each step 2k candidates from the k kept, the best k kept (at the
    last step: finished), the others pruned."""
    nodes = [{"id": 0, "parent": None, "step": 1, "pieces": ["\u2581un"], "score": -0.5, "state": "root"}]
    alive = [nodes[0]]
    for step in range(2, steps + 2):
        ranked = sorted(
            ((p["score"] - 0.1 - 0.3 * c - 0.07 * j, p, c) for j, p in enumerate(alive) for c in range(2)),
            key=lambda x: -x[0],
        )
        alive = []
        for rank, (score, parent, c) in enumerate(ranked):
            piece = HOSTILE if hostile and step == 3 and c == 1 else f"\u2581w{step}{'ab'[c]}"
            state = "pruned" if rank >= k else "finished" if step == steps + 1 else "kept"
            node = {"id": len(nodes), "parent": parent["id"], "step": step, "piece": piece, "score": score}
            node["state"] = state
            if state == "finished":
                node["final"] = score / ((5 + step) / 6)
            nodes.append(node)
            if state == "kept":
                alive.append(node)
    finished = sorted((n for n in nodes if n["state"] == "finished"), key=lambda n: -n["final"])
    return {"beam": k, "nodes": nodes, "nbest": [n["id"] for n in finished[:2]]}


def offline_page(browser, tmp_path, sentences: list[dict], viewport=None):
    html = tmp_path / "search.html"
    html.write_text(page([escaped_json(s) for s in sentences], about="hand-made"), encoding="utf-8")
    context = browser.new_context(offline=True, viewport=viewport or {"width": 1280, "height": 800})
    tab = context.new_page()
    seen = watched(tab)
    tab.goto(html.as_uri())
    tab.wait_for_selector("#explorer[data-state=ready]")
    return context, tab, seen


def test_an_offline_page_lists_the_alternatives_as_text(browser, tmp_path):
    source = ["\u2581a", "\u2581dog", "\u2581runs", "</s>"]
    target = ["\u2581un", "\u2581chien", "\u2581court", "</s>"]
    given = sentence(source, target, forced=1) | {"beam": beam_record(3, 2, hostile=True)}
    old = {key: value for key, value in given.items() if key not in ("alternatives", "forced", "beam")}
    context, tab, seen = offline_page(browser, tmp_path, [given, old])
    assert_chips(tab, given)
    assert tab.locator("#alternatives").is_visible()
    tab.hover('#target-strip .piece[data-index="1"]')
    assert_alternatives(tab, given["alternatives"][1])
    assert tab.locator("#alternatives .alternative.chosen").get_attribute("data-piece") == "\u2581chien"
    assert tab.locator("#alternatives button").count() == 0  # offline: nothing to ask
    assert "seq2seq serve" in tab.locator("#alternatives .note").inner_text()
    assert tab.locator("#alternatives .alt-piece").nth(2).inner_text() == HOSTILE  # as text
    tab.hover("#alternatives")  # the pointer left the piece: the panel stays on it
    assert tab.get_attribute("#alternatives .alternative-list", "data-index") == "1"
    tab.focus('#target-strip .piece[data-index="2"]')  # the keyboard's way there
    assert tab.get_attribute("#alternatives .alternative-list", "data-index") == "2"
    assert "forced" not in tab.locator("#alternatives .alternatives-head").inner_text()
    tab.hover('#target-strip .piece[data-index="0"]')
    assert "forced" in tab.locator("#alternatives .alternatives-head").inner_text()

    assert_tree(tab, given["beam"])
    labels = tab.eval_on_selector_all("#beam-tree g.node text", "ts => ts.map(t => t.textContent)")
    assert HOSTILE[:15] + "…" in labels  # shortened, as text
    pruned = tab.locator('#beam-tree g.node[data-state="pruned"]').first
    assert float(pruned.evaluate("g => getComputedStyle(g).opacity")) < 1
    finished = tab.locator(f'#beam-tree g.node[data-id="{given["beam"]["nbest"][0]}"]')
    assert "final" in finished.locator("title").text_content()
    finished.hover()  # its path back to the root lights up
    assert tab.locator("#beam-tree g.node.trace").count() == 4  # the root, two kept, itself
    assert tab.locator("#explorer img, #explorer script, #explorer iframe").count() == 0

    tab.select_option("#sentence-select", "1")  # a page from before: nothing new drawn
    assert tab.locator("#alternatives").is_hidden() and tab.locator("#beam-panel").is_hidden()
    assert tab.locator("#target-strip .piece .prob").count() == 0
    assert tab.locator("#beam-tree").count() == 0
    tab.hover('#target-strip .piece[data-index="1"]')
    assert tab.locator("#alternatives .alternative").count() == 0
    assert seen == []
    context.close()


def test_a_long_beam_stays_readable(browser, tmp_path):
    given = sentence(["\u2581a", "</s>"], ["\u2581un", "</s>"]) | {"beam": beam_record(40, 5)}
    context, tab, seen = offline_page(browser, tmp_path, [given], viewport={"width": 1000, "height": 700})
    assert_tree(tab, given["beam"])
    boxes = tab.eval_on_selector_all(
        "#beam-tree g.node",
        """gs => gs.map(g => {
            const r = g.querySelector("rect").getBoundingClientRect(), t = g.querySelector("text").getBBox();
            return [r.left, r.top, r.right, r.bottom, t.width, r.width];
        })""",
    )
    assert all(text <= width for *_, text, width in boxes)  # each label fits its box
    boxes.sort()  # by left side: a box can only overlap the ones that start before its right side
    for i, (_, top, right, bottom, *_) in enumerate(boxes):  # no box over another
        for other in boxes[i + 1 :]:
            if other[0] >= right:
                break
            assert other[1] >= bottom or other[3] <= top
    scroll = tab.eval_on_selector("#beam-scroll", "s => [s.scrollWidth, s.clientWidth]")
    assert scroll[0] > scroll[1]  # it scrolls inside its panel, which keeps to the page
    assert tab.locator("#beam-panel").bounding_box()["width"] <= 1000
    assert seen == []
    context.close()


def test_a_constrained_beam_shows_the_constraints_each_node_met(browser, tmp_path):
    beam = beam_record(4, 2)
    for node in beam["nodes"][1:]:
        node["met"] = min(node["step"] // 2, 2)  # the banks fill as the steps go
    given = sentence(["\u2581a", "</s>"], ["\u2581un", "</s>"]) | {"beam": beam}
    context, tab, seen = offline_page(browser, tmp_path, [given])
    assert_tree(tab, beam)
    for node in beam["nodes"][1:]:
        box = tab.locator(f'#beam-tree g.node[data-id="{node["id"]}"]')
        assert box.get_attribute("data-met") == str(node["met"])
        label = box.locator("text").text_content()
        assert label.endswith(f"\u2713{node['met']}") == (node["met"] > 0), label
        assert f"constraints met: {node['met']}" in box.locator("title").text_content()
    assert tab.locator('#beam-tree g.node[data-state="root"]').get_attribute("data-met") is None
    assert seen == []
    context.close()
