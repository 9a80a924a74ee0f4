"""A hub dataset trained as a stream (--stream): the same training as the stored corpus when one
part holds it, an exact resume from the middle of a part, and one line for what it cannot train."""

import json
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from seq2seq.data.streamed import Stream
from seq2seq.errors import Seq2SeqError
from seq2seq.training.config import TrainConfig
from seq2seq.training.loop import Loop
from seq2seq.training.resume import TrainingState
from seq2seq.training.train import train
from tests.cli_helpers import torchrun
from tests.helpers import (
    REVERSE_MODEL,
    TORCHRUN_TRAIN,
    Killed,
    assert_same_training_state,
    kill_at,
    model_weights,
    record_steps,
    trainer_state,
    write_reversal_task,
)

MODEL = replace(REVERSE_MODEL, d_model=32, d_ff=64, dropout=0.1)  # dropout: the RNG resumes too


def write_hub_folder(
    folder: Path, n_train: int = 400, n_val: int = 10, card: bool = False, shards: int = 1
) -> str:
    """The reversal task as a dataset folder the Hub's loader reads (data/<split>-<i>-of-<n>.jsonl
    rows of a `translation` column, the training split in `shards` files), with a dataset card
    giving the split sizes if `card`."""
    tsv = Path(write_reversal_task(folder / "tsv", n_train=n_train, n_val=n_val).format(split="x")).parent
    (folder / "data").mkdir(parents=True, exist_ok=True)
    for split, name, files in (("train", "train", shards), ("val", "validation", 1)):
        pairs = [line.split("\t") for line in (tsv / f"{split}.tsv").read_text().splitlines()]
        rows = [json.dumps({"translation": {"src": s, "tgt": t}}) for s, t in pairs]
        size = -(-len(rows) // files)
        for i in range(files):
            shard = folder / "data" / f"{name}-{i:05d}-of-{files:05d}.jsonl"
            shard.write_text("".join(row + "\n" for row in rows[i * size : (i + 1) * size]))
    if card:
        splits = "".join(
            f"  - name: {name}\n    num_examples: {n}\n"
            for name, n in (("train", n_train), ("validation", n_val))
        )
        (folder / "README.md").write_text(f"---\ndataset_info:\n  splits:\n{splits}---\n")
    return str(folder)


def recipe(corpus: str, **changes) -> TrainConfig:
    config = TrainConfig(
        corpus=corpus, src="src", tgt="tgt", vocab_size=32, max_tokens=512, warmup=5, device="cpu",
        bf16=False, cooldown=0.0,  # a rate that ignores the budget: the first invocation's is shorter
        subword_alpha=0.3, weight_decay=0.05,
    )  # fmt: skip
    return replace(config, **changes)


def test_a_stream_within_one_part_trains_as_the_same_corpus_stored(tmp_path):
    """Cut, drawn and ordered as the stored set's epochs are: the very same weights, two epochs on."""
    corpus = write_hub_folder(tmp_path / "hub")
    stored = train(tmp_path / "stored", recipe(corpus, max_steps=14), MODEL)
    streamed = train(tmp_path / "streamed", recipe(corpus, max_steps=14, stream=True), MODEL)
    assert stored["step"] == streamed["step"] == 14 and stored["epoch"] == streamed["epoch"] >= 2
    assert (tmp_path / "stored" / "tokenized").is_dir() and not (tmp_path / "streamed" / "tokenized").exists()
    assert_same_training_state(tmp_path / "stored", tmp_path / "streamed")
    assert stored["val_bleu"] == streamed["val_bleu"]


@pytest.fixture(scope="module")
def straight(tmp_path_factory) -> tuple[Path, TrainConfig]:
    """A streamed run of 16 steps never stopped, in parts of 150 pairs (three an epoch, of 3, 3 and
    2 batches), the training split in two files of 200 pairs."""
    root = tmp_path_factory.mktemp("straight")
    config = recipe(write_hub_folder(root / "hub", shards=2), stream=True, stream_part=150)
    train(root / "straight", replace(config, max_steps=16), MODEL)
    return root / "straight", config


@pytest.mark.parametrize("killed_at, part", [(4, 1), (6, 1), (7, 2)])
def test_a_run_killed_mid_part_resumes_exactly(tmp_path, monkeypatch, straight, killed_at, part):
    """Killed in the second part (which crosses the files' boundary), at its end, or in the third
    (which begins in the second file), resumed by reading that part again from its place in the
    stream; then across an epoch's end."""
    straight, config = straight
    steps = []
    monkeypatch.setattr(Loop, "_train_step", record_steps(Loop._train_step, steps))
    every_step = replace(config, max_steps=16, save_every_minutes=0)
    with pytest.raises(Killed):
        train(tmp_path / "killed", every_step, MODEL, None, None, kill_at(steps, killed_at))
    state = trainer_state(tmp_path / "killed")
    assert state["stream"]["part"] == part and state["stream"]["offset"] == 150 * part and state["batch"] > 0
    monkeypatch.undo()
    again = train(tmp_path / "killed", replace(config, max_steps=16), MODEL)
    assert again["step"] == 16 and again["epoch"] >= 2
    assert_same_training_state(straight, tmp_path / "killed")
    assert trainer_state(tmp_path / "killed")["stream_length"] == 400  # learned from the first epoch


@pytest.mark.parametrize("change", ["a row edited", "rows cut off"])
def test_a_dataset_changed_under_a_stopped_run_is_refused(tmp_path, change):
    corpus = write_hub_folder(tmp_path / "hub")
    config = recipe(corpus, stream=True, stream_part=150)
    train(tmp_path / "run", replace(config, max_steps=4), MODEL)
    assert trainer_state(tmp_path / "run")["stream"]["part"] == 1
    train_file = tmp_path / "hub" / "data" / "train-00000-of-00001.jsonl"
    rows = train_file.read_text().splitlines()
    if change == "a row edited":
        rows[160] = json.dumps({"translation": {"src": "1 2 3", "tgt": "3 2 1"}})  # in the second part
    else:
        rows = rows[:120]  # the stream now ends before the place the run stopped at
    train_file.write_text("\n".join(rows) + "\n")
    with pytest.raises(Seq2SeqError, match=r"\(part 2, after 150 pairs\) are not the ones it trained on"):
        train(tmp_path / "run", replace(config, max_steps=6), MODEL)


def test_a_finished_run_run_again_reads_no_part(tmp_path, monkeypatch):
    """The stop rules are asked before a part is read: nothing to train, nothing read."""
    corpus = write_hub_folder(tmp_path / "hub", n_train=100)
    config = recipe(corpus, stream=True, stream_part=40, max_steps=3)
    train(tmp_path / "run", config, MODEL)
    read = []
    parts = Stream.parts
    monkeypatch.setattr(
        Stream, "parts", lambda self, *args: (read.append(p) or p for p in parts(self, *args))
    )
    again = train(tmp_path / "run", config, MODEL)
    assert again["stop"] == "max steps" and again["step"] == 3 and read == []


def test_a_saved_position_of_another_layout_is_one_line(tmp_path):
    stream = Stream(write_hub_folder(tmp_path / "hub", n_train=20), "train", "src", "tgt")
    with pytest.raises(Seq2SeqError, match="the saved stream position is not one of this dataset"):
        next(stream.pairs({"examples_iterable": {"shard_idx": 0}, "epoch": 0}, 10))


def test_a_first_part_that_keeps_nothing_is_one_line(tmp_path):
    corpus = write_hub_folder(tmp_path / "hub", n_train=60)
    short = replace(MODEL, max_positions=3)  # every pair has more than 2 pieces on a side
    with pytest.raises(Seq2SeqError, match="every one of the first 60 training pairs was filtered out"):
        train(tmp_path / "run", recipe(corpus, stream=True, max_steps=2), short)


def test_an_empty_validation_split_is_refused_before_training(tmp_path):
    corpus = write_hub_folder(tmp_path / "hub", n_train=60)
    (tmp_path / "hub" / "data" / "validation-00000-of-00001.jsonl").write_text("")
    with pytest.raises(Seq2SeqError, match=r"\(validation\) is empty"):
        train(tmp_path / "run", recipe(corpus, stream=True, max_steps=2), MODEL)
    assert not (tmp_path / "run" / "tokenizer.model").exists()


def test_the_validation_split_is_the_hubs_validation_and_a_card_gives_the_length(tmp_path):
    corpus = write_hub_folder(tmp_path / "hub", n_train=30, n_val=7, card=True)
    assert len(list(Stream(corpus, "val", "src", "tgt").pairs())) == 7
    assert Stream(corpus, "train", "src", "tgt").length == 30
    assert Stream(write_hub_folder(tmp_path / "bare", n_train=30), "train", "src", "tgt").length is None


def test_an_epoch_budget_needs_the_streams_length(tmp_path, cli):
    """The cooldown is paced by the budget's share used: an epoch's share needs the length, and a
    plain `train --stream` (10 epochs) of a dataset without a count is refused before the tokenizer."""
    bare = write_hub_folder(tmp_path / "bare", n_train=60)
    hub = ["--corpus", bare, "--src", "src", "--tgt", "tgt", "--stream", "--preset", "tiny"]
    result = cli("train", *hub, "--run", tmp_path / "run")
    assert result.code == 2 and "the stream's length is not known" in result.err
    assert "give --max-steps or --max-minutes" in result.err and "Traceback" not in result.err
    assert (
        not (tmp_path / "run" / "tokenizer.model").exists()
        and not (tmp_path / "run" / "config.json").exists()
    )
    carded = write_hub_folder(tmp_path / "card", n_train=60, card=True)
    final = train(
        tmp_path / "carded", recipe(carded, stream=True, cooldown=1.0, epochs=1, stream_part=25), MODEL
    )
    peak = TrainConfig.lr  # cooled down towards 0 over the one epoch's three parts, paced by pairs read
    assert final["epoch"] == 1 and 0 < final["lr"] < 0.2 * peak


def test_a_stream_without_the_languages_or_translations_is_one_line(tmp_path):
    corpus = write_hub_folder(tmp_path / "hub", n_train=20)
    with pytest.raises(Seq2SeqError, match=r"has no language 'de'; languages: src, tgt"):
        next(Stream(corpus, "train", "src", "de").pairs())
    (tmp_path / "hub" / "data" / "train-00000-of-00001.jsonl").write_text('{"text": "a"}\n')
    with pytest.raises(Seq2SeqError, match=r"has no 'translation' column; columns: text"):
        next(Stream(corpus, "train", "src", "tgt").pairs())
    with pytest.raises(Seq2SeqError, match=r"has no split 'test'; splits: train, validation"):
        Stream(corpus, "test", "src", "tgt")


def test_a_saved_stream_place_that_is_not_ours_is_one_line(tmp_path):
    where = tmp_path / "last.safetensors"
    good = {"part": 1, "start": {"epoch": 0}, "offset": 150, "digest": "ab"}
    first = {"part": 0, "start": None, "offset": 0, "digest": "ab"}
    for place in (good, first):
        assert TrainingState.from_json({"step": 3, "stream": place}, where).stream == place
    odd = ({**good, "start": None}, {**first, "offset": 3}, {**first, "start": {"epoch": 0}})
    for bad in (
        {**good, "part": -1},
        {**good, "offset": "150"},
        {"part": 1},
        [1, 2],
        {**good, "extra": 1},
        *odd,
    ):
        with pytest.raises(
            Seq2SeqError, match="the trainer state's stream place is not one this version writes"
        ):
            TrainingState.from_json({"step": 3, "stream": bad}, where)


@pytest.mark.parametrize(
    "options, said",
    [
        (["--corpus", "{data}/tsv/{{split}}.tsv"], "--stream reads a hub dataset"),
        (["--guided-alignment", "links.txt"], "--guided-alignment names the lines of a stored corpus"),
    ],
)
def test_what_a_stream_cannot_train_is_refused_before_anything_is_written(cli, tmp_path, options, said):
    write_hub_folder(tmp_path / "hub", n_train=20)
    hub = ["--corpus", str(tmp_path / "hub"), "--src", "src", "--tgt", "tgt"]
    args = [*hub, *(o.format(data=tmp_path / "hub") for o in options)]
    result = cli("train", "--stream", *args, "--max-steps", "1", "--run", tmp_path / "run")
    assert result.code == 2 and said in result.err and "Traceback" not in result.err
    assert not (tmp_path / "run").exists()


def test_tokenize_learns_from_the_streams_first_sentences_as_train_does(cli, tmp_path):
    corpus = write_hub_folder(tmp_path / "hub", n_train=900)
    langs = ["--corpus", corpus, "--src", "src", "--tgt", "tgt", "--vocab-size", "24"]
    sample = ["--tokenizer-sentences", "1000"]  # the first 500 pairs of 900
    made = cli("tokenize", *langs, *sample, "--stream", "--run", tmp_path / "tokenized")
    assert made.code == 0, made.err
    trained = cli(
        "train",
        *langs,
        *sample,
        "--stream",
        "--max-steps",
        "1",
        "--preset",
        "tiny",
        "--run",
        tmp_path / "run",
    )
    assert trained.code == 0, trained.err
    assert "training pairs streamed from" in trained.out and "100,000 a part" in trained.out
    assert (tmp_path / "tokenized" / "tokenizer.model").read_bytes() == (
        tmp_path / "run" / "tokenizer.model"
    ).read_bytes()
    whole = cli("tokenize", *langs, *sample, "--run", tmp_path / "whole")  # a uniform sample of all 900
    assert (
        whole.code == 0
        and (tmp_path / "whole" / "tokenizer.model").read_bytes()
        != (tmp_path / "run" / "tokenizer.model").read_bytes()
    )
    refused = cli(
        "tokenize",
        "--corpus",
        str(tmp_path / "hub" / "tsv" / "{split}.tsv"),
        "--stream",
        "--run",
        tmp_path / "t",
    )
    assert refused.code == 2 and "--stream reads a hub dataset" in refused.err


def test_two_processes_on_a_stream_train_as_two_on_the_stored_corpus(tmp_path):
    """Each process reads the whole stream and trains on its share of each step's batches."""
    corpus = write_hub_folder(tmp_path / "hub", n_train=120)
    args = [*TORCHRUN_TRAIN, "--corpus", corpus, "--src", "src", "--tgt", "tgt", "--vocab-size", "32"]
    jobs = {
        name: torchrun(*args, *extra, "--run", str(tmp_path / name), cwd=tmp_path)
        for name, extra in (("stored", []), ("streamed", ["--stream"]))
    }
    for name, job in jobs.items():
        out, err = job.communicate(timeout=240)
        assert job.returncode == 0, err[-3000:]
        assert " ".join(out.split()).count("x 2 processes (gloo)") == 1, name  # rank 0 alone reports
    a, b = model_weights(tmp_path / "stored"), model_weights(tmp_path / "streamed")
    assert a.keys() == b.keys()
    for name in a:
        torch.testing.assert_close(a[name], b[name], rtol=0, atol=0, msg=name)
