"""The tokenizer's sample from the command line: `train` and `tokenize` draw the same one from the
same seed, and a corpus is streamed through it, so a bad line anywhere is refused before anything
is written."""

from pathlib import Path

from tests.conftest import EN, FR
from tests.helpers import TRAIN

SAMPLE = ["--tokenizer-sentences", "1000"]  # below the 1,600 sentences of an 800-pair corpus


def tsv_corpus(folder: Path, pairs: int, last: str | None = None) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    lines = [f"{EN[i % 6]} {i % 50}\t{FR[i % 6]} {i % 50}" for i in range(pairs)]
    (folder / "train.tsv").write_text("\n".join(lines + ([last] if last else [])) + "\n", encoding="utf-8")
    (folder / "val.tsv").write_text("\n".join(lines[:6]) + "\n", encoding="utf-8")
    return str(folder / "{split}.tsv")


def tokenizer_bytes(run: Path) -> bytes:
    return (run / "tokenizer.model").read_bytes()


def test_train_and_tokenize_draw_the_same_sample(cli, tmp_path):
    corpus = ["--corpus", tsv_corpus(tmp_path / "corpus", 800), "--src", "en", "--tgt", "fr"]
    trained = cli(*TRAIN, "--max-steps", "1", *corpus, *SAMPLE, "--run", tmp_path / "trained")
    assert trained.code == 0, trained.err
    for name, options in (("sampled", SAMPLE), ("whole", []), ("reseeded", [*SAMPLE, "--seed", "2"])):
        made = cli("tokenize", *corpus, "--vocab-size", "60", *options, "--run", tmp_path / name)
        assert made.code == 0, made.err
        assert "on 800 sentence pairs: 60 pieces" in made.out
    assert tokenizer_bytes(tmp_path / "trained") == tokenizer_bytes(tmp_path / "sampled")
    assert tokenizer_bytes(tmp_path / "sampled") != tokenizer_bytes(tmp_path / "whole")
    assert tokenizer_bytes(tmp_path / "sampled") != tokenizer_bytes(tmp_path / "reseeded")


def test_a_bad_line_at_the_end_of_a_streamed_corpus_leaves_no_run(cli, tmp_path):
    corpus = ["--corpus", tsv_corpus(tmp_path / "corpus", 800, last="no tab here"), "--src", "en"]
    for command in (TRAIN, ["tokenize", "--vocab-size", "60"]):
        run = tmp_path / command[0]
        result = cli(*command, *corpus, *SAMPLE, "--run", run)
        assert result.code == 2 and result.out.strip() == ""
        assert result.err.strip().endswith("train.tsv: line 801 has no tab; a line is source<TAB>target")
        assert "\n" not in result.err.strip()
        assert not (run / "tokenizer.model").exists() and not (run / "tokenized").exists()


def test_a_sample_below_its_floor_is_a_usage_error(cli, tmp_path):
    result = cli("tokenize", "--corpus", tsv_corpus(tmp_path / "c", 10), "--tokenizer-sentences", "999")
    assert result.code == 2 and "--tokenizer-sentences" in result.err and "1000" in result.err


def test_a_fine_tuned_run_reads_the_whole_corpus_before_it_copies_the_tokenizer(
    cli, tiny_run, tmp_path, monkeypatch
):
    """Its tokenizer is the start's, checked on the first pairs; a bad line after them still stops it."""
    start, _ = tiny_run
    monkeypatch.setattr("seq2seq.training.finetune.SAMPLE", 100)
    corpus = ["--corpus", tsv_corpus(tmp_path / "corpus", 800, last="a\tb\tc"), "--src", "en", "--tgt", "fr"]
    tune = ["train", "--max-steps", "1", "--max-tokens", "256", "--device", "cpu", "--init-from", start]
    result = cli(*tune, *corpus, "--run", tmp_path / "tuned")
    assert result.code == 2 and "train.tsv: line 801 has 2 tabs" in result.err
    assert not (tmp_path / "tuned" / "tokenizer.model").exists()
