"""ALL-CAPS and Title-Case input (seq2seq/request/case.py): read in sentence case, written back in
its case, the same through `translate`'s lines, a document and the server; any other line as it is."""

import pytest

from seq2seq.decoding.options import DecodeOptions
from seq2seq.decoding.search import translate
from seq2seq.request.case import AS_IS, TITLE, UPPER, case_of, fold, restore
from seq2seq.runs.load import load_run

LINES = ["A DOG RUNS IN THE PARK.", "Two Men Sit On A Bench", "a dog runs", "The cat sleeps.", "OK"]


@pytest.mark.parametrize(
    "line, case, read",
    [
        ("A DOG RUNS.", UPPER, "A dog runs."),
        ("« UN CHIEN »", UPPER, "« Un chien »"),
        ("Two Men Sit On A Bench", TITLE, "Two men sit on a bench"),
        ("The cat sleeps.", AS_IS, "The cat sleeps."),
        ("John met Mary.", AS_IS, "John met Mary."),  # a name inside a sentence is not a title
        ("A", AS_IS, "A"),
        ("42 !", AS_IS, "42 !"),
    ],
)
def test_a_line_is_read_in_sentence_case_where_its_case_would_mislead(line, case, read):
    assert case_of(line) == case and fold(line, case) == read


def test_a_translation_is_written_in_its_sources_case():
    assert restore("Un chien court.", UPPER) == "UN CHIEN COURT."
    assert restore("deux hommes d'affaires parlent.", TITLE) == "Deux Hommes D'affaires Parlent."
    assert restore("Un chien court.", AS_IS) == "Un chien court."


def test_translate_reads_each_line_in_sentence_case_and_writes_it_back(run, cli):
    model, tokenizer = load_run(run)
    options = DecodeOptions(beam=2, max_len=8)
    folded = [fold(line, case_of(line)) for line in LINES]
    expected = [
        restore(t, case_of(line))
        for t, line in zip(translate(model, tokenizer, folded, options).best, LINES, strict=True)
    ]
    said = cli("translate", "--run", run, "--beam", "2", "--max-len", "8", *LINES)
    assert said.code == 0 and said.out.splitlines() == expected, said.err
    assert said.out.splitlines()[2:4] == translate(model, tokenizer, LINES[2:4], options).best  # as they are

    from fastapi.testclient import TestClient

    from tests.serve_helpers import make_app

    with TestClient(make_app(run)) as client:
        answer = client.post("/translate", json={"text": LINES, "beam": 2, "max_len": 8}).json()
        assert answer["translations"] == expected


def test_a_documents_sentences_keep_their_case(run, cli, tmp_path):
    pytest.importorskip("sentencex", reason='documents need the extra: pip install -e ".[docs]"')
    (tmp_path / "doc.txt").write_text("A DOG RUNS IN THE PARK. The cat sleeps.\n", encoding="utf-8")
    said = cli(
        "translate", "--run", run, "--max-len", "8", "--format", "text", "--input", tmp_path / "doc.txt"
    )
    lines = cli("translate", "--run", run, "--max-len", "8", "A DOG RUNS IN THE PARK.", "The cat sleeps.")
    assert said.code == 0 and said.out == " ".join(lines.out.splitlines()) + "\n", said.err


def test_case_augmentation_adds_cased_copies_of_a_seeded_share_of_the_pairs():
    """scripts/case_augment.py, the other way measured: every pair kept, then upper-cased copies of
    a share of them, then Title-Cased copies of as many others, both sides of a pair alike."""
    from scripts.case_augment import augmented

    lines = {"en": [f"a dog {n} runs." for n in range(40)], "fr": [f"un chien {n} court." for n in range(40)]}
    out = augmented(lines, 0.1, seed=3)
    assert all(out[lang][:40] == lines[lang] for lang in lines) and len(out["en"]) == len(out["fr"]) == 48
    upper, title = [out["en"][40:44], out["fr"][40:44]], [out["en"][44:], out["fr"][44:]]
    assert all(case_of(line) == UPPER for side in upper for line in side)
    assert all(case_of(line) == TITLE for side in title for line in side)
    numbers = [int(line.split()[2]) for line in out["en"][40:]]
    assert len(set(numbers)) == 8 and [int(line.split()[2]) for line in out["fr"][40:]] == numbers
    assert augmented(lines, 0.1, seed=3) == out != augmented(lines, 0.1, seed=4)
