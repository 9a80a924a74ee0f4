"""What `translate` reads: any text (control characters, any Unicode, a 10,000-character line,
Windows line endings, no final newline, blank lines, n-best lists included) gives one line out per
line in; an input file it cannot read or decode is one line, exit 2."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.cli_helpers import run_process

NO_CHECKS = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]


RUN_TRAINED = True  # conftest's `run` is the CLI-trained tiny run


def lines_out(text: str) -> list[str]:
    assert text.endswith("\n") or text == ""
    return text.split("\n")[:-1]


def test_awkward_input_gives_one_line_per_line(run, cli):
    awkward = [
        "",
        "   \t ",
        "x" * 10_000,
        "😀 日本語 Привет مرحبا",
        "a\x00b\x07c\x1b[31m",
        "\x0c\u2028",
        "ok",
    ]
    result = cli("translate", "--run", run, "--beam", "2", stdin="\n".join(awkward).encode() + b"\n")
    assert result.code == 0, result.err
    out = lines_out(result.out)
    assert len(out) == len(awkward)
    assert out[0] == "" and out[1] == ""
    assert "truncated" in result.err and result.err.count("\n") == 1  # the 10,000-character line


def test_windows_line_endings_and_missing_final_newline(run, cli):
    result = cli("translate", "--run", run, "--greedy", stdin=b"a dog\r\nthe cat\r\ntwo men")
    assert result.code == 0 and len(lines_out(result.out)) == 3


# Any text UTF-8 can encode (lone surrogates cannot: such bytes are refused, naming the line);
# derandomized, so every run tries the same examples.
UNICODE = st.characters(blacklist_characters="\n", blacklist_categories=("Cs",))


@settings(max_examples=25, deadline=None, suppress_health_check=NO_CHECKS, derandomize=True)
@given(st.lists(st.text(alphabet=UNICODE, max_size=40), max_size=6))
def test_any_unicode_lines_give_one_line_out_per_line_in(run, cli, lines):
    stdin = "".join(line + "\n" for line in lines).encode("utf-8")
    result = cli("translate", "--run", run, "--greedy", "--max-len", "8", stdin=stdin)
    assert result.code == 0, result.err
    assert len(lines_out(result.out)) == len(lines)


def test_nbest_gives_a_line_for_a_blank_input_line(tiny_run):
    result = run_process(["translate", "--run", tiny_run[0], "--beam", "2", "--nbest", "2", "--max-len", "3"],
                         stdin=b"a dog\n\nthe cat\n")  # fmt: skip
    numbers = [line.split(" ||| ")[0] for line in result.out.splitlines()]
    assert result.code == 0 and numbers == ["0", "0", "1", "2", "2"], result.out


@pytest.mark.parametrize(
    "make,message",
    [
        (lambda p: p.write_bytes(b"fine\nbad \xfe\n"), "line 2 is not valid UTF-8"),
        (lambda p: None, "cannot read"),
        (lambda p: p.mkdir(), "is a directory"),
    ],
)
def test_bad_input_file(run, cli, tmp_path, make, message):
    path = tmp_path / "input.txt"
    make(path)
    result = cli("translate", "--run", run, "--input", path)
    assert result.code == 2 and message in result.err and result.err.count("\n") == 1
