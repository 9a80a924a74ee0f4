"""Every file a command writes is claimed before any work, against every run the command reads:
an output inside --run, --reverse-run or --baseline-run is refused in one line and the run is left
as it was; an output in a folder that does not exist is said before anything is decoded; align's
numbered pictures (FILE-<line>.png) are claimed as FILE is; no output is one of the command's
inputs; a command that writes a folder (train, export, import) never writes it in, over or
around the folder it reads. A new output option, a new run or file a command reads, or a new
folder-writing command is covered by adding it to WRITES, READS, INPUTS or FOLDERS."""

import itertools

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
# command -> the options that name a file of lines it reads
INPUTS = {
    "translate": ["--input", "--prefix-file", "--constraints-file", "--glossary"],
    "evaluate": ["--source", "--reference", "--baseline"],
    "align": ["--source", "--target", "--gold"],
}
# command -> (what it writes, what it reads): the commands that write a folder, never in, over or
# around a folder they read
FOLDERS = {"train": ("--run", "--init-from"), "export": ("OUT", "--run"), "import": ("OUT", "FOLDER")}


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


INPUT_CASES = [(c, flag, given) for c, flags in WRITES.items() for flag in flags for given in INPUTS[c]]


@pytest.mark.parametrize(("command", "flag", "given"), INPUT_CASES)
def test_no_output_is_one_of_the_commands_inputs(runs, cli, tmp_path, command, flag, given):
    main, _ = runs
    args = inputs(command, tmp_path, main)
    path = next(a for f, a in itertools.pairwise(args) if f == given)
    before = path.read_bytes()
    result = cli(*args, flag, path)
    assert result.code == 2 and "is also an input" in result.err, result.err
    assert len(result.err.strip().splitlines()) == 1 and path.read_bytes() == before


def inputs(command: str, tmp_path, main) -> list:
    """A command line that would run, with every file option of INPUTS given a file of its own."""
    lines = {"a dog runs\nthe cat sleeps\n": ["--input", "--source"], "0-0\n0-0\n": ["--gold"]}
    args = {"translate": ["translate"], "evaluate": ["evaluate"], "align": ["align"]}[command] + [
        "--run",
        main,
    ]
    for flag in INPUTS[command]:
        path = tmp_path / flag.strip("-")
        text = next((t for t, flags in lines.items() if flag in flags), "un chien court\nle chat dort\n")
        path.write_text(text)
        args += [flag, path]
    return args


@pytest.mark.parametrize("command", sorted(FOLDERS))
@pytest.mark.parametrize("place", ["same", "inside", "around"])
def test_a_written_folder_is_never_in_over_or_around_one_it_reads(runs, cli, tmp_path, command, place):
    from tests.conftest import write_multi30k

    main, _ = runs
    read = main
    if command == "import":
        from tests.marian_helpers import marian_folder

        read = tmp_path / "marian"
        marian_folder(read)
    written = {"same": read, "inside": read / "sub", "around": read.parent}[place]
    # train holds its --run's lock (.lock, left in place) before it looks at the start
    files = lambda: {p: p.read_bytes() for p in sorted(read.rglob("*")) if p.is_file() and p.name != ".lock"}  # noqa: E731
    before = files()
    args = {
        "train": ["train", "--max-steps", "1", "--data-dir", write_multi30k(tmp_path / "c", {"train": 20}),
                  "--run", written, "--init-from", read],
        "export": ["export", "--force", "--run", read, written],
        "import": ["import", "--force", read, written],
    }[command]  # fmt: skip
    result = cli(*args)
    assert result.code == 2 and len(result.err.strip().splitlines()) == 1, result.err
    assert files() == before
    assert not (read / "sub").exists()
