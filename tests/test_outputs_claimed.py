"""Every file a command writes is claimed before any work, against every run the command reads:
an output inside --run, --reverse-run or --baseline-run is refused in one line and the run is left
as it was; an output in a folder that does not exist is said before anything is decoded; align's
numbered pictures (FILE-<line>.png) are claimed as FILE is. A new output option or a new run a
command reads is covered by adding it to WRITES or READS."""

import pytest

from tests.conftest import tiny_model, write_run

# command -> the options that name a file it writes
WRITES = {
    "translate": ["--output", "--attention-html", "--attention-png", "--beam-trace"],
    "evaluate": ["--output"],
    "align": ["--output", "--attention-html", "--attention-png"],
}
# command -> the options that name a run it reads, --run included
READS = {"translate": ["--run"], "evaluate": ["--run", "--baseline-run"], "align": ["--run", "--reverse-run"]}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two tiny runs: the one under test and another a command reads beside it."""
    root = tmp_path_factory.mktemp("claimed")
    main = write_run(root / "main", lambda v: tiny_model(vocab_size=v, seed=5))
    other = write_run(root / "other", lambda v: tiny_model(vocab_size=v, seed=6))
    return main, other


def snapshot(folder) -> dict:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def arguments(command: str, tmp_path, main, other, reads: str) -> list:
    """A command line that would run, reading `main` as --run and `other` as `reads` (if not --run)."""
    source, target = tmp_path / "src.txt", tmp_path / "tgt.txt"
    source.write_text("a dog runs\nthe cat sleeps\n")
    target.write_text("un chien court\nle chat dort\n")
    args = {
        "translate": ["translate", "--run", main, "--input", source],
        "evaluate": ["evaluate", "--run", main, "--source", source, "--reference", target],
        "align": ["align", "--run", main, "--source", source, "--target", target],
    }[command]
    return args if reads == "--run" else [*args, reads, other]


CASES = [
    (command, flag, reads) for command, flags in WRITES.items() for flag in flags for reads in READS[command]
]


@pytest.mark.parametrize(("command", "flag", "reads"), CASES)
def test_no_output_lies_inside_a_run_the_command_reads(runs, cli, tmp_path, command, flag, reads):
    main, other = runs
    protected = main if reads == "--run" else other
    before = snapshot(protected)
    for name in ("model.safetensors", "config.json"):
        args = arguments(command, tmp_path, main, other, reads)
        result = cli(*args, flag, protected / name)
        assert result.code == 2 and "lies inside the run directory" in result.err, result.err
        assert len(result.err.strip().splitlines()) == 1 and "Traceback" not in result.err
    assert snapshot(protected) == before


@pytest.mark.parametrize(("command", "flag"), [(c, f) for c, flags in WRITES.items() for f in flags])
def test_an_output_in_a_missing_folder_is_refused_before_any_work(runs, cli, tmp_path, command, flag):
    main, other = runs
    result = cli(*arguments(command, tmp_path, main, other, "--run"), flag, tmp_path / "nodir" / "x.out")
    assert result.code == 2 and "does not exist" in result.err, result.err
    assert result.out == ""  # nothing decoded and printed first
    assert not (tmp_path / "nodir").exists()


def test_aligns_numbered_pictures_are_claimed_before_any_work(runs, cli, tmp_path):
    main, other = runs
    args = arguments("align", tmp_path, main, other, "--run")
    (tmp_path / "pic-1.png").write_text("a dog runs\nthe cat sleeps\n")  # a source named like a picture
    result = cli(*args[:-4], "--source", tmp_path / "pic-1.png", "--attention-png", tmp_path / "pic.png")
    assert result.code == 2 and "is also an input" in result.err, result.err
    assert (tmp_path / "pic-1.png").read_text() == "a dog runs\nthe cat sleeps\n"
    (tmp_path / "pic-2.png").symlink_to(main / "model.safetensors")  # a link into the run
    before = snapshot(main)
    result = cli(*args, "--attention-png", tmp_path / "pic.png")
    assert result.code == 2 and "lies inside the run directory" in result.err, result.err
    assert snapshot(main) == before
