"""Forced decoding: `score` gives the numbers search gives, batched or not, with clean errors."""

import json

import pytest
import torch

from seq2seq.decoding.forced import score_ids
from seq2seq.decoding.search import DecodeOptions, beam_search, pad
from seq2seq.errors import Seq2SeqError
from tests.cli_helpers import run_cli
from tests.conftest import tiny_model, write_run

SOURCES = [[5, 9, 12, 3], [7, 3], [11, 4, 6, 8, 20, 3], [30, 31, 3]]


@pytest.mark.parametrize("beam", [1, 5])
@pytest.mark.parametrize("alpha", [0.0, 1.0])
def test_score_of_each_hypothesis_equals_the_score_search_gave_it(beam, alpha):
    model = tiny_model(seed=6)
    found = beam_search(
        model, pad(SOURCES), torch.full((4,), 9), DecodeOptions(beam=beam, length_penalty=alpha, nbest=beam)
    )
    src = [s for s, hyps in zip(SOURCES, found, strict=True) for _ in hyps]
    hyps = [h for hyps in found for h in hyps]
    scores = score_ids(model, src, [h.tokens for h in hyps], length_penalty=alpha)
    assert [s.score for s in scores] == pytest.approx([h.score for h in hyps], abs=1e-4)
    assert [s.pieces for s in scores] == [len(h.tokens) + 1 for h in hyps]


def test_a_batch_scores_as_one_by_one():
    model = tiny_model(seed=7)
    targets = [[4, 5, 6], [], [9, 9, 9, 9, 9, 9], [12]]
    batched = score_ids(model, SOURCES, targets)
    alone = [score_ids(model, [s], [t])[0] for s, t in zip(SOURCES, targets, strict=True)]
    assert [s.total for s in batched] == pytest.approx([s.total for s in alone], abs=1e-5)


def test_a_target_longer_than_the_model_is_an_error_naming_its_line():
    model = tiny_model()  # max_positions 64
    with pytest.raises(Seq2SeqError, match="target line 2 has 70 pieces; the model's limit is 63"):
        score_ids(model, SOURCES[:2], [[4], [5] * 70])


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    return write_run(tmp_path_factory.mktemp("score-run"), lambda v: tiny_model(vocab_size=v, seed=3))


def test_score_from_the_command_line(run_dir, tmp_path, capsys, monkeypatch):
    (tmp_path / "src").write_text("a dog runs\n\nthe sun\n")
    (tmp_path / "tgt").write_text("un chien court\nle chat\n\n")
    args = ["score", "--run", run_dir, "--source", tmp_path / "src", "--target", tmp_path / "tgt"]
    plain = run_cli(args, capsys, monkeypatch)
    assert plain.code == 0, plain.err
    rows = [line.split("\t") for line in plain.out.splitlines()]
    assert len(rows) == 3 and all(len(r) == 4 for r in rows) and rows[2][3] == "1"  # empty: just EOS
    as_json = [json.loads(line) for line in run_cli([*args, "--json"], capsys, monkeypatch).out.splitlines()]
    assert [round(r["score"], 4) for r in as_json] == [float(r[0]) for r in rows]
    (tmp_path / "tgt").write_text("un chien court\n")
    short = run_cli(args, capsys, monkeypatch)
    assert short.code == 2 and "has 3 lines but" in short.err and short.out == ""
