"""The user's whole first session, end to end, on a small synthetic corpus in the Multi30k layout."""

import json
import shutil
from dataclasses import replace

import pytest

from seq2seq.errors import Seq2SeqError
from seq2seq.runs.recipe import stored_languages
from seq2seq.training.config import ADDED, OLDER_RECIPES, REMOVED
from seq2seq.training.resume import check_typed_options, stored_train_config
from tests.cli_helpers import run_process
from tests.conftest import EN, tiny_model, write_multi30k, write_run
from tests.helpers import TRAIN


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A run trained for a few steps through the CLI (in a subprocess, as a user would)."""
    root = tmp_path_factory.mktemp("cli")
    data = write_multi30k(root / "corpus", {"train": 80, "val": 8, "test_2016_flickr": 6})
    run = root / "run"
    result = run_process([*TRAIN, "--data-dir", data, "--run", run])
    assert result.code == 0, result.err
    return data, run, result


def test_help_lists_the_four_commands(cli):
    result = cli("--help")
    assert result.code == 0
    for command in ("tokenize", "train", "translate", "evaluate"):
        assert command in result.out


def test_tokenize_trains_and_shows_pieces(cli, tmp_path):
    data = write_multi30k(tmp_path / "corpus", {"train": 40})
    result = cli("tokenize", "--data-dir", data, "--run", tmp_path / "run", "--vocab-size", "50")
    assert result.code == 0 and "pieces" in result.out and (tmp_path / "run/tokenizer.model").is_file()
    result = cli("tokenize", "--run", tmp_path / "run", "a dog runs")
    assert result.code == 0 and "▁" in result.out and "ids:" in result.out


def test_train_wrote_a_complete_run(trained):
    _, run, result = trained
    for name in ("config.json", "tokenizer.model", "model.safetensors", "last.safetensors", "metrics.jsonl"):
        assert (run / name).is_file(), name
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert rows[-1]["step"] == 4 and {"val_loss", "val_bleu", "tokens_per_s", "lr"} <= set(rows[-1])
    assert "stopped (max steps) at step 4" in result.out


def test_train_again_resumes(trained, tmp_path):
    data, run, _ = trained
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    result = run_process([*TRAIN[:3], "--max-steps", "6", *TRAIN[5:], "--data-dir", data, "--run", copy])
    assert result.code == 0, result.err
    assert "resuming from step 4" in result.out
    rows = [json.loads(line) for line in (copy / "metrics.jsonl").read_text().splitlines()]
    steps = [r["step"] for r in rows]
    assert steps[0] == 4 and steps[-1] == 6 and steps == sorted(steps)


@pytest.mark.parametrize(
    "change,message",
    [
        (["--lr", "0.5"], "was started with --lr 0.0025; a resumed run keeps it"),
        (["--preset", "small"], "holds another model than --preset small describes"),
        (["--arch", "rnn"], "holds another model than --arch rnn describes"),
        (["--decoder-layers", "1"], "holds another model than --decoder-layers 1 describes"),
        (["--no-norm-first"], "holds another model than --no-norm-first describes"),
        (["--ffn", "swiglu"], "holds another model than --ffn swiglu describes"),
        (["--vocab-size", "99"], "was started with --vocab-size 60"),
        (["--subword-alpha", "0.2"], "was started with --subword-alpha 0.3"),
        (["--label-smoothing", "0.2"], "was started with --label-smoothing 0.1"),
        (["--weight-decay", "0.01"], "was started with --weight-decay 0.1"),
        (["--decay", "rsqrt"], "was started with --decay none"),
    ],
)
def test_a_resumed_run_refuses_options_it_cannot_honour(trained, cli, change, message):
    data, run, _ = trained
    before = (run / "last.safetensors").read_bytes()
    result = cli(*TRAIN, "--data-dir", data, "--run", run, *change)
    assert result.code == 2 and message in result.err and len(result.err.splitlines()) == 1
    assert (run / "last.safetensors").read_bytes() == before


def test_recipe_options_reach_the_run_s_config(cli, tmp_path):
    """What `train` was told is what config.json records (and so what training and a resume use)."""
    data = write_multi30k(tmp_path / "corpus", {"train": 40, "val": 4})
    result = cli(
        *TRAIN, "--max-steps", "1", "--weight-decay", "0.3", "--late-dropout", "0.2", "--clip-norm", "0.5",
        "--decay", "rsqrt", "--data-dir", data, "--run", tmp_path / "run",
    )  # fmt: skip
    assert result.code == 0, result.err
    recipe = json.loads((tmp_path / "run" / "config.json").read_text())["train"]
    assert (recipe["weight_decay"], recipe["late_dropout"], recipe["clip_norm"]) == (0.3, 0.2, 0.5)
    assert recipe["decay"] == "rsqrt"  # over the default's none


def test_shape_options_set_the_model_over_the_preset(cli, tmp_path):
    """Width and depth at equal time are a lever: the shape is the preset's, with what was given."""
    data = write_multi30k(tmp_path / "corpus", {"train": 40, "val": 4})
    run = tmp_path / "run"
    shape = dict(d_model=48, heads=2, ff=96, encoder_layers=3, decoder_layers=1, ffn="swiglu")
    options = [text for name, value in shape.items() for text in (f"--{name.replace('_', '-')}", str(value))]
    result = cli(*TRAIN, "--max-steps", "1", *options, "--no-norm-first", "--data-dir", data, "--run", run)
    assert result.code == 0, result.err
    model = json.loads((run / "config.json").read_text())["model"]
    fields = ("d_model", "n_heads", "d_ff", "n_encoder_layers", "n_decoder_layers", "ffn", "norm_first")
    assert tuple(model[f] for f in fields) == (*shape.values(), False)  # post-LN, as asked
    assert model["vocab_size"] <= 60 and model["max_positions"] == 256  # the rest is tiny's
    typed = shape | {"preset": "tiny", "norm_first": False}
    assert check_typed_options(run, typed) == []  # typed again: the run's own
    with pytest.raises(Seq2SeqError, match=r"layers 2 describes \(its n_encoder_layers is 3, not 2"):
        check_typed_options(run, {"encoder_layers": 2})
    with pytest.raises(Seq2SeqError, match="another model than --norm-first describes"):
        check_typed_options(run, {"norm_first": True})
    # a run from before --ffn (no "ffn" in its config) is ReLU, and a refusal says so
    sections = json.loads((run / "config.json").read_text())
    del sections["model"]["ffn"]
    (run / "config.json").write_text(json.dumps(sections))
    with pytest.raises(Seq2SeqError, match=r"\(its ffn is relu, not swiglu\); a resumed run keeps its model"):
        check_typed_options(run, typed)


def test_a_run_from_before_the_gated_preset_is_refused_naming_what_changed(trained, tmp_path):
    """A `small` run from before its block became gated (config.json without "ffn", 1024 wide),
    resumed with `--preset small` typed: refused, saying which fields the preset now sets."""
    _, run, _ = trained
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    sections = json.loads((copy / "config.json").read_text())
    shape = dict(d_model=256, n_heads=4, n_encoder_layers=3, n_decoder_layers=3, d_ff=1024)
    sections["model"] = {k: v for k, v in sections["model"].items() if k != "ffn"} | shape
    (copy / "config.json").write_text(json.dumps(sections))
    message = r"\(its d_ff is 1024, not 680; its ffn is relu, not swiglu\); a resumed run keeps its model"
    with pytest.raises(Seq2SeqError, match=message):
        check_typed_options(copy, {"preset": "small"})
    assert check_typed_options(copy, {"preset": "small", "ffn": "relu", "ff": 1024}) == []


@pytest.mark.parametrize(
    "edit,why,commit",
    [
        (lambda train: train.pop("weight_decay"), "its 'train' section has no weight_decay", OLDER_RECIPES),
        (lambda train: train.update(r_drop=5.0), "trained with r_drop 5.0", OLDER_RECIPES),
        (lambda t: t.update(sample_by_epoch=False), "trained with sample_by_epoch False", OLDER_RECIPES),
        (lambda train: train.update(guided_context="full"), "trained with guided_context 'full'", "b0c6ba6"),
    ],
)
def test_a_run_of_an_older_recipe_is_refused_naming_the_commit_that_trains_it(
    trained, tmp_path, edit, why, commit
):
    """A run written before one of today's fields, or with a lever since removed, is not emulated;
    its languages still serve and export it."""
    _, run, _ = trained
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    sections = json.loads((copy / "config.json").read_text())
    edit(sections["train"])
    (copy / "config.json").write_text(json.dumps(sections))
    message = rf"is a run of an older recipe \({why}\); seq2seq at commit {commit} trains"
    with pytest.raises(Seq2SeqError, match=message):
        stored_train_config(copy)
    assert stored_languages(copy) == ("multi30k", "en", "fr")


def test_a_removed_lever_at_the_value_that_trains_as_today_is_no_older_recipe(trained, tmp_path):
    _, run, _ = trained
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    sections = json.loads((copy / "config.json").read_text())
    sections["train"].update(REMOVED)  # a run from before the removal that left the levers off
    (copy / "config.json").write_text(json.dumps(sections))
    assert stored_train_config(copy) == stored_train_config(run)


def test_a_run_written_before_an_added_field_trains_as_its_value_says(trained, tmp_path):
    _, run, _ = trained
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    sections = json.loads((copy / "config.json").read_text())
    for name in ADDED:
        del sections["train"][name]
    (copy / "config.json").write_text(json.dumps(sections))
    # as ADDED says, which may differ from today's defaults (the guided head's)
    assert stored_train_config(copy) == replace(stored_train_config(run), **ADDED)


def test_a_hand_edited_decay_is_refused_naming_the_file(trained, tmp_path):
    """The recipe's own check (TrainConfig.__post_init__), said like a field's type or range."""
    _, run, _ = trained
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    sections = json.loads((copy / "config.json").read_text())
    sections["train"]["decay"] = "cosine"
    (copy / "config.json").write_text(json.dumps(sections))
    with pytest.raises(Seq2SeqError, match=r"config.json: the 'train' section: decay must be one of rsqrt"):
        stored_train_config(copy)


def test_a_vocab_size_that_an_existing_tokenizer_overrides_is_said(cli, tmp_path):
    data = write_multi30k(tmp_path / "corpus", {"train": 40, "val": 4})
    run = tmp_path / "run"
    assert cli("tokenize", "--data-dir", data, "--run", run, "--vocab-size", "40").code == 0
    result = cli(*TRAIN, "--max-steps", "1", "--data-dir", data, "--run", run)  # --vocab-size 60
    assert result.code == 0 and "--vocab-size is not used" in result.err and "tokenizer of" in result.err


def test_translate_from_arguments_stdin_and_file(trained, cli, tmp_path):
    _, run, _ = trained
    result = cli("translate", "--run", run, "a dog runs", "the cat sleeps")
    assert result.code == 0 and len(result.out.splitlines()) == 2
    result = cli("translate", "--run", run, "--greedy", stdin=b"a dog runs\n\nthe cat\n")
    assert result.code == 0
    assert result.out.count("\n") == 3 and result.out.splitlines()[1] == ""
    (tmp_path / "in.txt").write_text("a red car\ntwo men sit\n")
    result = cli("translate", "--run", run, "--input", tmp_path / "in.txt", "--output", tmp_path / "o.txt")
    assert result.code == 0 and len((tmp_path / "o.txt").read_text().splitlines()) == 2


def test_translate_nbest_format(trained, cli):
    _, run, _ = trained
    result = cli("translate", "--run", run, "--beam", "3", "--nbest", "3", "a dog", "the sun")
    lines = result.out.splitlines()
    assert result.code == 0 and len(lines) == 6
    index, _text, score = lines[0].split(" ||| ")
    assert index == "0" and float(score) <= 0
    assert [line.split(" ||| ")[0] for line in lines] == ["0"] * 3 + ["1"] * 3


def test_translate_cache_and_no_cache_agree(cli, tmp_path):
    """Texts and scores (4 decimals) of every hypothesis: a cache that drifted would move the
    scores even where the argmax holds."""
    run = write_run(tmp_path / "run", lambda v: tiny_model(vocab_size=v, seed=6))
    for beam in ("1", "4"):
        args = ["translate", "--run", run, *(["--greedy"] if beam == "1" else ["--nbest", beam]), *EN]
        cached, uncached = cli(*args), cli(*args, "--no-cache")
        assert cached.code == 0 and cached.out == uncached.out
    scores = [line.rsplit(" ||| ", 1)[1] for line in cached.out.splitlines()]
    assert len(set(scores)) > len(EN)  # scores differ from hypothesis to hypothesis


def test_evaluate_json_and_table(trained, cli, tmp_path):
    data, run, _ = trained
    result = cli(
        "evaluate", "--run", run, "--data-dir", data, "--json", "--greedy", "--output", tmp_path / "hyp.txt"
    )
    assert result.code == 0, result.err
    report = json.loads(result.out)
    assert {"bleu", "chrf", "signature", "sentences", "seconds"} <= set(report)
    assert report["sentences"] == 6 and "nrefs:1" in report["signature"]
    assert len((tmp_path / "hyp.txt").read_text().splitlines()) == 6
    table = cli("evaluate", "--run", run, "--data-dir", data, "--beam", "2")
    assert table.code == 0 and "BLEU" in table.out and "chrF" in table.out and "version" in table.out


def test_evaluate_source_and_reference_files(trained, cli, tmp_path):
    _, run, _ = trained
    (tmp_path / "src.txt").write_text("a dog runs\nthe cat sleeps\n")
    (tmp_path / "ref.txt").write_text("un chien court\nle chat dort\n")
    result = cli(
        "evaluate",
        "--run",
        run,
        "--source",
        tmp_path / "src.txt",
        "--reference",
        tmp_path / "ref.txt",
        "--json",
    )
    assert result.code == 0 and json.loads(result.out)["sentences"] == 2
    (tmp_path / "ref.txt").write_text("one line\n")
    result = cli(
        "evaluate", "--run", run, "--source", tmp_path / "src.txt", "--reference", tmp_path / "ref.txt"
    )
    assert result.code == 2 and "has 2 lines but" in result.err


def test_misaligned_corpus_exits_2_with_one_line(cli, tmp_path):
    (tmp_path / "train.en").write_text("a\nb\nc\n")
    (tmp_path / "train.fr").write_text("A\nB\n")
    result = cli("tokenize", "--data-dir", tmp_path, "--run", tmp_path / "run")
    assert result.code == 2
    assert result.err.count("\n") == 1 and "has 3 lines but" in result.err and "Traceback" not in result.err
