"""Documents lose nothing: read and written back with an identity translator (each sentence
translated as itself, each word aligned to itself) every format gives back its input byte for
byte, on each case a real file showed; with words that change, markup stays where it was and new
text is written as the format needs it."""

import pytest

from seq2seq.documents.formats import parse
from seq2seq.documents.translate import prepared, rendered, round_trip
from seq2seq.errors import Seq2SeqError

CASES = {
    "text": [
        "A dog runs.\r\nIt is fast.\r\n\r\nA cat sleeps.\r\n",  # Windows line ends
        "A dog runs.\rIt is fast.\r\rA cat sleeps.",  # old Mac line ends
        "  Indented first line,\n   wrapped   by hand.\n\n\n\nLast \t \n",
        "\u2028A line separator.\fA form feed.\x85A NEL.\n\nA paragraph.",
    ],
    "markdown": [
        "# Title\r\n\r\nA *red* car.\r",  # CR and CRLF ends
        "A line  \nbroken hard, and \\\nagain.\n",  # hard breaks
        '[a link](https://example.org/a%20b?q=1&x=(2) "Its title") and <me@example.org>\n',
        "1\\. Not a list, and a copied &lt;script&gt; that stays text: \\*stars\\*.\n",
        "[![badge](https://img.shields.io/x.svg)](https://ci)\n\nText.\n",
        "| chien dog | dog |\n|---|---|\n| a `code` cell | b |\n",
        "> A quoted line\n> that goes on.\n\n- an item\n  that goes on\n- *two* __three__ ~~four~~\n",
        "---\ntitle: front matter\n---\n\nText with snake_case_words.\n\n<div>\nHTML block.\n</div>\n",
        "Text with ![an image](i.png 'title') inside, and `code` and <b>html</b>.\n",
    ],
    "html": [
        "<p>A dog runs<br>the beach.</p>",
        "<p>A sentence <!-- a comment --> goes on.</p><p>PHP <?php echo 1 ?>, <![CDATA[x]]>, </br> here.</p>",
        "<pre>kept <b>as is</b>\n<hr></pre><p>Translated after.</p>",
        "<p>One.</p>\u2028\f\x85\r<p>Two.</p>\r\n<p>Three.</p>",
        "<p>Available in: <b>All</b> except <b><ph>X</ph></b>.</p>",
        "<p>caf&eacute; &amp; &#39;quoted&#39; a&nbsp;b &copy caf\u00e9</p>",
        "<p>A <b>stray</b></i> closing and an <i>open one.</p><p>Next <img src=x.png> <input/>.</p>",
        "<textarea>kept</textarea><script>if (a < b) {}</script><style>p{}</style><p>a<wbr>b</p>",
        "<p>One sentence holding \u00b4, a zero\u200bwidth space or a lone \u200e mark.</p>",
    ],
    "srt": [
        "1\r\n00:00:01,000 --> 00:00:02,000\r\n<i>Hello</i> there,\r\nmy friend.\r\n\r\n",
        '1\n00:00:01,000 --> 00:00:02,500\n- <b>Bye</b> &amp; go.\n- <font color="red">Now</font>!\n\n2\n'
        "00:00:03,000 --> 00:00:04,000\nLast.",
    ],
}


@pytest.mark.parametrize("format, text", [(f, t) for f, texts in CASES.items() for t in texts])
def test_the_identity_round_trip_is_byte_for_byte(format, text):
    assert round_trip(text, format) == text
    for run in parse(text, format).runs:  # each run holds what its source held
        assert run.source() in text


def shouted(text: str, format: str) -> str:
    """Every word translated as its upper case, aligned to itself: new words, same places."""
    done = prepared(text, format)
    translations = [s.upper() for s in done.sentences]
    identity = [{(i, i) for i in range(len(s.split()))} for s in done.sentences]
    return rendered(done, translations, identity)[0]


def test_br_reads_as_a_space_and_a_comment_is_inside_its_sentence():
    (run,) = parse("<p>A dog runs<br>the beach.</p>", "html").runs
    assert run.text == "A dog runs the beach."
    assert shouted("<p>A dog runs<br>the beach.</p>", "html") == "<p>A DOG RUNS<br> THE BEACH.</p>"
    (run,) = parse("<p>A sentence <!-- c --> goes on.</p>", "html").runs
    assert prepared("<p>A sentence <!-- c --> goes on.</p>", "html").sentences == ["A sentence  goes on."]


def test_new_words_are_escaped_as_the_format_needs_and_copied_ones_keep_their_spelling():
    assert shouted("<p>a &lt;b&gt; caf&eacute;</p>", "html") == "<p>A &lt;B&gt; CAFÉ</p>"
    # a copied word keeps its spelling (the number, the entity as typed), a new one is escaped
    done = prepared("1\\. *a* &lt;b&gt; 2\n", "markdown")
    assert done.sentences == ["1.", "a <b> 2"]
    identity = [{(0, 0)}, {(0, 0), (1, 1), (2, 2)}]
    assert rendered(done, ["1.", "A <b> 2"], identity)[0] == "1\\. *A* &lt;b&gt; 2\n"
    assert rendered(done, ["1.", "A <i> 2"], identity)[0] == "1\\. *A* \\<i\\> 2\n"
    assert shouted("1\\. Not a list\n", "markdown") == "1\\. NOT A LIST\n"


def test_subtitle_markup_is_inline_tags_around_its_words():
    text = "1\n00:00:01,000 --> 00:00:02,000\n<i>Hello</i> there,\nfriend.\n"
    (run,) = parse(text, "srt").runs
    assert run.text == "Hello there,\nfriend." and [(p.open, p.close) for p in run.pairs] == [("<i>", "</i>")]
    # a new translation is one line (not wrapped as the source was), its tags around their words
    assert shouted(text, "srt") == "1\n00:00:01,000 --> 00:00:02,000\n<i>HELLO</i> THERE, FRIEND.\n"


def test_markdown_structure_stays_and_a_block_of_lines_becomes_one():
    text = "> A quoted line\n> that goes on.\n\n| a | b |\n|---|---|\n| one | two |\n"
    assert (
        shouted(text, "markdown") == "> A QUOTED LINE THAT GOES ON.\n\n| A | B |\n|---|---|\n| ONE | TWO |\n"
    )
    done = prepared("> A quoted line\n> that goes on.\n", "markdown")
    # a translation is not wrapped as its source was: the block is one line, its prefix kept
    assert (
        rendered(done, ["Une ligne citée qui continue."], [set()])[0] == "> Une ligne citée qui continue.\n"
    )


@pytest.mark.parametrize("text", ["1\n99999999999:00:00,000 --> 00:00:01,000\nx\n", "1\nnot a timing\nx\n"])
def test_a_broken_subtitle_is_one_line(text):
    with pytest.raises(Seq2SeqError, match="not a SubRip file"):
        round_trip(text, "srt")


@pytest.mark.parametrize(
    "text, format, expected",
    [
        # a cell kept as it is (code alone) still moves the search on: the next cell is its own
        ("| Cmd | Does |\n|---|---|\n| `ls` | ls |", "markdown", "| CMD | DOES |\n|---|---|\n| `ls` | LS |"),
        ("1. 1\n2. 2\n", "markdown", "1. 1\n2. 2\n"),  # a list item's text is found after its marker
        # siblings widened to one word still nest; an empty pair stays one piece, in order
        (
            "<p>See <a href=u>Paris</a><sup>1</sup> now.</p>",
            "html",
            "<p>SEE <a href=u><sup>PARIS1</sup></a> NOW.</p>",
        ),
        ("<p>Hi. <a id=s></a>Paris is big.</p>", "html", "<p>HI. <a id=s></a>PARIS IS BIG.</p>"),
        ("*a*~~b~~ c", "markdown", "*~~AB~~* C"),
    ],
)
def test_markup_a_review_found_misplaced_stays_where_it_belongs(text, format, expected):
    assert round_trip(text, format) == text
    assert shouted(text, format) == expected
