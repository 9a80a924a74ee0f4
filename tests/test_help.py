"""The help pages read as written: they are generated from the same declarations as the options
(`fields.option` on TrainConfig and DecodeOptions), so a broken page is a broken declaration."""

import inspect
import re
import textwrap

import pytest

from seq2seq.cli import app as cli
from tests.cli_helpers import run_cli

COMMANDS = [c.name or c.callback.__name__ for c in cli.app.registered_commands]


def help_of(args, capsys, monkeypatch) -> str:
    result = run_cli([*args, "--help"], capsys, monkeypatch)
    assert result.code == 0, result.err
    return result.out


def flat(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("command", COMMANDS)
def test_each_command_s_help_reads_as_written(command, capsys, monkeypatch):
    page = help_of([command], capsys, monkeypatch)
    callback = next(
        c.callback for c in cli.app.registered_commands if (c.name or c.callback.__name__) == command
    )
    assert flat(textwrap.dedent(callback.__doc__)) in flat(page)  # reflowed, never cut mid-sentence
    assert "<bool>" not in page  # a switch takes no value
    assert not re.search(r"\S \.(\s|$)", page), "a stray space before a full stop (a cut default)"
    assert page.count("[") == page.count("]")
    for line in page.splitlines():
        assert len(line) <= 80


def test_the_help_shows_defaults_and_ranges_from_the_declarations(capsys, monkeypatch):
    train = flat(help_of(["train"], capsys, monkeypatch))
    assert (
        "--weight-decay <float range> AdamW's weight decay (decoupled; every parameter). [default: 0.1;"
        in train
    )
    assert "--bf16 / --fp32" in train and "--decay <str>" in train and "--world-size" not in train
    translate = flat(help_of(["translate"], capsys, monkeypatch))
    assert "Run directory [default: runs/<corpus>-<src>-<tgt>: runs/multi30k-en-fr]." in translate
    assert "--beam <int> Beam size (1: greedy search) [default: 5; 1 with --sample" in translate
    assert "--no-repeat-ngram <int> No hypothesis repeats an n-gram of N pieces" in translate
    assert (
        "--cache / --no-cache" in translate
        and "--layer <int> Layer of the maps, from 1 [default: last]." in translate
    )


def test_the_product_is_named_with_both_architectures(capsys, monkeypatch):
    page = flat(help_of([], capsys, monkeypatch))
    assert "a Transformer, or an RNN with attention" in page
    for command in COMMANDS:
        assert re.search(rf"^  {command}\s", help_of([], capsys, monkeypatch), re.M)


def test_train_has_a_flag_for_each_shape_field_of_every_architecture(capsys, monkeypatch):
    """The shape options are the architectures' config fields (models/configs.py), generated."""
    import dataclasses

    from seq2seq.models.configs import CONFIGS

    page = flat(help_of(["train"], capsys, monkeypatch))
    letters = "".join(page.split())  # click wraps a help at its hyphens too
    for config in CONFIGS.values():
        for f in dataclasses.fields(config):
            if "help" in f.metadata:
                flag = (f.metadata["flag"] or "--" + f.name.replace("_", "-")).split("/")[0]
                assert f"{flag} " in page, (config.__name__, f.name)
                assert "".join(f.metadata["help"].split()) in letters, (config.__name__, f.name)


@pytest.mark.parametrize("command", COMMANDS)
def test_each_option_is_a_parameter_of_the_command_or_a_field_of_the_group_it_declares(command):
    """A command's options are read where it is declared: its own parameters, and for each
    parameter standing for a group (`args: TranslateArgs = fields(TranslateArgs)`) that group's
    fields; the command is called with each group built."""
    from seq2seq.cli.options import Group

    registered = next(
        c.callback for c in cli.app.registered_commands if (c.name or c.callback.__name__) == command
    )
    declared = inspect.signature(registered.__wrapped__).parameters.values()
    assert all(p.kind != p.VAR_KEYWORD for p in declared)  # no **options filled in from elsewhere
    expected = [
        q.name for p in declared for q in (p.default.parameters if isinstance(p.default, Group) else [p])
    ]
    assert list(inspect.signature(registered).parameters) == expected


def test_a_group_is_handed_to_the_command_built():
    from dataclasses import dataclass

    from seq2seq.cli.options import command, decoding, fields
    from seq2seq.decoding.options import DecodeOptions
    from seq2seq.fields import option

    @dataclass
    class Args:
        name: str = option("x", "A name.")

    seen = []

    def toy(args: Args = fields(Args), options: DecodeOptions = decoding(("beam",))):
        seen.append((args, options))

    expanded = command(toy)
    assert list(inspect.signature(expanded).parameters) == ["name", "greedy", "beam"]
    expanded(name="y", greedy=True, beam=None)
    assert seen == [(Args("y"), DecodeOptions(beam=1))]
