"""Documents in, documents out (seq2seq/documents): a paragraph translates to its sentences' own
translations joined; Markdown, HTML and SubRip keep their structure and their untranslatable parts
byte for byte; inline markup is placed through the alignment by stated rules; bad documents are
one line, exit 2, nothing written."""

import itertools
import re

import pytest

from seq2seq.decoding.options import DecodeOptions
from seq2seq.decoding.search import translate
from seq2seq.documents.formats import format_of, parse
from seq2seq.documents.markup import Run
from seq2seq.documents.placing import place
from seq2seq.errors import Seq2SeqError
from seq2seq.request.translator import translate_document
from seq2seq.runs.load import load_run

pytest.importorskip("sentencex", reason='documents need the extra: pip install -e ".[docs]"')
pytest.importorskip("pysbd", reason='documents need the extra: pip install -e ".[docs]"')
SENTENCES = ["A dog runs.", "The cat sleeps.", "A red car.", "Two men sit.", "A girl plays."]


@pytest.fixture(scope="module")
def wordy(tmp_path_factory):
    """A tiny random model: every translation has words (a trained tiny run's may be empty), so the
    markup has words to go around."""
    from tests.conftest import tiny_model, write_run

    return load_run(
        write_run(tmp_path_factory.mktemp("wordy") / "run", lambda v: tiny_model(vocab_size=v, seed=5))
    )


@pytest.mark.parametrize("beam", [1, 3])
def test_a_paragraph_is_its_sentences_translations_joined(tiny_run, beam):
    model, tokenizer = load_run(tiny_run[0])
    options = DecodeOptions(beam=beam, max_len=12)
    alone = translate(model, tokenizer, SENTENCES, options).best
    text = " ".join(SENTENCES[:2]) + "\n\n" + " ".join(SENTENCES[2:]) + "\n"
    done = translate_document(model, tokenizer, text, "text", options)
    assert done.text == " ".join(alone[:2]) + "\n\n" + " ".join(alone[2:]) + "\n"
    assert done.sentences == 5


def test_sentences_are_cut_by_sentencex_with_pysbds_second_opinion_in_the_sources_language():
    import sentencex

    from seq2seq.documents.sentences import split

    text = "People admire a work of art.  Busy Asian mall! Mr. Smith waits at 3 p.m. today. A dog"
    assert len(list(sentencex.segment("en", text))) == 3  # sentencex alone reads "art." as short
    spans = split(text, "en")
    assert [text[a:b] for a, b in spans] == [
        "People admire a work of art.", "Busy Asian mall!", "Mr. Smith waits at 3 p.m. today.", "A dog",
    ]  # fmt: skip
    assert [text[b:a] for (_, b), (a, _) in itertools.pairwise(spans)] == ["  ", " ", " "]
    german = "Er kam um 3 Uhr usw. Dann ging er."  # "usw." ends no German sentence here
    assert len(split(german, "de")) == 1 and len(split(german, "en")) == 2
    assert split("Ahoj. Jak se máš?", "cs") == [(0, 5), (6, 17)]  # pysbd lacks Czech: its English rules
    assert split("   ") == []


def test_every_character_lies_in_a_sentence_and_no_space_breaks_the_splitter():
    """Sentencex 1.0 panics on a letter, a wide space and a full stop; pysbd leaves characters out
    of its pieces. Over seeded random texts, in four languages: no error, the sentences in order,
    stripped, and every character that is not a space in one of them."""
    import random

    from seq2seq.documents.sentences import split

    text = "Plan A\u00a0. Une phrase\u202f! Une autre."
    assert [text[a:b] for a, b in split(text, "fr")] == ["Plan A\u00a0.", "Une phrase\u202f!", "Une autre."]
    rng = random.Random(0)
    alphabet = [
        *"ab AB. !?;,\"'()…\n\t0",
        "Mr.",
        "art.",
        "p.m.",
        "\u00a0",
        "\u202f",
        "\u2009",
        "\u3000",
        "日本。",
        "?!",
    ]
    for _ in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 30)))
        for lang in ("en", "fr", "de", "cs"):
            spans, last = split(text, lang), 0
            for a, b in spans:
                assert last <= a < b and text[a:b] == text[a:b].strip(), (text, spans)
                last = b
            inside = {k for a, b in spans for k in range(a, b)}
            assert all(k in inside for k, c in enumerate(text) if not c.isspace()), (text, lang, spans)


def test_the_command_and_the_server_cut_sentences_by_the_runs_source_language(run, cli, tmp_path):
    from fastapi.testclient import TestClient

    from tests.helpers import with_train
    from tests.serve_helpers import make_app

    german = with_train(run, tmp_path, "de-run", src="de")
    text = "Er kam um 3 Uhr usw. Dann ging er.\n"
    model, tokenizer = load_run(german)
    options = DecodeOptions(max_len=8)
    by_lang = {
        lang: translate_document(model, tokenizer, text, "text", options, lang=lang) for lang in ["de", "en"]
    }
    assert by_lang["de"].sentences == 1 and by_lang["en"].sentences == 2
    assert by_lang["de"].text != by_lang["en"].text
    (tmp_path / "doc.txt").write_text(text, encoding="utf-8")
    args = ["--greedy", "--max-len", "8", "--format", "text", "--input", tmp_path / "doc.txt"]
    said = cli("translate", "--run", german, *args)
    assert said.code == 0 and said.out == by_lang["de"].text, said.err
    with TestClient(make_app(german)) as client:
        answer = client.post("/translate", json={"text": text, "format": "text", "beam": 1, "max_len": 8})
        assert answer.json()["sentences"] == 1 and answer.json()["document"] == by_lang["de"].text


def test_a_sentence_too_long_is_cut_at_its_best_places_and_nothing_dropped(wordy):
    from seq2seq.documents.sentences import fitted

    text = "A man in a red shirt, who rides a bike, talks; a dog runs beside him on the road"
    spans, cut = fitted(text, [(0, len(text))], lambda s: len(s.split()) <= 6)
    assert [text[a:b] for a, b in spans] == [
        "A man in a red shirt,", "who rides a bike, talks;", "a dog runs beside", "him on the road",
    ] and cut == 1  # fmt: skip
    word = fitted("x" * 9, [(0, 9)], lambda s: len(s) <= 4)[0]  # one long word: halved
    assert "".join("x" * (b - a) for a, b in word) == "x" * 9 and all(b - a <= 4 for a, b in word)
    model, tokenizer = wordy
    long = ", ".join(["a dog runs in the park"] * 12) + "."  # past the tiny model's 63 pieces
    options = DecodeOptions(max_len=8)
    done = translate_document(model, tokenizer, long + "\n", "text", options)
    parts = [
        long[a:b] for a, b in fitted(long, [(0, len(long))], lambda s: len(tokenizer.encode([s])[0]) <= 63)[0]
    ]
    assert len(parts) > 1 and " ".join(parts) == long  # cut after commas, nothing left out
    assert done.text == " ".join(translate(model, tokenizer, parts, options).best) + "\n"
    assert done.long == 1 and done.truncated == 0 and "translated in parts" in done.notices[0]


MARKDOWN = """# A *red* car

A dog runs. The cat [sleeps](http://example.com/a_b "a title") on `the_mat` here.

- two **men** sit
- a girl plays

```python
a dog runs = 1
```

| a dog | a cat |
|---|---|
| a red car | two men |
"""


def test_markdown_keeps_its_structure_and_its_code(wordy):
    from markdown_it import MarkdownIt

    model, tokenizer = wordy
    done = translate_document(model, tokenizer, MARKDOWN, "markdown", DecodeOptions(beam=2, max_len=8))
    kinds = lambda text: [t.type for t in MarkdownIt("commonmark").enable("table").parse(text)]  # noqa: E731
    assert kinds(done.text) == kinds(MARKDOWN)
    assert "```python\na dog runs = 1\n```" in done.text  # a code block is not translated
    assert "`the_mat`" in done.text and '(http://example.com/a_b "a title")' in done.text


HTML = """<!DOCTYPE html>
<html><head><title>A dog</title><style>p { color: red }</style></head>
<body><h1 class="x">A <em>red</em> car</h1>
<p>A dog runs &amp; jumps. The <a href="a.html?x=1&amp;y=2" title="A cat">cat</a> sleeps.<br>Two men sit.</p>
<ul><li>a girl <b>plays</b></li><li>a red car</li></ul>
<pre>a dog runs</pre><script>var s = "a dog runs";</script><code>a cat</code>
</body></html>
"""


def test_html_keeps_every_tag_and_attribute_and_what_is_not_text(wordy):
    model, tokenizer = wordy
    done = translate_document(model, tokenizer, HTML, "html", DecodeOptions(beam=2, max_len=8))
    tags = lambda text: sorted(re.findall(r"<[^>]+>", text))  # noqa: E731
    assert tags(done.text) == tags(HTML)  # every tag, with every attribute, as it was
    for kept in ("<pre>a dog runs</pre>", '<script>var s = "a dog runs";</script>', "<code>a cat</code>"):
        assert kept in done.text
    assert "<title>A dog</title>" not in done.text  # the title is text: translated


SRT = """1
00:00:01,000 --> 00:00:02,500
A dog runs.
The cat sleeps.

7
00:00:03,000 --> 00:00:04,000
A red car.
"""


def test_subtitles_keep_their_cues_indices_and_timings(wordy):
    import srt

    model, tokenizer = wordy
    done = translate_document(model, tokenizer, SRT, "srt", DecodeOptions(beam=2, max_len=8))
    before, after = list(srt.parse(SRT)), list(srt.parse(done.text))
    assert [(c.index, c.start, c.end) for c in after] == [(c.index, c.start, c.end) for c in before]


def test_markup_is_placed_around_the_aligned_words_by_its_rules():
    run = Run()
    run.add("a ")
    run.opening("<b>")
    run.add("red ")
    run.opening("<i>")
    run.add("fast")
    run.closing("</i>")
    run.closing("</b>")
    run.add(" car")
    run.atom("<br>")
    spans = [(0, len(run.text))]
    # a red fast car -> une voiture rouge rapide: red -> rouge, fast -> rapide
    links = [{(0, 0), (1, 2), (2, 3), (3, 1)}]
    placed = place(run, spans, ["une voiture rouge rapide"], links)
    # the atom follows the target word of the source word before it (car -> voiture)
    assert placed.text == "une voiture<br> <b>rouge <i>rapide</i></b>" and placed.unplaced == 0
    # fast -> voiture, car -> rapide: <i>'s word lies outside <b>'s span (rouge .. voiture is 1..2
    # in order): it is clamped inside it, and the closings keep their nesting
    crossed = place(run, spans, ["une voiture rouge rapide"], [{(0, 0), (1, 2), (2, 1), (3, 3)}])
    assert crossed.text == "une <b><i>voiture</i> rouge</b> rapide<br>"
    # nothing aligned to the enclosed words: kept at the sentence's end in their source order, counted
    lost = place(run, spans, ["une voiture"], [{(0, 0), (3, 1)}])
    assert lost.text == "une voiture<b><i></i></b><br>" and lost.unplaced == 2


def tagged_run(words: list[str], first: int, last: int) -> Run:
    """`words` joined by spaces, words first..last (inclusive) inside <b>."""
    run = Run()
    for k, word in enumerate(words):
        if k == first:
            run.opening("<b>")
        run.add(word)
        if k == last:
            run.closing("</b>")
        run.add(" " if k < len(words) - 1 else "")
    return run


def test_an_opening_takes_the_unaligned_words_before_its_first_word_unless_that_word_is_copied():
    run = tagged_run(["loading", "cotton", "onto", "a", "truck"], 1, 1)
    spans = [(0, len(run.text))]
    # "du" is aligned to no source word: the article before its noun goes inside the tag
    links = [{(0, 0), (1, 2), (2, 3), (3, 4), (4, 5)}]
    placed = place(run, spans, ["chargeant du coton dans un camion"], links)
    assert placed.text == "chargeant <b>du coton</b> dans un camion"
    # a word with no letter or digit is not taken, nor a word aligned to another source word
    placed = place(run, spans, ["chargeant « coton dans un camion"], links)
    assert placed.text == "chargeant « <b>coton</b> dans un camion"
    # the first word copies its source word: the tag stands where the source had it
    run = tagged_run(["in", "Paris", "today"], 1, 1)
    placed = place(run, [(0, len(run.text))], ["aujourd'hui à Paris"], [{(1, 2), (2, 0)}])
    assert placed.text == "aujourd'hui à <b>Paris</b>"


@pytest.mark.parametrize(
    "name, text, words",
    [
        ("bad.srt", "1\n00:00:0x,000 --> 00:00:02,000\na dog\n", "SubRip"),
        ("bin.md", b"\x00\x01binary", "binary"),
        ("latin.txt", "un caf\xe9".encode("latin-1"), "not valid UTF-8"),
    ],
)
def test_a_bad_document_is_one_line_and_writes_nothing(cli, tiny_run, tmp_path, name, text, words):
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    result = cli("translate", "--run", tiny_run[0], "--input", path, "--output", tmp_path / "out")
    assert result.code == 2 and words in result.err, result.err
    assert len(result.err.strip().splitlines()) == 1 and not (tmp_path / "out").exists()


def test_the_format_comes_from_the_suffix_or_format(cli, tiny_run, tmp_path):
    from pathlib import Path

    assert [format_of(Path(f"a{s}"), None) for s in (".md", ".HTML", ".srt", ".txt", ".tsv")] == [
        "markdown",
        "html",
        "srt",
        "lines",
        "lines",
    ]  # fmt: skip: a .txt file stays a line in, a line out
    assert format_of(None, None) == "lines" and format_of(Path("a.md"), "lines") == "lines"
    with pytest.raises(Seq2SeqError, match="--format docx"):
        format_of(None, "docx")
    (tmp_path / "a.md").write_text("# A dog\n\nA cat sleeps.\n")
    result = cli("translate", "--run", tiny_run[0], "--input", tmp_path / "a.md")
    assert result.code == 0 and result.out.startswith("# ") and len(result.out.splitlines()) == 3
    refused = cli(
        "translate", "--run", tiny_run[0], "--input", tmp_path / "a.md", "--nbest", "2", "--beam", "2"
    )
    assert refused.code == 2 and "'--nbest': goes with lines" in refused.err
    assert len(parse("a\n\nb\n", "text").runs) == 2


def test_the_server_translates_a_document_as_the_command_does(run, cli, tmp_path):
    from fastapi.testclient import TestClient

    from seq2seq.alignment.runs import placing_method
    from tests.serve_helpers import make_app

    (tmp_path / "doc.md").write_text(MARKDOWN, encoding="utf-8")
    said = cli("translate", "--run", run, "--beam", "2", "--max-len", "8", "--input", tmp_path / "doc.md")
    assert said.code == 0, said.err
    markup = placing_method(run, *load_run(run))  # as `seq2seq serve` places tags
    with TestClient(make_app(run, markup=markup)) as client:
        body = {"text": MARKDOWN, "format": "markdown", "beam": 2, "max_len": 8}
        answer = client.post("/translate", json=body).json()
        assert answer["document"] == said.out and answer["sentences"] > 3 and "translations" not in answer
        for bad, message in (
            ({"text": ["a dog"], "format": "text"}, "text: a list of lines goes with format lines"),
            (
                {"text": "a dog", "format": "text", "prefix": "le"},
                "prefix: goes with lines; a document is one",
            ),
            ({"text": "1\nnot a timing\na dog\n", "format": "srt"}, "not a SubRip file"),
        ):
            refused = client.post("/translate", json=bad)
            assert refused.status_code == 422 and message in refused.json()["error"], refused.text


def test_the_alignment_is_read_only_for_a_document_with_tags(run, cli, tmp_path, monkeypatch):
    """Choosing how tags are placed may cost a pass over the gold set: a document without inline
    markup never asks, one with it does."""
    import seq2seq.alignment.runs

    asked = []
    monkeypatch.setattr(seq2seq.alignment.runs, "placing_method", lambda *a: asked.append(a) or None)
    (tmp_path / "plain.md").write_text("# A dog\n\nA cat runs.\n", encoding="utf-8")
    (tmp_path / "tagged.md").write_text("A **dog** runs.\n", encoding="utf-8")
    for name, calls in (("plain.md", 0), ("tagged.md", 1)):
        said = cli("translate", "--run", run, "--max-len", "4", "--input", tmp_path / name)
        assert said.code == 0 and len(asked) == calls, said.err


def test_a_documents_explorer_holds_each_sentence_with_its_maps(run, cli, tmp_path):
    import json

    (tmp_path / "doc.md").write_text(MARKDOWN, encoding="utf-8")
    page = tmp_path / "page.html"
    args = ["--beam", "2", "--max-len", "8", "--input", tmp_path / "doc.md"]
    said = cli("translate", "--run", run, *args, "--attention-html", page)
    assert said.code == 0 and said.out == cli("translate", "--run", run, *args).out, said.err
    data = json.loads(re.search(r'id="maps-data">(.*?)</script>', page.read_text()).group(1))
    model, tokenizer = load_run(run)
    done = translate_document(model, tokenizer, MARKDOWN, "markdown", DecodeOptions(beam=2, max_len=8))
    shown = [s for s, t in zip(done.sources, done.result.best, strict=True) if t]  # a blank one has no map
    assert [s["source_text"] for s in data["sentences"]] == shown
    assert all(s["kinds"]["cross"]["weights"] and s["alternatives"] for s in data["sentences"])


@pytest.mark.parametrize(
    "html, kept",
    [
        ("<p>A dog <!-- a note --> runs on the beach.</p>", "<!-- a note -->"),
        ("<p>A dog <?php echo 1 ?> runs.</p>", "<?php echo 1 ?>"),
        ("<p>A dog <![CDATA[x < y]]> runs.</p>", "<![CDATA[x < y]]>"),
        ("<p>A dog</br> runs.</p>", "</br>"),
    ],
)
def test_markup_inside_a_sentence_is_an_atom_never_a_split_nor_lost(html, kept):
    (run,) = parse(html, "html").runs  # one sentence: the comment does not cut it in two
    words = run.text.split()
    placed = place(run, [(0, len(run.text))], [run.text], [{(i, i) for i in range(len(words))}])
    assert kept in placed.text and " ".join(placed.text.replace(kept, " ").split()) == " ".join(words)


def test_a_line_separator_before_a_paragraph_shifts_nothing():
    text = "<p>One dog.</p>\u2028\x0c\r\x85<p>Two dogs.</p>\n<p>Three cats.</p>"
    layout = parse(text, "html")
    assert [run.text for run in layout.runs] == ["One dog.", "Two dogs.", "Three cats."]
    assert layout.render(["1", "2", "3"]) == "<p>1</p>\u2028\x0c\r\x85<p>2</p>\n<p>3</p>"


def test_nested_and_unknown_inline_elements_are_pairs_and_custom_elements_containers():
    text = "<p>Available in: <b>All</b> except <b><ph>X</ph></b> today.</p>"
    (run,) = parse(text, "html").runs
    assert run.text == "Available in: All except X today." and len(run.pairs) == 3
    words = run.text.split()
    placed = place(run, [(0, len(run.text))], [run.text], [{(i, i) for i in range(len(words))}])
    assert "<b><ph>X</ph></b>" in placed.text and "<b>All</b>" in placed.text
    layout = parse("<my-bar><h2>A title</h2><p>A dog.</p></my-bar>", "html")
    assert [r.text for r in layout.runs] == ["A title", "A dog."]


def test_a_markdown_cell_is_found_after_the_cells_before_it_and_a_badge_alone_is_kept():
    table = parse("| a | b |\n|---|---|\n| chien dog | dog |\n", "markdown")
    assert table.render(["A", "B", "C", "D"]) == "| A | B |\n|---|---|\n| C | D |\n"  # not inside "chien dog"
    text = "# Title\n\n![badge](https://x/y.svg)\n\n[![b](https://i/x.svg)](https://l)\n\nA dog runs.\n"
    layout = parse(text, "markdown")
    assert [run.text for run in layout.runs] == ["Title", "A dog runs."]
    assert layout.render(["T", "D"]) == text.replace("# Title", "# T").replace("A dog runs.", "D")


def test_a_sentence_that_cannot_be_aligned_leaves_only_its_own_tags_unplaced(wordy, monkeypatch):
    """A zero-width space is a word break to the tokenizer, not to whitespace: that sentence cannot
    be aligned; the others are aligned as ever (the batch is halved around it), with a notice."""
    from seq2seq.documents import translate as documents

    model, tokenizer = wordy
    html = "<p>A <b>dog</b> runs.</p><p>A zero\u200bwidth <i>ball</i>.</p><p>The <b>cat</b> sleeps.</p>"
    aligned = []
    real = documents._aligned
    monkeypatch.setattr(
        documents, "_aligned", lambda m, t, todo, *rest: aligned.append(todo) or real(m, t, todo, *rest)
    )
    done = translate_document(model, tokenizer, html, "html", DecodeOptions(beam=2, max_len=8))
    assert done.unaligned == [1] and any("sentence 2" in n for n in done.notices)
    assert sorted(aligned[0]) == [0, 1, 2] and [1] in aligned  # halved until the sentence stood alone
    assert done.text.count("<b>") == 2 and done.text.count("</i>") == 1


def test_a_long_document_shows_its_sentences_progress(run, cli, tmp_path, monkeypatch):
    """A bar over the document's sentences, moved on as each batch is searched (on a terminal;
    the bar itself is rich's, shown as lines' is)."""
    from contextlib import contextmanager

    from seq2seq.cli import display

    seen = []

    @contextmanager
    def bar(enabled, total, unit="lines"):
        seen.append([unit, total, 0])
        yield lambda n: seen[-1].__setitem__(2, seen[-1][2] + n)

    monkeypatch.setattr(display, "line_progress", bar)
    (tmp_path / "doc.txt").write_text("A dog runs. A cat sleeps.\n\nTwo men talk.\n")
    said = cli(
        "translate", "--run", run, "--format", "text", "--max-len", "6", "--input", tmp_path / "doc.txt"
    )
    assert said.code == 0 and seen == [["sentences", 3, 3]], said.err


def test_a_fault_in_a_block_names_its_line(monkeypatch):
    from seq2seq.documents import translate as documents

    real = documents.place

    def broken(run, *args):
        if run.text.startswith("Two"):
            raise IndexError("a placing fault")
        return real(run, *args)

    monkeypatch.setattr(documents, "place", broken)
    with pytest.raises(Seq2SeqError, match="the block at line 3 could not be written back: IndexError"):
        documents.round_trip("<p>One.</p>\n\n<p>Two.</p>", "html")
