"""Options and corpora that `seq2seq` refuses, each in one line on stderr, exit 2, never a
traceback: numbers out of range or not finite for `translate`, `score` and `train`, an unknown
preset or language, and corpora that are missing, empty, filtered to nothing, garbage, corrupted or
named with stray braces. A GPU out of memory is one line too, naming the options that lower it."""

import pytest
import torch

from tests.cli_helpers import run_process
from tests.conftest import write_multi30k
from tests.helpers import TRAIN, train_args

RUN_TRAINED = True  # conftest's `run` is the CLI-trained tiny run


@pytest.mark.parametrize(
    "args,message",
    [
        (["--beam", "0"], "'--beam': must be at least 1"),
        (["--max-len", "-3"], "'--max-len': must be at least 1"),
        (["--min-len", "-1"], "'--min-len': must be at least 0"),
        (
            ["--min-len", "9", "--max-len", "4"],
            "'--min-len', '--max-len': 9 pieces at least is above 4 at most",
        ),
        (["--beam", "2", "--nbest", "3"], "'--nbest', '--beam': must be between 1 and the beam size 2"),
        (["--batch-size", "0"], "'--batch-size': must be at least 1"),
        (["--length-penalty", "300"], "'--length-penalty': must be between 0 and 10, got 300"),
        (["--length-penalty", "-1"], "'--length-penalty': must be between 0 and 10, got -1"),
        (["caf\udce9"], "argument 1 is not valid UTF-8"),  # the byte 0xe9, as Python passes it on
        (["--beam", "100000"], "'--beam': 100000 is above the vocabulary's"),
    ],
)
def test_bad_translate_options(run, cli, args, message):
    result = cli("translate", "--run", run, *args, "hello")
    assert result.code == 2 and message in result.err and result.err.count("\n") == 1


def test_score_refuses_an_overflowing_length_penalty(run, cli, tmp_path):
    (tmp_path / "f").write_text("a dog\n")
    result = cli("score", "--run", run, "--source", tmp_path / "f", "--target", tmp_path / "f",
                 "--length-penalty", "300")  # fmt: skip
    assert result.code == 2 and "'--length-penalty': must be between 0 and 10" in result.err


def test_bad_train_options_and_corpora(cli, tmp_path):
    data = write_multi30k(tmp_path / "corpus", {"train": 5, "val": 2})
    cases = [
        (["--preset", "huge"], "'huge' is not one of tiny, small, base"),
        (["--src", "en", "--tgt", "xx"], "no language 'xx'"),
        (["--data-dir", tmp_path / "missing"], "does not exist"),
        (["--subword-alpha", "1.5"], "Invalid value for '--subword-alpha'"),
        (["--subword-alpha", "nan"], "Invalid value for '--subword-alpha'"),
        (["--label-smoothing", "-0.1"], "Invalid value for '--label-smoothing'"),
        (["--weight-decay", "-0.1"], "Invalid value for '--weight-decay'"),
        (["--decay", "cosine"], "Invalid value for '--decay': 'cosine' is not one of rsqrt, none"),
    ]  # what follows "Invalid value" in a range error is Typer's wording, which changes between versions
    for args, message in cases:
        result = cli("train", "--data-dir", data, "--run", tmp_path / "run", *args)
        assert result.code == 2 and message in result.err and len(result.err.splitlines()) == 1, result.err
    (data / "train.en.gz").write_bytes(b"")
    result = cli("train", "--data-dir", data, "--run", tmp_path / "run")
    assert result.code == 2 and "train.en.gz is empty" in result.err, result.err


@pytest.mark.parametrize("option", ["--lr", "--dropout", "--max-minutes", "--save-every-minutes"])
@pytest.mark.parametrize("value", ["inf", "nan"])
def test_non_finite_numbers_are_refused(cli, tmp_path, option, value):
    result = cli(*train_args(tmp_path, tmp_path / "run"), option, value)
    assert result.code == 2 and option in result.err, result.err
    assert len(result.err.strip().splitlines()) == 1 and not (tmp_path / "run").exists()


def test_corpus_whose_every_pair_is_filtered(cli, tmp_path):
    (tmp_path / "train.en").write_text("\n\n")
    (tmp_path / "train.fr").write_text("x\n\n")
    (tmp_path / "val.en").write_text("a\n")
    (tmp_path / "val.fr").write_text("b\n")
    result = cli("train", "--data-dir", tmp_path, "--run", tmp_path / "run")
    assert result.code == 2 and "every one of the 2 training pairs was filtered out" in result.err


@pytest.mark.parametrize("suffix,garbage", [(".jsonl", b'{"garbage{{\n'), (".parquet", b"PAR1garbage")])
def test_a_garbage_corpus_file_is_one_line(tmp_path, suffix, garbage):
    """datasets logs its own error before raising; ours alone is shown."""
    for split in ("train", "val"):
        (tmp_path / f"{split}{suffix}").write_bytes(garbage)
    corpus = str(tmp_path / f"{{split}}{suffix}")
    result = run_process(["tokenize", "--corpus", corpus, "--run", tmp_path / "run"])
    assert result.code == 2 and "cannot load" in result.err, result.err
    assert len(result.err.strip().splitlines()) == 1, result.err


def corrupt_gzip(folder):
    (folder / "train.en.gz").write_bytes(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03garbage bytes")


@pytest.mark.parametrize("command", ["train", "tokenize"])
def test_a_corrupted_gzip_corpus_is_one_line(command, tmp_path):
    data = write_multi30k(tmp_path / "corpus", {"train": 20, "val": 4})
    corrupt_gzip(data)
    args = TRAIN if command == "train" else ["tokenize", "--vocab-size", "60"]
    result = run_process([*args, "--data-dir", data, "--run", tmp_path / "run"])
    assert result.code == 2 and "train.en.gz: cannot read" in result.err, result.err
    assert len(result.err.strip().splitlines()) == 1


@pytest.mark.parametrize("pattern", ["{split}{0}.tsv", "{split}.{split.a}.tsv", "{split}{x}.tsv"])
def test_braces_in_a_corpus_pattern_are_one_line(tmp_path, pattern):
    result = run_process([*TRAIN, "--corpus", str(tmp_path / pattern), "--run", tmp_path / "run"])
    assert result.code == 2 and "no other braces" in result.err and len(result.err.splitlines()) == 1


def test_out_of_gpu_memory_is_a_one_line_hint(run, cli, monkeypatch):
    """The CUDA path's error, raised where a GPU would raise it (no GPU needed to test the answer)."""
    import seq2seq.decoding.search as decode

    def out_of_memory(*args, **kwargs):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    monkeypatch.setattr(decode, "search", out_of_memory)
    result = cli("translate", "--run", run, "a dog runs")
    assert result.code == 2 and "out of GPU memory: lower --max-tokens (train) or --batch-size" in result.err
    assert len(result.err.splitlines()) == 1
