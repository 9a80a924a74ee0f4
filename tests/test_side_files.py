"""A run's side files (aligner.json beside aligner.safetensors, trust.json) record the weights they
were fitted to; one fitted to other weights is ignored with a notice naming the command that fits
it again. Every command that writes into a run takes the run's lock first: align-train and check
--calibrate refuse, in one line, a run another command is writing."""

import json

import pytest

from seq2seq.alignment.aligner import SETTINGS, load, save
from seq2seq.alignment.layer import AlignLayer
from seq2seq.runs import files as ckpt
from seq2seq.runs.identity import weights_digest
from seq2seq.runs.load import load_run
from seq2seq.runs.lock import run_lock
from seq2seq.trust.calibration import RUN_FILE, Calibration

RUN_SEED = 12  # the `run` fixture's weights (conftest.py)


@pytest.fixture
def copied(run, tmp_path):
    """A copy of the run that a test may retrain (its weights replaced)."""
    copy = tmp_path / "run"
    copy.mkdir()
    for name in (ckpt.CONFIG, ckpt.TOKENIZER, ckpt.BEST):
        (copy / name).write_bytes((run / name).read_bytes())
    return copy


def retrained(run) -> None:
    """The run's weights replaced, as a training that went on would."""
    model, _ = load_run(run)
    for p in model.parameters():
        p.data.add_(0.01)
    ckpt.save_weights(model, run / ckpt.BEST)


def test_an_alignment_layer_fitted_to_other_weights_is_ignored_with_a_notice(copied, capsys):
    model, _ = load_run(copied)
    save(copied, AlignLayer(model.cfg.d_model, 16, 4), {"threshold": 0.4})
    assert json.loads((copied / SETTINGS).read_text())["weights"] == weights_digest(copied)
    assert load(copied) is not None and capsys.readouterr().err == ""
    retrained(copied)
    assert load(copied) is None
    said = capsys.readouterr().err
    assert "fitted to other weights" in said and f"seq2seq align-train --run {copied}" in said
    assert said.count("\n") == 1


def test_a_trust_calibration_fitted_to_other_weights_gives_way_to_the_packages(copied, capsys):
    from dataclasses import replace

    own = replace(Calibration.read(), fitted_on="this run", weights=weights_digest(copied))
    own.write(copied / RUN_FILE)
    assert Calibration.of_run(copied).fitted_on == "this run"
    retrained(copied)
    assert Calibration.of_run(copied) == Calibration.read()
    assert "seq2seq check --calibrate" in capsys.readouterr().err


@pytest.mark.parametrize(
    "command",
    [
        ["check", "--calibrate"],
        ["align-train", "--epochs", "1", "--pairs", "4"],
    ],
)
def test_a_command_that_writes_into_a_run_waits_for_no_other_writer(cli, copied, corpus_dir, command):
    with run_lock(copied):
        before = sorted(p.name for p in copied.iterdir())
        said = cli(*command, "--run", copied, "--data-dir", corpus_dir)
    assert said.code == 2 and "is being written by another seq2seq" in said.err, said.err
    assert sorted(p.name for p in copied.iterdir()) == before


def test_check_flags_a_pair_it_cannot_check_on_its_own_line_and_answers_the_rest(cli, run, tmp_path):
    long = " ".join(["chien"] * 400)
    (tmp_path / "src.txt").write_text(f"a dog runs\n\n{long}\nthe cat sleeps\n")
    (tmp_path / "tgt.txt").write_text(f"un chien court\n\n{long}\nle chat dort\n")
    said = cli(
        "check", "--run", run, "--source", tmp_path / "src.txt", "--target", tmp_path / "tgt.txt", "--json"
    )
    assert said.code == 0, said.err
    answers = [json.loads(line) for line in said.out.splitlines()]
    assert len(answers) == 4 and answers[1]["flags"] == [] and answers[2]["flags"] == ["too long"]
    assert answers[0]["words"] and answers[3]["words"]  # the others checked
    (tmp_path / "tgt.txt").write_text("un chien court\n\nchien\nle chat dort\n")
    said = cli(
        "check", "--run", run, "--source", tmp_path / "src.txt", "--target", tmp_path / "tgt.txt", "--json"
    )
    assert "source cut" in json.loads(said.out.splitlines()[2])["flags"]
