"""scripts.figures: a figure's fingerprint names the code it measured (the same at a commit and in
that commit's clean working tree, another once a file it depends on changes), `--check` finds the
stale figures and the pages whose blocks differ from their files, and `--render` writes them."""

import json
import subprocess
from pathlib import Path

import pytest

from scripts import figures, first_run, reproduce_results

ROOT = Path(__file__).resolve().parent.parent


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A git repository with a package of two files and a page holding one figure block; the
    figure `quality-en-fr` depends on the package alone here."""
    root = tmp_path / "repo"
    (root / "pkg" / "sub").mkdir(parents=True)
    (root / "pkg" / "a.py").write_text("A = 1\n")
    (root / "pkg" / "sub" / "b.py").write_text("B = 2\n")
    (root / "pkg" / "notes.txt").write_text("not code\n")
    (root / "docs").mkdir()
    (root / "README.md").write_text("# Title\n\n<!-- figure: quality-en-fr -->\n<!-- /figure -->\n\nEnd.\n")
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start")
    monkeypatch.setitem(figures.DEPENDS, "quality-en-fr", ("pkg",))
    return root


def a_figure(root: Path, commit: str) -> figures.Figure:
    return figures.Figure(
        "quality-en-fr",
        ["test set", "BLEU"],
        [["test_2016_flickr", "61.6"]],
        "seq2seq train",
        commit,
        "2026-12-06",
        "AMD EPYC, family 26 model 2 (avx2)",
        "2.13.0+cpu",
        figures.fingerprint(("pkg",), commit, root),
        note="A note.",
    )


def test_a_fingerprint_is_the_same_at_a_commit_and_in_its_clean_tree_and_moves_with_the_code(repo):
    head = figures.clean_commit(("pkg",), repo)
    at_commit = figures.fingerprint(("pkg",), head, repo)
    assert figures.fingerprint(("pkg",), root=repo) == at_commit
    (repo / "pkg" / "notes.txt").write_text("changed, but no code\n")
    assert figures.fingerprint(("pkg",), root=repo) == at_commit
    (repo / "pkg" / "sub" / "b.py").write_text("B = 3\n")
    assert figures.fingerprint(("pkg",), root=repo) != at_commit
    with pytest.raises(SystemExit, match="uncommitted changes under pkg"):
        figures.clean_commit(("pkg",), repo)


def test_check_finds_pages_out_of_date_and_render_writes_them_once(repo):
    folder = repo / "docs" / "figures"
    figures.write(a_figure(repo, git(repo, "rev-parse", "--short", "HEAD").strip()), folder)
    problems = figures.problems(repo, folder)
    assert problems == ["README.md: out of date (python -m scripts.figures --render)"]
    page = repo / "README.md"
    page.write_text(figures.render(page.read_text(), folder))
    text = page.read_text()
    assert "| test_2016_flickr | 61.6 |" in text and "A note." in text and text.endswith("\nEnd.\n")
    assert "at commit" in text and "family" not in text  # the CPU by its name and flags on a page
    assert figures.render(text, folder) == text
    assert figures.problems(repo, folder) == []
    page.write_text(text.replace("61.6", "62.0"))  # a figure typed over by hand
    assert figures.problems(repo, folder) == ["README.md: out of date (python -m scripts.figures --render)"]


def test_check_finds_a_stale_figure_and_a_block_without_its_file(repo):
    folder = repo / "docs" / "figures"
    figures.write(a_figure(repo, git(repo, "rev-parse", "--short", "HEAD").strip()), folder)
    page = repo / "README.md"
    unmeasured = "<!-- figure: first-run -->\n<!-- /figure -->\n"
    page.write_text(figures.render(page.read_text(), folder) + unmeasured)
    (repo / "pkg" / "a.py").write_text("A = 2\n")
    assert figures.problems(repo, folder) == [
        "quality-en-fr: stale, the code it measured changed since commit "
        + git(repo, "rev-parse", "--short", "HEAD").strip(),
        "README.md: the block 'first-run' has no figure file",
    ]
    with pytest.raises(ValueError, match="no figure"):
        figures.write(figures.Figure("made-up", [], [], "", "", "", "", "", ""), folder)


def test_the_pages_figures_come_from_an_en_fr_entry_on_committed_code(repo, monkeypatch):
    head = git(repo, "rev-parse", "--short", "HEAD").strip()
    monkeypatch.setitem(figures.DEPENDS, "train-throughput", ("pkg",))
    fingerprint = figures.fingerprint
    monkeypatch.setattr(figures, "fingerprint", lambda paths, commit=None: fingerprint(paths, commit, repo))
    scores = {"bleu": 61.04, "chrf": 76.1, "bleu_signature": "nrefs:1|tok:13a"}
    rows = [
        {"step": 100, "epoch": 1, "val_bleu": 40.0, "elapsed_s": 60.0, "tokens_per_s": 8000.0},
        {"step": 200, "epoch": 2, "val_bleu": 50.0, "elapsed_s": 120.0, "tokens_per_s": 9000.0},
        {"step": 200, "epoch": 2, "val_bleu": 51.0, "elapsed_s": 130.0, "averaged": 5},
    ]
    entry = {
        "pair": "en-fr",
        "commit": head,
        "command": "seq2seq train --max-minutes 50",
        "date": "2026-12-06",
        "cpu": "test CPU",
        "torch": "2.13.0",
        "metrics": rows,
        "test": {"test_2016_flickr": {"greedy": scores, "beam5": {**scores, "bleu": 61.6}}},
    }
    quality, pace = reproduce_results.figures_of(entry)
    assert quality.rows == [["test_2016_flickr", "61.0 / 76.1", "61.6 / 76.1"]]
    assert pace.rows == [["small", "2", "200", "2", "8,500", "1.00", "51.0"]]
    assert quality.fingerprint == pace.fingerprint == fingerprint(("pkg",), root=repo)
    for bad in ({"commit": head + "+uncommitted changes"}, {"pair": "en-de"}):
        with pytest.raises(ValueError, match="committed code"):
            reproduce_results.figures_of({**entry, **bad})


def test_the_first_run_figure_runs_the_readmes_own_commands():
    commands = first_run.readme_commands((ROOT / "README.md").read_text(encoding="utf-8"))
    assert commands[0].startswith("seq2seq train ") and "--max-minutes" in commands[0]
    assert any(c.startswith("seq2seq translate ") for c in commands)


def test_every_figure_file_is_a_declared_figure_with_its_stamp():
    for file in sorted((ROOT / "docs" / "figures").glob("*.json")):
        data = json.loads(file.read_text(encoding="utf-8"))
        assert data["name"] == file.stem and file.stem in figures.DEPENDS
        assert all(data[key] for key in ("command", "commit", "date", "cpu", "torch", "fingerprint"))
        assert all(len(row) == len(data["columns"]) for row in data["rows"])
