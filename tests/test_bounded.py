"""Work bounded before it starts: every request field that costs work is counted and limited before
any loop reads it (10x a limit is refused at once, 413 or 422), the duplicate checks and the
glossary's matching are linear, a document is parsed in linear time off the event loop, and a
request at a limit leaves `/health` answering another client within 200 ms (p95, loopback)."""

import statistics
import threading
import time
import urllib.request

import pytest

from seq2seq.documents.formats import parse
from seq2seq.request.request import MAX_AVOID, MAX_INCLUDE
from seq2seq.serve.limits import MAX_CHARS, MAX_LINES
from tests.serve_helpers import live_server, make_app, post

RUN_SEED = 8  # the `run` fixture's weights (conftest.py)
TERM = "chien"


def terms(count: int) -> list[str]:
    """`count` distinct terms the caption tokenizer spells."""
    return [f"{TERM} {'a' * (1 + n % 7)}{n}" for n in range(count)]


TEN_TIMES = [
    ({"constraints": terms(10 * MAX_INCLUDE)}, 422, "constraints: "),
    ({"avoid": terms(10 * MAX_AVOID)}, 422, "avoid: "),
    ({"text": ["a dog"] * 10 * MAX_LINES}, 413, "lines is above"),
    ({"text": "a" * 10 * MAX_CHARS}, 413, "characters, above"),
    ({"text": " " * 10 * MAX_CHARS * MAX_LINES, "format": "text"}, 413, "above this server"),
    ({"text": ["a dog", "a cat"], "prefix": ["un"] * 10 * MAX_LINES}, 422, "prefixes"),
]


@pytest.fixture(scope="module")
def url(run):
    with live_server(make_app(run, beam=2)) as address:
        yield address


@pytest.mark.parametrize("body, status, words", TEN_TIMES)
def test_ten_times_a_limit_is_refused_at_once(url, body, status, words):
    tick = time.monotonic()
    got, answer = post(f"{url}/translate", {"text": "a dog", "max_len": 6, **body})
    assert got == status and words in answer["error"], answer
    assert time.monotonic() - tick < 5  # counted before it is read, not after


def health_p95(url: str, probes: int = 40) -> float:
    seconds = []
    for _ in range(probes):
        tick = time.monotonic()
        with urllib.request.urlopen(f"{url}/health", timeout=10) as response:
            response.read()
        seconds.append(time.monotonic() - tick)
        time.sleep(0.02)
    return statistics.quantiles(seconds, n=20)[-1]


@pytest.mark.parametrize(
    "body",
    [
        {"text": " " * MAX_CHARS * MAX_LINES, "format": "text"},  # a document of spaces at the limit
        {"text": ("a dog runs. " * 80 + "\n\n") * 20, "format": "text"},  # 1,600 sentences
        {"text": ["a dog runs"] * 4, "avoid": terms(MAX_AVOID), "constraints": ["un chat"]},
        {"text": ["a dog runs"] * MAX_LINES, "prefix": ["un " * 40] * MAX_LINES, "max_len": 50},
        {"text": ["a " * (MAX_CHARS // 2 - 1)] * MAX_LINES, "greedy": True},
    ],
)
def test_a_request_at_a_limit_leaves_health_answering(url, body):
    stop, answered = threading.Event(), []

    def load():
        while not stop.is_set():
            answered.append(post(f"{url}/translate", {"max_len": 6, **body})[0])

    heavy = threading.Thread(target=load, daemon=True)
    heavy.start()
    try:
        time.sleep(0.2)
        assert health_p95(url) < 0.2
    finally:
        stop.set()
        heavy.join(60)
    assert set(answered) == {200}  # at the limit, not past it: the work was done


@pytest.mark.parametrize(
    "document", [" " * 2_000_000, "a b\r\n" * 50_000, "word " * 200_000 + "\n\n" * 20_000]
)
def test_a_text_document_is_read_in_linear_time(document):
    def seconds(text: str) -> float:  # the least of five: a busy machine only ever adds time
        return min(_timed(parse, text, "text") for _ in range(5))

    # a floor of 20 ms: timer and scheduler noise on a shared machine is not growth (the quadratic
    # reader took 2.2 s for 40,000 spaces; these are millions)
    assert seconds(document * 4) <= 5 * max(seconds(document), 0.02)


SENTENCES = "A dog <b>runs</b> on the <i>beach</i>, and a cat&nbsp;sleeps. Two men talk.<br>It rains. "
GROWING = {  # a document of n blocks, each format's markup in it
    "text": lambda n: "A dog runs on the beach, and a cat sleeps.\r\nTwo men talk. It rains.\r\n\r\n" * n,
    "markdown": lambda n: "A dog *runs* on the [beach](http://x), a cat&amp;sleeps.\n> Two `men`.\n\n" * n,
    "html": lambda n: f"<p>{SENTENCES}</p>\n" * n,
    "srt": lambda n: "".join(f"{i}\n00:00:01,000 --> 00:00:02,000\n<i>A</i> dog.\nGo.\n\n" for i in range(n)),
}  # fmt: skip


@pytest.mark.parametrize("format", [*GROWING, "one long paragraph", "placement"])
def test_each_document_step_is_linear_in_its_size(format):
    """Four times the document costs at most five times the time: read, cut into sentences, tags
    placed and written back (the identity round trip), for each format, for one paragraph of a
    thousand sentences, and for a thousand tags in one sentence. Timed with the cyclic collector
    paused: its passes grow with every live object of the process, not with the document's work."""
    import gc

    from seq2seq.documents.markup import Run
    from seq2seq.documents.placing import place
    from seq2seq.documents.translate import round_trip

    def tagged(n: int) -> Run:
        run = Run()
        for i in range(n):
            run.opening("<b>")
            run.add(f"w{i}")
            run.closing("</b>")
            run.add(" ")
        return run

    def work(n: int):
        if format == "placement":
            run = tagged(n)
            return lambda: place(run, [(0, run.size)], [run.text], [{(i, i) for i in range(n)}])
        if format == "one long paragraph":
            return lambda: round_trip(f"<p>{SENTENCES * n}</p>", "html")
        text = GROWING[format](n)
        return lambda: round_trip(text, format)

    def seconds(n: int) -> float:
        job = work(n)
        gc.disable()
        try:
            return min(_timed(job) for _ in range(5))
        finally:
            gc.enable()

    n = 1000 if format == "placement" else 150
    assert seconds(4 * n) <= 5 * max(seconds(n), 0.02)


def _timed(function, *args) -> float:
    tick = time.perf_counter()
    function(*args)
    return time.perf_counter() - tick


@pytest.mark.parametrize("ends", ["\n", "\r\n", "\r"])
def test_a_text_documents_paragraphs_are_found_whatever_its_line_ends(ends):
    text = ends.join(["A dog runs.", "It is fast.", "", "The cat sleeps.", ""])
    layout = parse(text, "text")
    assert [run.text for run in layout.runs] == [f"A dog runs.{ends}It is fast.", "The cat sleeps."]
    assert layout.render(["X", "Y"]) == f"X{ends}{ends}Y{ends}"


def test_a_binary_document_is_refused_at_its_first_chunk(tmp_path, monkeypatch):
    from seq2seq.cli import document
    from seq2seq.errors import Seq2SeqError

    (tmp_path / "zeros").write_bytes(b"\x00" * (4 << 20))
    reads = []
    real = document._read_some
    monkeypatch.setattr(document, "_read_some", lambda *a: reads.append(1) or real(*a))
    with pytest.raises(Seq2SeqError, match="NUL bytes: a binary file"):
        document.read_document(tmp_path / "zeros")
    assert len(reads) == 1
    monkeypatch.setattr(document, "MAX_DOCUMENT", 1 << 16)
    (tmp_path / "big.txt").write_bytes(b"a dog runs.\n" * 20_000)
    with pytest.raises(Seq2SeqError, match="the most a document may be"):
        document.read_document(tmp_path / "big.txt")


@pytest.mark.parametrize(
    "text, fmt, words",
    [
        ("A dog \ud800 runs.", "text", "not valid Unicode (a lone surrogate"),
        ("<p>a \ud800</p>", "html", "not valid Unicode (a lone surrogate"),
        ("1\n99999999999:00:00,000 --> 99999999999:00:01,000\nA dog.\n", "srt", "not a SubRip file"),
    ],
)
def test_a_document_the_server_cannot_read_is_a_422_line(url, text, fmt, words):
    status, answer = post(f"{url}/translate", {"text": text, "format": fmt, "max_len": 6})
    assert status == 422 and words in answer["error"], answer


@pytest.mark.parametrize("ends", ["\n", "\r\n", "\r"])
def test_markdown_keeps_its_line_ends_and_blocks(ends):
    text = ends.join(["# A dog", "", "A cat", "sleeps.", "", "- one", "- two", ""])
    layout = parse(text, "markdown")
    assert [run.text for run in layout.runs] == ["A dog", "A cat\nsleeps.", "one", "two"]
    assert layout.render(["A dog", "A cat sleeps.", "one", "two"]) == ends.join(
        ["# A dog", "", "A cat sleeps.", "", "- one", "- two", ""]
    )


def test_a_glossary_is_counted_before_it_is_read():
    from seq2seq.decoding.terms import MAX_GLOSSARY, Glossary
    from seq2seq.errors import Seq2SeqError

    with pytest.raises(Seq2SeqError, match="above the 100000 a glossary may hold"):
        Glossary.parse(["dog\tchien"] * (10 * MAX_GLOSSARY), "g.tsv")
