"""scripts.plot_curves: the minutes to a validation BLEU, read from metrics rows of run
directories or results entries, printed and drawn; a name that is neither is one clean error."""

import json
import subprocess
import sys

import pytest

from scripts import plot_curves
from scripts.common import REPO
from seq2seq.errors import Seq2SeqError
from seq2seq.views import plots


def rows(*bleus: float) -> list[dict]:
    """One validation a minute; then the averaged weights' row, which has no time of its own."""
    out = [{"step": 10 * i, "epoch": i, "val_bleu": b, "elapsed_s": 60.0 * i} for i, b in enumerate(bleus, 1)]
    return [*out, {"step": out[-1]["step"], "val_bleu": 99.0, "elapsed_s": 1e9, "averaged": 5}]


def test_minutes_to_bleu_is_the_first_validation_that_reached_it():
    assert plots.minutes_to_bleu(rows(30.0, 49.9, 50.0, 48.0, 51.0), 50.0) == 3.0
    assert plots.minutes_to_bleu(rows(30.0, 52.0), 50.0) == 2.0
    assert plots.minutes_to_bleu(rows(30.0, 49.0), 50.0) is None  # the averaged row does not count


def test_names_are_run_directories_or_results_entries(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows(20.0, 55.0)))
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"en-fr-x": {"metrics": rows(50.5)}}))
    curves = plot_curves.curves([str(run), "en-fr-x"], results)
    assert curves[str(run)][1]["val_bleu"] == 55.0 and curves["en-fr-x"][0]["val_bleu"] == 50.5
    summary = plot_curves.summary(curves, 50.0).splitlines()
    assert summary[2].split("|")[2].strip() == "2.0" and summary[3].split("|")[2].strip() == "1.0"
    with pytest.raises(Seq2SeqError, match="neither a run directory nor an entry"):
        plot_curves.curves(["en-fr-missing"], results)
    (tmp_path / "empty").mkdir()
    with pytest.raises(Seq2SeqError, match="no validation yet"):
        plot_curves.curves([str(tmp_path / "empty")], results)


def test_main_draws_the_curves_and_refuses_an_unknown_name_in_one_line(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows(20.0, 40.0, 45.0)))
    png = tmp_path / "curves.png"
    plot_curves.main([str(run), "--bleu", "42", "--out", str(png)])
    assert "| 3.0 | 99.00 | 30 |" in capsys.readouterr().out.replace(f"| {run} ", "")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(SystemExit) as exit_:
        plot_curves.main(["no-such-entry-or-run", "--out", str(tmp_path / "no.png")])
    assert exit_.value.code == 1
    assert capsys.readouterr().err.strip().count("\n") == 0
    assert not (tmp_path / "no.png").exists()


def test_it_runs_as_a_module_from_the_repository_root(tmp_path):
    """How every script runs: `python -m scripts.plot_curves ...` from the root, which puts the
    root on the path for `scripts.common` and the checkout's seq2seq."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows(20.0, 55.0)))
    done = subprocess.run(
        [sys.executable, "-m", "scripts.plot_curves", str(run)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert f"| {run} | 2.0 | 99.00 | 20 |" in done.stdout
