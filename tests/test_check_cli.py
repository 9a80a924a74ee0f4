"""`seq2seq check`: a line (or a JSON object) per pair, the library's answer, a blank side flagged
rather than refused; bad input one line and exit 2, nothing written."""

import json

from seq2seq.runs.load import load_run
from seq2seq.trust.calibration import Calibration
from seq2seq.trust.flags import answer
from seq2seq.trust.signals import check_pairs

SOURCES = ["a dog runs in the park", "two men talk", "", "a girl sits", ""]
TARGETS = [
    "un chien court dans le parc",
    "un chat dort un chat dort un chat dort un chat dort",
    "un chat",
    "",
    "",
]


def files(tmp_path, sources=SOURCES, targets=TARGETS):
    (tmp_path / "src").write_text("".join(s + "\n" for s in sources), encoding="utf-8")
    (tmp_path / "tgt").write_text("".join(t + "\n" for t in targets), encoding="utf-8")
    return ["--source", tmp_path / "src", "--target", tmp_path / "tgt"]


def test_a_json_object_a_pair_is_the_librarys_answer_and_a_blank_side_is_flagged(run, cli, tmp_path):
    said = cli("check", "--run", run, "--json", *files(tmp_path))
    assert said.code == 0, said.err
    objects = [json.loads(line) for line in said.out.splitlines()]
    assert len(objects) == len(SOURCES)
    model, tokenizer = load_run(run)
    library = [answer(s, Calibration.read()) for s in check_pairs(model, tokenizer, SOURCES[:2], TARGETS[:2])]
    assert objects[:2] == json.loads(json.dumps(library))
    assert objects[2]["flags"] == ["no source"] and objects[3]["flags"] == ["empty"]
    assert objects[4]["flags"] == [] and objects[4]["score"] == 0.0
    for o in objects:
        assert {"score", "omission", "hallucination", "flags"} <= set(o)
    assert [w["word"] for w in objects[0]["words"]] == TARGETS[0].split()


def test_the_plain_line_is_score_omission_hallucination_flags(run, cli, tmp_path):
    said = cli("check", "--run", run, *files(tmp_path))
    lines = said.out.splitlines()
    assert said.code == 0 and len(lines) == len(SOURCES)
    fields = lines[1].split("\t")
    assert len(fields) == 4 and float(fields[0]) < 0 and "repetition" in fields[3].split(",")
    assert lines[3].endswith("\tempty")


def test_bad_input_is_one_line_and_exit_2(run, cli, tmp_path):
    said = cli("check", "--run", run, *files(tmp_path, SOURCES, TARGETS[:3]))
    assert said.code == 2 and "has 5 lines but" in said.err and said.err.count("\n") == 1
    (tmp_path / "bad").write_bytes(b"un \xff chien\n")
    said = cli("check", "--run", run, "--source", tmp_path / "bad", "--target", tmp_path / "bad")
    assert said.code == 2 and "not valid UTF-8" in said.err and said.err.count("\n") == 1
    said = cli("check", "--run", run, *files(tmp_path, ["a"], ["chien " * 300]))
    assert said.code == 0 and said.out.split("\t")[-1] == "too long\n"  # flagged, not an error


def test_the_server_answers_the_same_objects(run, cli, tmp_path):
    from fastapi.testclient import TestClient

    from tests.serve_helpers import make_app

    said = cli("check", "--run", run, "--json", *files(tmp_path, SOURCES[:2], TARGETS[:2]))
    with TestClient(make_app(run)) as client:
        answer = client.post("/check", json={"source": SOURCES[:2], "translation": TARGETS[:2]})
        assert answer.status_code == 200 and answer.json() == [
            json.loads(line) for line in said.out.splitlines()
        ]
        odd = client.post("/check", json={"source": SOURCES[:2], "translation": TARGETS[:1]})
        assert (
            odd.status_code == 422
            and odd.json()["error"] == "2 sources but 1 translations; give one a source"
        )
