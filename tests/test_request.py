"""One request, one entry point (seq2seq/request): the same request gets the same text through
every front door (`translate`, `evaluate --output`, POST /translate, a text document and
`seq2seq.translate`), in ordinary, ALL-CAPS and Title Case, with a prefix, with terms, with
confidence and n-best; every combination that cannot be honoured is refused up front in one line
naming the fields, the same check for the command line and the server; forced text keeps its case;
a term to avoid is avoided in its case variants; overlapping glossary entries ask for the longest."""

import json

import pytest
from fastapi.testclient import TestClient

import seq2seq
from seq2seq.decoding.options import DecodeOptions
from seq2seq.decoding.search import translate as search_alone
from seq2seq.decoding.terms import Glossary, Terms
from seq2seq.errors import FieldError
from seq2seq.request.case import TITLE, UPPER, case_of, fold, restore
from seq2seq.request.request import TranslationRequest
from seq2seq.request.translator import Translator
from seq2seq.runs.load import load_run
from tests.serve_helpers import make_app

RUN_SEED = 5  # an untrained tiny model: its outputs are long and varied, so any difference shows

ORDINARY = [
    "A dog runs on the beach.", "Two men are talking on a bench.", "A woman reads a book.",
    "The cat sleeps in the sun.", "A child plays with a ball.", "A man rides a bike.",
    "Three people walk in the park.", "A red car is parked.", "A girl eats an apple.",
    "The boy jumps into the water.", "a dog runs", "a man sings", "two dogs play",
    "a woman walks", "the children laugh", "a cat sits", "a man works", "people dance",
    "a bird flies", "the sun shines",
]  # fmt: skip
LINES = ORDINARY + [line.upper() for line in ORDINARY[:10]] + [line.title() for line in ORDINARY[10:]]
OPTIONS = ["--beam", "2", "--max-len", "10"]
ASKED = {"beam": 2, "max_len": 10}
OPTIONS_ASKED = DecodeOptions(**ASKED)


def cli_lines(cli, *args) -> list[str]:
    said = cli(*args)
    assert said.code == 0, said.err
    return said.out.splitlines()


@pytest.fixture(scope="module")
def server(run):
    with TestClient(make_app(run)) as client:
        yield client


@pytest.fixture(scope="module")
def loaded(run):
    return load_run(run)


def post(server, body: dict) -> dict:
    answer = server.post("/translate", json=ASKED | body)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_forty_lines_are_the_same_text_through_every_front_door(cli, run, server, loaded, tmp_path):
    said = cli_lines(cli, "translate", "--run", run, *OPTIONS, *LINES)
    assert len(said) == len(LINES) == 40
    folded = search_alone(*loaded, [fold(line, case_of(line)) for line in LINES], OPTIONS_ASKED).best
    assert said == [restore(t, case_of(line)) for t, line in zip(folded, LINES, strict=True)]
    assert said[20:30] == [t.upper() for t in said[20:30]] != [t.lower() for t in said[20:30]]
    (tmp_path / "src.txt").write_text("\n".join(LINES) + "\n")
    evaluated = cli(
        "evaluate", "--run", run, *OPTIONS, "--source", tmp_path / "src.txt", "--reference",
        tmp_path / "src.txt", "--output", tmp_path / "hyp.txt",
    )  # fmt: skip
    assert evaluated.code == 0, evaluated.err
    assert (tmp_path / "hyp.txt").read_text().splitlines() == said
    assert post(server, {"text": LINES})["translations"] == said
    options = DecodeOptions(beam=2, max_len=10)
    assert seq2seq.translate(*loaded, LINES, options).best == said
    (tmp_path / "doc.txt").write_text("\n\n".join(LINES) + "\n")  # a paragraph a line
    document = cli_lines(cli, "translate", "--run", run, *OPTIONS, "--input", tmp_path / "doc.txt")
    assert [p for p in document if p] == said


@pytest.mark.parametrize(
    "flags, body, api",
    [
        (["--prefix", "un"], {"prefix": "un"}, {"prefixes": ["un"] * 40}),
        (["--constraint", "chien"], {"constraints": ["chien"]}, {"constraints": [Terms(("chien",))] * 40}),
        (["--avoid", "un"], {"avoid": ["un"]}, {"constraints": [Terms((), ("un",))] * 40}),
    ],
)
def test_a_steered_request_is_the_same_text_through_every_front_door(
    cli, run, server, loaded, flags, body, api
):
    said = cli_lines(cli, "translate", "--run", run, *OPTIONS, *flags, *LINES)
    assert post(server, {"text": LINES, **body})["translations"] == said
    assert seq2seq.translate(*loaded, LINES, DecodeOptions(beam=2, max_len=10), **api).best == said


def test_confidence_and_nbest_say_the_text_as_printed(cli, run, server):
    said = cli_lines(cli, "translate", "--run", run, *OPTIONS, *LINES)
    trusted = cli_lines(cli, "translate", "--run", run, *OPTIONS, "--confidence", "json", *LINES)
    assert [json.loads(line)["translation"] for line in trusted] == said
    marks = cli_lines(cli, "translate", "--run", run, *OPTIONS, "--confidence", "marks", *LINES)
    words = [line.split("\t")[0].replace("(?)", "") for line in marks]
    assert words == [" ".join(line.split()) for line in said]  # ALL CAPS marked as printed
    answer = post(server, {"text": LINES, "confidence": True, "nbest": 1})
    assert answer["translations"] == said and len(answer["confidence"]) == 40
    best = cli_lines(cli, "translate", "--run", run, *OPTIONS, "--nbest", "2", *LINES)
    served = post(server, {"text": LINES, "nbest": 2})["nbest"]
    assert best == [
        f"{i} ||| {h['text']} ||| {h['score']:.4f}" for i, hyps in enumerate(served) for h in hyps
    ]
    assert [line.split(" ||| ")[1] for line in best[::2]] == said


def test_evaluate_folds_case_as_translate_does_and_keep_searches_as_is(cli, run, loaded, tmp_path):
    upper = [line.upper() for line in ORDINARY]
    (tmp_path / "src.txt").write_text("\n".join(upper) + "\n")
    args = ["--run", run, *OPTIONS, "--source", tmp_path / "src.txt", "--reference", tmp_path / "src.txt"]
    for case in ("auto", "keep"):
        out = tmp_path / f"{case}.txt"
        assert cli("evaluate", *args, "--case", case, "--output", out).code == 0
        said = cli_lines(cli, "translate", "--run", run, *OPTIONS, "--case", case, *upper)
        assert out.read_text().splitlines() == said
    options = DecodeOptions(beam=2, max_len=10)
    plain = search_alone(*loaded, upper, options).best
    assert (tmp_path / "keep.txt").read_text().splitlines() == plain
    folded = search_alone(*loaded, [line.lower().capitalize() for line in upper], options).best
    assert (tmp_path / "auto.txt").read_text().splitlines() == [t.upper() for t in folded]


def test_forced_text_keeps_its_case_in_a_title_case_line(cli, run, server):
    line = "Two Men Are Talking On A Bench."
    said = cli_lines(cli, "translate", "--run", run, *OPTIONS, "--constraint", "le chien", line)[0]
    assert (
        "le chien" in said
        and said == post(server, {"text": line, "constraints": ["le chien"]})["translations"][0]
    )
    prefixed = cli_lines(cli, "translate", "--run", run, *OPTIONS, "--prefix", "un homme", line.upper())[0]
    assert prefixed.startswith("un homme") and prefixed[8:] == prefixed[8:].upper()
    assert restore("un iPhone rouge", TITLE, [(3, 9)]) == "Un iPhone Rouge"
    assert restore("un iPhone rouge", UPPER, [(3, 9)]) == "UN iPhone ROUGE"


class Letters:
    """A tokenizer of one piece a character, capitals included (the test runs' have none)."""

    vocab_size = 128

    def encode(self, texts: list[str], side: str = "source") -> list[list[int]]:
        return [[ord(c) for c in text] for text in texts]

    def id_pieces(self, ids: list[int]) -> list[str]:
        return [chr(i) if i >= 32 else "<s>" for i in ids]


def test_a_term_to_avoid_is_avoided_in_its_case_variants_unless_asked_exactly(loaded):
    from seq2seq.request.checks import _banked

    def avoided(exact: bool) -> set:
        return {
            "".join(map(chr, p)) for p in _banked(Letters(), [Terms((), ("chien",))], exact, 2, 50)[0].avoid
        }

    assert avoided(False) == {"chien", "Chien", "CHIEN"} and avoided(True) == {"chien"}
    kept = _banked(Letters(), [Terms(("Chien noir",), ("chien",))], False, 2, 50)[0]
    assert {"".join(map(chr, p)) for p in kept.avoid} == {"chien", "CHIEN"}  # a term to include wins
    said = Translator(*loaded).translate(TranslationRequest(ORDINARY, DecodeOptions(beam=2), avoid=("un",)))
    assert not any(word in ("un", "Un", "UN") for line in said.best for word in line.split())


def test_overlapping_glossary_entries_ask_for_the_longest_and_nothing_twice(loaded):
    glossary = Glossary((("car", "voiture"), ("sports car", "voiture de sport")))
    assert glossary.terms("A man drives a sports car.") == ("voiture de sport",)
    assert glossary.terms("A car passes a sports car.") == ("voiture", "voiture de sport")
    model, tokenizer = loaded
    checked = Translator(model, tokenizer).check(
        TranslationRequest(["A car passes a sports car."], DecodeOptions(beam=3), glossary=glossary)
    )
    assert [len(p) for p in checked.banked[0].include] == [
        len(tokenizer.encode(["voiture de sport"], "target")[0])
    ]


REFUSED = [
    (
        ["--prefix", "un chien", "--avoid", "chien"],
        ["prefix"],
        "'--prefix', '--avoid': line 1's prefix holds",
    ),
    (["--no-repeat-ngram", "1", "--constraint", "le le"], [], "'--constraint', '--no-repeat-ngram'"),
    (
        ["--max-len", "12", "--prefix", "un chien court", "--constraint", "sur la plage"],
        [],
        "prefix and terms",
    ),
    (["--greedy", "--constraint", "chien"], [], "terms need beam search"),
    (["--confidence", "json", "--nbest", "2"], [], "checks the one translation"),
]


@pytest.mark.parametrize("args, _, message", REFUSED)
def test_what_cannot_be_honoured_is_refused_up_front_in_one_line(cli, run, args, _, message, tmp_path):
    said = cli("translate", "--run", run, *OPTIONS, *args, "a dog runs.", "the cat sleeps.")
    assert said.code == 2 and said.out == "" and message in said.err and said.err.count("\n") == 1, said.err


def test_a_prefix_file_holding_an_avoided_term_is_refused_not_a_traceback(cli, run, tmp_path):
    (tmp_path / "in.txt").write_text("a dog runs.\nthe cat sleeps.\n")
    (tmp_path / "p.txt").write_text("un\nle chat et le chien\n")
    said = cli(
        "translate", "--run", run, "--input", tmp_path / "in.txt", "--prefix-file", tmp_path / "p.txt",
        "--avoid", "chien", "--output", tmp_path / "out.txt",
    )  # fmt: skip
    assert (
        said.code == 2 and "line 2's prefix holds a term to avoid" in said.err and "Traceback" not in said.err
    )
    assert not (tmp_path / "out.txt").exists()


@pytest.mark.parametrize(
    "body, fields",
    [
        ({"prefix": "un chien", "avoid": ["chien"]}, "prefix, avoid:"),
        ({"no_repeat_ngram": 1, "constraints": ["le le"]}, "constraints, no_repeat_ngram:"),
        ({"max_len": 12, "prefix": "un chien court", "constraints": ["sur la plage"]}, "prefix, constraints"),
        ({"case": "shout"}, "case"),
        ({"confidence": True, "nbest": 2}, "confidence, nbest, num_samples:"),
    ],
)
def test_the_server_refuses_the_same_requests_naming_its_fields(server, body, fields):
    answer = server.post("/translate", json={"text": ["a dog runs.", "the cat sleeps."], **ASKED, **body})
    assert answer.status_code == 422 and fields in answer.json()["error"], answer.text


def test_the_library_refuses_with_the_fields_named(loaded):
    translator = Translator(*loaded)
    with pytest.raises(FieldError) as refused:
        translator.check(TranslationRequest(["a dog"], DecodeOptions(beam=2), ["un chien"], avoid=("chien",)))
    assert refused.value.fields == ("prefixes", "avoid")
    with pytest.raises(FieldError) as refused:
        translator.check(TranslationRequest(["a dog"], case="loud"))
    assert refused.value.fields == ("case",)


def test_attention_explains_the_translation_as_translate_prints_it(server):
    line = "A DOG RUNS ON THE BEACH."
    said = post(server, {"text": line})["translations"][0]
    answer = server.post("/attention", json={"text": line, **ASKED})
    assert answer.status_code == 200 and answer.json()["translation"] == said == said.upper(), answer.text
    assert "".join(answer.json()["target"][:-1]).replace("\u2581", " ").strip() == said


def test_a_glossary_line_asking_more_terms_than_the_beam_holds_is_refused_before_any_line(cli, run, tmp_path):
    (tmp_path / "g.tsv").write_text("dog\tchien\ncat\tchat\nsun\tsoleil\n")
    lines = ["a dog runs"] * 600 + ["a dog and a cat in the sun"]  # the 601st: past a first group
    (tmp_path / "in.txt").write_text("\n".join(lines) + "\n")
    said = cli(
        "translate", "--run", run, "--beam", "3", "--glossary", tmp_path / "g.tsv", "--input",
        tmp_path / "in.txt", "--output", tmp_path / "out.txt",
    )  # fmt: skip
    assert said.code == 2 and "line 601 holds 3 glossary terms" in said.err, said.err
    assert (
        list(tmp_path.iterdir()) == [tmp_path / "g.tsv", tmp_path / "in.txt"]
        or not (tmp_path / "out.txt").exists()
    )


class Counting:
    """A run's tokenizer that tells `seen` the texts of `side` it is asked to encode."""

    def __init__(self, tokenizer, side: str, seen):
        self.tokenizer, self.side, self.seen = tokenizer, side, seen

    def __getattr__(self, name):
        return getattr(self.tokenizer, name)

    def encode(self, texts, side="source"):
        if side == self.side:
            self.seen(texts)
        return self.tokenizer.encode(texts, side)


def test_every_term_is_tokenized_once_a_request(loaded):
    from collections import Counter

    model, tokenizer = loaded
    asked = Counter()
    request = TranslationRequest(LINES, DecodeOptions(beam=3), include=("chien",), avoid=("un",))
    checked = Translator(model, Counting(tokenizer, "target", asked.update)).check(request)
    assert len(checked.banked) == 40 and asked["chien"] == asked["un"] == 1 and max(asked.values()) == 1


def test_a_whole_input_is_refused_or_passed_without_its_sources_read(loaded):
    """translate's check before its first group runs the request's refusals alone: terms are
    tokenized, no source line is (each group reads its own)."""
    model, tokenizer = loaded
    sources = []
    translator = Translator(model, Counting(tokenizer, "source", sources.extend))
    translator.refuse(TranslationRequest(LINES, DecodeOptions(beam=3), include=("chien",)))
    assert sources == []
    with pytest.raises(FieldError, match="holds at most 2"):
        translator.refuse(TranslationRequest(LINES, DecodeOptions(beam=3), include=("chien", "chat", "rue")))
