"""One atomic writer for every output: each file a command writes is filled through a new temporary
beside it (mkstemp: O_EXCL, O_NOFOLLOW, a name nobody could plant) and renamed over it. For every
output option of every command that writes one, links and inputs planted at the names a writer
with a fixed temporary would use (OUT.partial, .OUT.tmp, OUT.tmp, OUT~) are neither followed nor
truncated: nothing outside the declared output changes."""

import os

import pytest

RUN_SEED = 4  # the `run` fixture's weights (conftest.py)

PLANTED = ["{}.partial", ".{}.tmp", "{}.tmp", "{}~", ".{}.partial"]  # every name a fixed temporary takes

# (command, its output option, what else it needs, whether matplotlib draws it)
OUTPUTS = [
    ("translate", "--output", [], False),
    ("translate", "--attention-html", [], False),
    ("translate", "--beam-trace", [], False),
    ("translate", "--attention-png", [], True),
    ("evaluate", "--output", ["--source", "{src}", "--reference", "{src}"], False),
    ("align", "--output", ["--source", "{src}", "--target", "{src}"], False),
    ("align", "--attention-png", ["--source", "{one}", "--target", "{one}"], True),
]


def files(folder) -> dict:
    """Every file under `folder`, as bytes, and every link, as where it points."""
    out = {}
    for path in sorted(folder.rglob("*")):
        if path.is_symlink():
            out[str(path)] = ("link", os.readlink(path))
        elif path.is_file():
            out[str(path)] = path.read_bytes()
    return out


@pytest.mark.parametrize("planted", ["link", "input"])
@pytest.mark.parametrize("command, flag, needs, draws", OUTPUTS)
def test_nothing_outside_the_output_changes(run, cli, tmp_path, command, flag, needs, draws, planted):
    if draws:
        pytest.importorskip("matplotlib")
    (tmp_path / "src.txt").write_text("a dog runs\nthe cat sleeps\n")
    (tmp_path / "one.txt").write_text("a dog runs\n")
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    out = tmp_path / ("out.png" if draws else "out.txt")
    for pattern in PLANTED:
        name = tmp_path / pattern.format(out.name)
        if planted == "link":
            name.symlink_to(victim)
        else:
            name.write_text("an input\n")
    extra = [a.format(src=tmp_path / "src.txt", one=tmp_path / "one.txt") for a in needs]
    text = ["a dog runs"] if command == "translate" else []
    if command == "translate" and planted == "input":  # the input planted where a temporary would be
        text, extra = [], ["--input", tmp_path / PLANTED[0].format(out.name)]
    before = files(tmp_path)
    said = cli(command, "--run", run, "--max-len", "6", *extra, flag, out, *text)
    assert said.code == 0, said.err
    after = files(tmp_path)
    changed = {name for name in set(before) | set(after) if before.get(name) != after.get(name)}
    assert changed == {str(out)}, changed
    assert victim.read_text() == "precious\n"


def test_a_link_at_the_output_is_written_through_and_kept(run, cli, tmp_path):
    target = tmp_path / "real.txt"
    target.write_text("old\n")
    (tmp_path / "out.txt").symlink_to(target)
    said = cli("translate", "--run", run, "--max-len", "6", "--output", tmp_path / "out.txt", "a dog runs")
    assert said.code == 0 and (tmp_path / "out.txt").is_symlink() and target.read_text() != "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt", "real.txt"]
