"""`train --init-from RUN`: a new run from RUN's best weights and tokenizer with a fresh optimizer,
for both architectures; --freeze keeps the encoder or the embeddings as RUN has them, through a
resume too; a start that cannot be (no run, a tokenizer that does not cover the corpus, a model
option beside it) is one line, exit 2, and writes nothing."""

import gzip
import json

import pytest
from safetensors.torch import load_file

from tests.cli_helpers import run_process
from tests.conftest import write_multi30k
from tests.helpers import TRAIN, TUNE

ENCODER = {"transformer": ("encoder.", "encoder_norm."), "rnn": ("encoder.",)}


@pytest.fixture(scope="module", params=["transformer", "rnn"])
def start(request, tmp_path_factory):
    """A few-step run of each architecture and its corpus folder."""
    root = tmp_path_factory.mktemp(request.param)
    data = write_multi30k(root / "corpus", {"train": 60, "val": 6})
    result = run_process([*TRAIN, "--arch", request.param, "--data-dir", data, "--run", root / "start"])
    assert result.code == 0, result.err
    return request.param, root / "start", data


def weights(run) -> dict:
    return load_file(run / "model.safetensors")


def test_a_fine_tuned_run_starts_from_the_runs_weights_and_tokenizer(cli, start, tmp_path, monkeypatch):
    arch, run, data = start
    new = tmp_path / "new"
    args = [*TUNE, "--max-steps", "3"]
    result = cli(*args, "--init-from", run, "--freeze", "encoder", "--data-dir", data, "--run", new)
    assert result.code == 0, result.err
    config = json.loads((new / "config.json").read_text())
    assert config["train"]["init_from"] == str(run.resolve()) and config["train"]["freeze"] == "encoder"
    assert config["model"] == json.loads((run / "config.json").read_text())["model"]
    assert (new / "tokenizer.model").read_bytes() == (run / "tokenizer.model").read_bytes()
    before, after = weights(run), weights(new)
    frozen = [name for name in before if name.startswith(ENCODER[arch])]
    assert frozen and all((before[n] == after[n]).all() for n in frozen)
    assert any(not (before[n] == after[n]).all() for n in before if n not in frozen)  # the rest learned
    # a resume keeps the start and the freeze, and does not start again
    again = cli(*TUNE, "--max-steps", "5", "--data-dir", data, "--run", new)
    assert again.code == 0, again.err
    assert json.loads((new / "config.json").read_text())["train"]["init_from"] == str(run.resolve())
    resumed = weights(new)
    assert all((before[n] == resumed[n]).all() for n in frozen)
    # the start named another way (relative, through a link) is the same start
    (tmp_path / "link").symlink_to(run.parent)
    monkeypatch.chdir(tmp_path)
    same = cli(*TUNE, "--max-steps", "6", "--init-from", f"link/{run.name}", "--freeze", "encoder",
               "--data-dir", data, "--run", new)  # fmt: skip
    assert same.code == 0, same.err
    other = cli(*TUNE, "--max-steps", "7", "--init-from", new, "--data-dir", data, "--run", new)
    assert other.code == 2 and f"was started with --init-from {run.resolve()};" in other.err, other.err


def test_a_run_started_without_a_start_says_so_when_given_one(cli, start, tmp_path):
    _, run, data = start
    result = cli(*TUNE, "--max-steps", "3", "--init-from", tmp_path, "--data-dir", data, "--run", run)
    assert result.code == 2 and "was started without --init-from;" in result.err, result.err


def test_frozen_embeddings_stay_the_starts(cli, start, tmp_path):
    _, run, data = start
    new = tmp_path / "new"
    args = [*TUNE, "--max-steps", "2", "--init-from", run, "--freeze", "embeddings"]
    result = cli(*args, "--data-dir", data, "--run", new)
    assert result.code == 0, result.err
    assert (weights(run)["embed.weight"] == weights(new)["embed.weight"]).all()


def test_bad_starts_are_one_line_and_write_nothing(cli, start, tmp_path):
    arch, run, data = start
    if arch != "transformer":
        pytest.skip("the refusals come before any model is built: one architecture shows them")
    greek = tmp_path / "greek"
    write_multi30k(greek, {"train": 20, "val": 4})
    with gzip.open(greek / "train.fr.gz", "wt", encoding="utf-8") as f:
        f.write("".join(f"\u03b1\u03b2\u03b3 \u03b4\u03b5 {i}\n" for i in range(20)))
    plain = [*TUNE, "--max-steps", "2"]
    cases = [
        ([*plain, "--init-from", tmp_path / "nothing", "--data-dir", data], "no run there"),
        ([*plain, "--freeze", "encoder", "--data-dir", data], "--init-from"),
        ([*plain, "--init-from", run, "--preset", "small", "--data-dir", data], "--preset"),
        ([*plain, "--init-from", run, "--data-dir", greek], "unknown"),
        ([*plain, "--init-from", run, "--data-dir", data, "--run", run / "sub"], "one inside the other"),
        ([*plain, "--init-from", run, "--data-dir", data, "--run", run.parent], "one inside the other"),
    ]
    for number, (args, words) in enumerate(cases):
        new = tmp_path / f"new{number}"
        result = cli(*args, "--run", new) if "--run" not in args else cli(*args)
        assert result.code == 2, (words, result.err)
        assert words in result.err and "Traceback" not in result.err
        assert not (new / "config.json").exists() and not (new / "tokenizer.model").exists()
    assert not (run / "sub").exists() and not (run.parent / "config.json").exists()
