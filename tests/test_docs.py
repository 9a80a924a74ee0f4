"""The pages a user reads (README.md, docs/*.md but the log) say what the tool does today: no
history outside docs/log.md, no page over 300 lines, figures only from their figure files, and
every command in a command block one the command line (or the script) accepts as written."""

import argparse
import re
import runpy
import shlex
import sys
from pathlib import Path

import pytest
import typer

from scripts import figures
from seq2seq.cli.app import UsageError, app

ROOT = Path(__file__).resolve().parent.parent
LOG = ROOT / "docs" / "log.md"
PAGES = [p for p in figures.pages(ROOT) if p != LOG]
# what narrates history rather than saying what the tool does
HISTORY = [
    r"\b20\d\d-\d\d-\d\d\b",  # a date
    r"\bcommit [0-9a-f]{7,40}\b",
    r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,12}\b",  # a commit id alone
    r"still to be (made|done|measured)",
    r"\b(an?|the|this) (earlier|later|previous|last) (run|session|measurement|commit)s?\b",
    r"\bwe (tried|measured|found)\b",
    r"\bused to be\b",
    r"\bat the time\b",
    # and words a newcomer does not know: a CPU's code where its name and flags say it, the
    # project's slang for a training option, its settings and its time limit
    r"\bfamily \d+ model \d+\b",
    r"\blevers?\b",
    r"\brecipes?\b",
    r"\bbudgets?\b",
]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)


def prose(text: str) -> str:
    """A page's text without its figure blocks (whose stamps name a commit and a date) and link
    targets (the log's anchors hold dates)."""
    text = figures.BLOCK.sub("", text)
    return re.sub(r"\]\([^)]*\)", "]()", text)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_a_page_holds_no_history(page):
    lines = prose(page.read_text(encoding="utf-8")).splitlines()
    found = [
        f"{page.name}:{n}: {line.strip()}"
        for n, line in enumerate(lines, 1)
        if any(re.search(pattern, line, re.I) for pattern in HISTORY)
    ]
    assert not found, "history belongs in docs/log.md:\n" + "\n".join(found)


def test_no_page_is_over_300_lines_and_the_docs_are_half_of_what_they_were():
    sizes = {p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in PAGES}
    assert max(sizes.values()) <= 300, sizes
    docs = sum(n for p, n in zip(PAGES, sizes.values(), strict=True) if p.parent.name == "docs")
    assert docs <= 4507 // 2  # the pages of docs/ held 4,507 lines with their history


def test_the_pages_figure_blocks_are_their_figure_files():
    found = [p for p in figures.problems(ROOT) if "stale" not in p]
    assert not found, "\n".join(found)


def commands(text: str) -> list[list[str]]:
    """The seq2seq and `python -m scripts.X` commands of a page's bash blocks, as argument lists
    (continued lines joined, comments, pipes and `&&` split off, `$VAR` left as written)."""
    found = []
    for language, body in FENCE.findall(text):
        if language not in ("bash", "sh", "shell", "console"):
            continue
        for line in body.replace("\\\n", " ").splitlines():
            line = line.removeprefix("$ ")
            try:
                words = shlex.split(line, comments=True)
            except ValueError:
                continue
            segment: list[str] = []
            for word in [*words, "|"]:
                if word in ("|", "&&", ";", "||", "&"):
                    while segment and "=" in segment[0] and not segment[0].startswith("-"):
                        segment = segment[1:]  # VAR=value before a command
                    if segment and (segment[0] == "seq2seq" or segment[:2] == ["python", "-m"]):
                        found.append(segment)
                    segment = []
                else:
                    segment.append(word)
    return found


class Parsed(Exception):
    """A script's parser accepted its arguments; nothing more of it runs."""


def check_seq2seq(args: list[str]) -> None:
    group = typer.main.get_command(app)
    command = group.get_command(typer.Context(group), args[0])
    if command is None:
        raise UsageError(f"No such command {args[0]!r}")
    command.make_context(args[0], list(args[1:]))


def check_script(module: str, args: list[str], monkeypatch) -> None:
    original = argparse.ArgumentParser.parse_args

    def parse_and_stop(self, argv=None, namespace=None):
        original(self, argv, namespace)
        raise Parsed

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", parse_and_stop)
    monkeypatch.setattr(sys, "argv", [module, *args])
    with pytest.raises(Parsed):
        runpy.run_module(module, run_name="__main__")


ALL_COMMANDS = [
    (page.relative_to(ROOT).as_posix(), command)
    for page in PAGES
    for command in commands(page.read_text(encoding="utf-8"))
]


@pytest.mark.parametrize(("page", "command"), ALL_COMMANDS, ids=lambda x: x if isinstance(x, str) else None)
def test_every_command_on_a_page_is_accepted_as_written(page, command, monkeypatch):
    """Each option exists, each value has its type and is one of its choices; commands that need
    no model are parsed, not run (the suite runs the commands themselves in their own tests)."""
    if command[0] == "seq2seq":
        if "--help" in command:
            return
        try:
            check_seq2seq(command[1:])
        except UsageError as error:  # a missing file is not the page's fault
            if "does not exist" not in str(error):
                pytest.fail(f"{page}: `{shlex.join(command)}`: {error.format_message()}")
        return
    module = command[2]
    if not module.startswith("scripts.") or "--help" in command:
        return  # pytest, pip, venv: not ours to check
    try:
        check_script(module, command[3:], monkeypatch)
    except SystemExit as error:
        pytest.fail(f"{page}: `{shlex.join(command)}` is refused by its parser (exit {error.code})")


def test_the_pages_show_commands_and_the_check_finds_them():
    """The check above is not vacuous: the README and the docs hold dozens of commands, and a
    made-up option is refused."""
    assert len(ALL_COMMANDS) >= 40
    with pytest.raises(UsageError, match="No such option"):
        check_seq2seq(["translate", "--beam-width", "5", "text"])
    with pytest.raises(typer.BadParameter):
        check_seq2seq(["translate", "--beam", "five", "text"])


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return {slug(h) for h in re.findall(r"^#+ (.+)$", text, re.M)}


@pytest.mark.parametrize("page", [*PAGES, LOG], ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_link_between_the_pages_finds_its_file_and_heading(page):
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue  # a web address
        file, _, anchor = target.partition("#")
        linked = (page.parent / file).resolve() if file else page
        missing_heading = anchor and linked.suffix == ".md" and anchor not in anchors(linked)
        if not linked.exists() or missing_heading:
            broken.append(target)
    assert not broken, f"{page.name}: links to nothing: {broken}"
