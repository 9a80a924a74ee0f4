import gzip

import pytest

from seq2seq.data.corpus import corpus_name, filter_pairs, load_pairs
from seq2seq.data.tokenizer import train_tokenizer
from seq2seq.errors import Seq2SeqError
from tests.conftest import write_multi30k
from tests.helpers import SENTENCES


@pytest.mark.parametrize("gz", [True, False])
def test_local_multi30k_dir(tmp_path, gz):
    folder = write_multi30k(tmp_path / "m", {"train": 7, "val": 3}, gz=gz)
    pairs = load_pairs("multi30k", "train", "en", "fr", folder)
    assert len(pairs) == 7
    assert pairs[1] == ("two men sit 1", "deux hommes assis 1")


def test_data_dir_from_environment(tmp_path, monkeypatch):
    folder = write_multi30k(tmp_path / "m", {"val": 3})
    monkeypatch.setenv("SEQ2SEQ_DATA_DIR", str(folder))
    assert len(load_pairs("multi30k", "val", "en", "fr")) == 3


def test_empty_lines_and_odd_characters_keep_alignment(tmp_path):
    (tmp_path / "val.en").write_text("a\n\nb\x0cc\nd\u2028e\n", encoding="utf-8")
    (tmp_path / "val.fr").write_text("A\n\nB\nD\n", encoding="utf-8")
    assert load_pairs("multi30k", "val", "en", "fr", tmp_path) == [
        ("a", "A"),
        ("", ""),
        ("b\x0cc", "B"),
        ("d\u2028e", "D"),
    ]


@pytest.mark.parametrize("gz", [True, False])
def test_a_lone_carriage_return_stays_inside_its_line(tmp_path, gz):
    en = b"a\rstill a\r\nb\n"  # CRLF ends a line; a CR alone does not
    if gz:
        with gzip.open(tmp_path / "val.en.gz", "wb") as f:
            f.write(en)
    else:
        (tmp_path / "val.en").write_bytes(en)
    (tmp_path / "val.fr").write_bytes(b"A\nB")
    assert load_pairs("multi30k", "val", "en", "fr", tmp_path) == [("a\rstill a", "A"), ("b", "B")]
    (tmp_path / "train.tsv").write_bytes(b"x\ry\tX\r\nz\tZ\n")
    assert load_pairs(str(tmp_path / "{split}.tsv"), "train", "en", "fr") == [("x\ry", "X"), ("z", "Z")]


def test_misaligned_sides_name_both_files_and_counts(tmp_path):
    (tmp_path / "val.en").write_text("a\nb\nc\n")
    (tmp_path / "val.fr").write_text("A\nB\n")
    with pytest.raises(Seq2SeqError, match=r"val\.en has 3 lines but .*val\.fr has 2"):
        load_pairs("multi30k", "val", "en", "fr", tmp_path)


@pytest.mark.parametrize("gz", [True, False])
def test_non_utf8_names_file_and_line(tmp_path, gz):
    data = b"fine\nalso fine\nbad \xff byte\n"
    (tmp_path / "val.fr").write_text("x\ny\nz\n")
    if gz:
        with gzip.open(tmp_path / "val.en.gz", "wb") as f:
            f.write(data)
    else:
        (tmp_path / "val.en").write_bytes(data)
    with pytest.raises(Seq2SeqError, match=r"val\.en(\.gz)?: line 3 is not valid UTF-8"):
        load_pairs("multi30k", "val", "en", "fr", tmp_path)


def test_missing_split_lists_what_exists(tmp_path):
    folder = write_multi30k(tmp_path / "m", {"train": 3})
    with pytest.raises(Seq2SeqError, match=r"no val\.en.*found: train\.en, train\.fr"):
        load_pairs("multi30k", "val", "en", "fr", folder)
    with pytest.raises(Seq2SeqError, match="no split 'dev'; splits: train, val"):
        load_pairs("multi30k", "dev", "en", "fr", folder)


def test_unknown_language_lists_languages(tmp_path):
    with pytest.raises(Seq2SeqError, match="no language 'cs'; languages: en, de, fr"):
        load_pairs("multi30k", "test_2017_flickr", "en", "cs", tmp_path)


def test_tsv(tmp_path):
    (tmp_path / "train.tsv").write_text("hello\tbonjour\nthe cat\tle chat\n", encoding="utf-8")
    pairs = load_pairs(str(tmp_path / "{split}.tsv"), "train", "en", "fr")
    assert pairs == [("hello", "bonjour"), ("the cat", "le chat")]
    (tmp_path / "val.tsv").write_text("ok\tok\nno tab here\n")
    with pytest.raises(Seq2SeqError, match=r"val\.tsv: line 2 has no tab"):
        load_pairs(str(tmp_path / "{split}.tsv"), "val", "en", "fr")
    (tmp_path / "test.tsv").write_text("ok\tok\nsource\ttarget\textra column\n")
    with pytest.raises(Seq2SeqError, match=r"test\.tsv: line 2 has 2 tabs; a line is source<TAB>target"):
        load_pairs(str(tmp_path / "{split}.tsv"), "test", "en", "fr")


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_translation_column_dataset_through_datasets(tmp_path, fmt):
    import datasets

    rows = {"translation": [{"en": "a dog", "fr": "un chien"}, {"en": "a cat", "fr": "un chat"}]}
    ds = datasets.Dataset.from_dict(rows)
    path = tmp_path / f"train.{fmt}"
    ds.to_parquet(path) if fmt == "parquet" else ds.to_json(path)
    pattern = str(tmp_path / f"{{split}}.{fmt}")
    assert load_pairs(pattern, "train", "en", "fr") == [("a dog", "un chien"), ("a cat", "un chat")]
    with pytest.raises(Seq2SeqError, match="no language 'de'; languages: en, fr"):
        load_pairs(pattern, "train", "en", "de")
    rows["translation"].append({"en": "a bird", "fr": None})
    ds = datasets.Dataset.from_dict(rows)
    ds.to_parquet(path) if fmt == "parquet" else ds.to_json(path)
    with pytest.raises(Seq2SeqError, match="row 3 has no 'en' and 'fr' text"):
        load_pairs(pattern, "train", "en", "fr")


def test_unreachable_hub_dataset_is_a_clean_error(monkeypatch):
    import datasets
    import huggingface_hub

    # offline mode is read at import time, so set the already-imported flags, not the environment
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True, raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(Seq2SeqError, match="cannot load dataset 'no-such/corpus-xyz'"):
        load_pairs("no-such/corpus-xyz", "train", "en", "fr")


def test_filters_report_what_they_drop():
    pairs = [
        ("a b", "c d"),
        ("", "x"),
        ("w " * 120, "w"),
        ("one two three four five six seven eight nine", "a"),
        ("Dogs.", "Des chiens."),
    ]
    words = lambda texts: [len(t.split()) for t in texts]  # noqa: E731 (a stand-in for pieces)
    kept, report = filter_pairs(pairs, words, max_len=100)
    assert kept == [("a b", "c d"), ("Dogs.", "Des chiens.")]
    assert (report.empty, report.too_long, report.bad_ratio, report.dropped) == (1, 1, 1, 3)
    with pytest.raises(Seq2SeqError, match="every one of the 1 training pairs was filtered out"):
        filter_pairs([("", "")], words)


def test_length_filters_count_pieces_so_a_script_without_spaces_is_kept(tmp_path):
    zh = ["一只狗在草地上奔跑", "两个男人坐在长椅上看报纸", "一个穿红衣服的女孩在公园里玩"]
    en = [
        "a dog runs on the grass",
        "two men sit on a bench reading newspapers",
        "a girl in red plays in a park",
    ]
    tokenizer = train_tokenizer(zh * 10 + en * 10, tmp_path / "zh-en.model", 80, sentences=SENTENCES)
    kept, report = filter_pairs(list(zip(en, zh, strict=True)), tokenizer.count_pieces)
    assert len(kept) == 3 and report.dropped == 0  # one "word" against up to 8: not a bad ratio


def test_corpus_name():
    assert corpus_name("multi30k") == "multi30k"
    assert corpus_name("data/books/{split}.tsv") == "books"
    assert corpus_name("opus_books:en-fr") == "opus_books"
