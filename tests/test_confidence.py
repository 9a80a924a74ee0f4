"""How far to trust a translation, wherever one is made: `translate --confidence` (JSON or marked
text) answers what `check` answers of the same pair, `evaluate --confidence` adds every line and
the count of each flag, the server's /translate with "confidence" answers /check's objects, and the
offline explorer marks the words to check and the source words left uncovered, saying why on hover;
`check --calibrate` fits the flags to a run and `check` reads them from it."""

import json
import random
import re
from dataclasses import replace

import pytest

from seq2seq.training.config import TrainConfig
from seq2seq.training.train import train
from seq2seq.trust.calibration import RUN_FILE, Calibration
from seq2seq.trust.flags import MARK
from tests.conftest import write_multi30k
from tests.helpers import REVERSE_MODEL

SOURCES = ["a dog runs in the park", "two men talk on a bench", "a girl sits"]


def check_json(cli, run, tmp_path, sources, translations) -> list[dict]:
    (tmp_path / "s").write_text("".join(s + "\n" for s in sources), encoding="utf-8")
    (tmp_path / "t").write_text("".join(t + "\n" for t in translations), encoding="utf-8")
    said = cli("check", "--run", run, "--json", "--source", tmp_path / "s", "--target", tmp_path / "t")
    assert said.code == 0, said.err
    return [json.loads(line) for line in said.out.splitlines()]


def test_translate_answers_what_check_answers_of_the_same_pairs(run, cli, tmp_path):
    plain = cli("translate", "--run", run, "--beam", "2", *SOURCES, "")
    said = cli("translate", "--run", run, "--beam", "2", "--confidence", "json", *SOURCES, "")
    assert said.code == 0, said.err
    objects = [json.loads(line) for line in said.out.splitlines()]
    assert [o.pop("translation") for o in objects] == plain.out.splitlines()
    translations = plain.out.splitlines()
    assert objects == check_json(cli, run, tmp_path, [*SOURCES, ""], translations)
    assert objects[-1]["flags"] == [] and objects[0]["words"]  # a blank line: nothing to check


def test_marks_follow_the_words_to_check(run, cli):
    said = cli("translate", "--run", run, "--confidence", "marks", *SOURCES)
    answers = cli("translate", "--run", run, "--confidence", "json", *SOURCES)
    for line, a in zip(said.out.splitlines(), map(json.loads, answers.out.splitlines()), strict=True):
        text, score, flags = line.split("\t")
        words = text.split(" ")
        assert [w.removesuffix(MARK) for w in words] == [w["word"] for w in a["words"]]
        assert [w.endswith(MARK) for w in words] == [w["unsure"] for w in a["words"]]
        assert float(score) == a["score"] and flags == ",".join(a["flags"])


@pytest.mark.parametrize(
    "args,message",
    [
        (["--confidence", "mark"], "'mark' is not one of marks, json"),
        (["--confidence", "json", "--nbest", "2"], "'--nbest', '--num-samples': checks the one translation"),
        (["--confidence", "json", "--format", "text"], "'--confidence': goes with lines"),
    ],
)
def test_what_confidence_cannot_do_is_one_line(run, cli, args, message, tmp_path):
    (tmp_path / "doc.txt").write_text("A dog runs. A cat sleeps.\n", encoding="utf-8")
    given = ["--input", tmp_path / "doc.txt"] if "--format" in args else ["a dog"]
    said = cli("translate", "--run", run, *args, *given)
    assert said.code == 2 and message in said.err and said.out == "", said.err


def test_evaluate_adds_each_line_and_the_count_of_each_flag(run, cli, tmp_path):
    data = write_multi30k(tmp_path / "corpus", {"test_2016_flickr": 5})
    said = cli("evaluate", "--run", run, "--data-dir", data, "--json", "--confidence", "--beam", "2")
    assert said.code == 0, said.err
    report = json.loads(said.out)
    lines = report["lines"]
    assert [x["line"] for x in lines] == [1, 2, 3, 4, 5] and report["sentences"] == 5
    counts = {}
    for x in lines:
        assert 0 <= x["chrf"] <= 100 and {"source", "hypothesis", "reference", "score"} <= set(x)
        for flag in x["flags"]:
            counts[flag] = counts.get(flag, 0) + 1
    assert report["flagged"] == counts
    assert "lines" not in json.loads(cli("evaluate", "--run", run, "--data-dir", data, "--json").out)


def test_the_server_answers_translations_with_checks_objects(run, cli, tmp_path):
    from fastapi.testclient import TestClient

    from tests.serve_helpers import make_app

    with TestClient(make_app(run)) as client:
        asked = client.post("/translate", json={"text": SOURCES, "beam": 2, "confidence": True}).json()
        checked = client.post("/check", json={"source": SOURCES, "translation": asked["translations"]})
        assert asked["confidence"] == checked.json()
        assert "confidence" not in client.post("/translate", json={"text": SOURCES}).json()


WORDS = [
    "apple",
    "bread",
    "chair",
    "dance",
    "eagle",
    "flame",
    "grape",
    "house",
    "juice",
    "knife",
    "lemon",
    "mango",
    "night",
    "ocean",
    "piano",
]


@pytest.fixture(scope="module")
def copier(tmp_path_factory) -> tuple:
    """A tiny Transformer trained to copy sentences of 3-7 words (half with an "and" inside), and
    its corpus (train, val: TSV), seeded: it learns the task in about 15 s on 2 cores."""
    root = tmp_path_factory.mktemp("copier")
    rng = random.Random(0)
    for split, n in (("train", 1500), ("val", 60)):
        lines = []
        for _ in range(n):
            words = [rng.choice(WORDS) for _ in range(rng.randint(3, 7))]
            if rng.random() < 0.5:
                words.insert(rng.randint(2, len(words)), "and")
            lines.append(f"{' '.join(words)} .\t{' '.join(words)} .\n")
        (root / f"{split}.tsv").write_text("".join(lines))
    config = TrainConfig(
        corpus=str(root / "{split}.tsv"), src="src", tgt="tgt", vocab_size=72, max_tokens=1024, lr=2e-3,
        warmup=50, label_smoothing=0.0, subword_alpha=0.0, epochs=12, device="cpu", bf16=False,
        guided_alignment=None,  # seeded throughout: eflomal's links (auto, from 1,000 pairs) are not
    )  # fmt: skip
    train(root / "run", config, replace(REVERSE_MODEL, max_positions=64))
    return root / "run", root


def test_a_calibration_is_fitted_to_the_run_and_an_omission_flagged(copier, tiny_run, cli, tmp_path):
    run, data = copier
    said = cli("check", "--run", run, "--calibrate", "--data-dir", data)
    assert said.code == 0 and f"wrote {run / RUN_FILE}" in said.err, said.err
    fitted = Calibration.read(run / RUN_FILE)
    assert (
        fitted != Calibration.read()
        and fitted.fitted_on == f"{run.name}, {data}/{{split}}.tsv val (60 pairs)"
    )
    source = "piano ocean flame grape mango and knife ."
    whole, cut = check_json(cli, run, tmp_path, [source] * 2, [source, "piano ocean ."])
    assert "omission" not in whole["flags"] and whole["uncovered"] == []
    assert "omission" in cut["flags"] and cut["uncovered"] and cut["omission"] > 0.99 > whole["omission"]
    assert [w["unsure"] for w in cut["words"]] == [w["logprob"] <= fitted.unsure_word for w in cut["words"]]
    tiny, tiny_data = tiny_run  # trained 4 steps: its translations hold no word of their references
    said = cli("check", "--run", tiny, "--calibrate", "--data-dir", tiny_data)
    assert said.code == 2 and "too few pairs to fit the flags" in said.err and said.err.count("\n") == 1
    assert not (tiny / RUN_FILE).exists()
    said = cli("check", "--run", run, "--calibrate", "--source", tmp_path / "s", "--data-dir", data)
    assert said.code == 2 and "give no --source or --target" in said.err
    assert cli("check", "--run", run).code == 2


def test_the_explorer_marks_words_to_check_and_says_why(run, cli, tmp_path, browser):
    page_file = tmp_path / "page.html"
    said = cli("translate", "--run", run, "--confidence", "json", "--attention-html", page_file, *SOURCES[:2])
    assert said.code == 0, said.err
    data = json.loads(re.search(r'id="maps-data">(.*?)</script>', page_file.read_text()).group(1))
    trust = data["sentences"][0]["trust"]
    assert len(trust["target"]) == len(data["sentences"][0]["target"])
    unsure = [i for i, w in enumerate(trust["target"]) if w and w["unsure"]]
    uncovered = [i for i, w in enumerate(trust["source"]) if w and w["uncovered"]]
    assert unsure, "an untrained model is unsure of its words"
    page = browser.new_page()
    page.goto(page_file.as_uri())
    page.wait_for_selector("#explorer[data-state=ready]")
    indices = "cs => cs.map(c => +c.dataset.index)"
    marked = page.eval_on_selector_all("#target-strip .piece.unsure", indices)
    assert marked == unsure
    outlined = page.eval_on_selector_all(
        "#source-strip .piece.uncovered", "cs => cs.map(c => +c.dataset.index)"
    )
    assert outlined == uncovered
    title = page.get_attribute(f"#target-strip .piece[data-index='{unsure[0]}']", "title")
    assert "check this word" in title and f"{trust['target'][unsure[0]]['logprob']:.2f}" in title
    row = page.text_content("#trust-row")
    assert f"{trust['score']:.3f}" in row and ("no flags" in row) == (not trust["flags"])
    page.close()


def test_the_server_refuses_bad_pairs_in_one_json_line(run):
    from fastapi.testclient import TestClient

    from tests.serve_helpers import make_app

    with TestClient(make_app(run)) as client:
        counts_differ = {"source": SOURCES[:2], "translation": SOURCES[:1]}
        said = client.post("/check", json=counts_differ)
        assert 400 <= said.status_code < 500 and said.headers["content-type"] == "application/json"
        assert said.json()["error"].count("\n") == 0, said.json()
        one_long = {"source": ["a dog", "a cat"], "translation": ["chien " * 100, "chat"]}
        long = client.post("/check", json=one_long).json()
        assert long[0]["flags"] == ["too long"] and long[1]["words"]
        said = client.post("/translate", json={"text": "a dog", "confidence": "yes"})
        assert said.status_code == 422
        blank = client.post("/check", json={"source": ["a dog", ""], "translation": ["", "un chat"]})
        assert [a["flags"] for a in blank.json()] == [["empty"], ["no source"]]
