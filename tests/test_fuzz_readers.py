"""The readers of what users hand in, under generated input (hypothesis, seeded and bounded so it
fits in CI): corpus files (plain, gzip, TSV, JSON lines through `datasets`), Pharaoh and NAACL
alignment files, a run's config.json,
trainer state and metrics.jsonl, the tokenizer's encode and decode of any Unicode, and the
server's request bodies. Every input either works or raises the project's one error type
(`Seq2SeqError`; over HTTP a 4xx JSON error), never anything else.

A longer run: SEQ2SEQ_FUZZ_SCALE=40 python -m pytest tests/test_fuzz_readers.py (40 times the
examples of each target), or `python -m scripts.fuzz_long --minutes 30`: rounds with new seeds."""

import gzip
import json
import os
import tempfile
from importlib.resources import files as package_files
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seq2seq.data.corpus import load_pairs
from seq2seq.errors import Seq2SeqError
from seq2seq.runs import files as ckpt
from seq2seq.runs.recipe import stored_languages
from seq2seq.training.resume import TrainingState, stored_train_config
from tests.conftest import caption_tokenizer

SCALE = int(os.environ.get("SEQ2SEQ_FUZZ_SCALE", "1"))


def fuzzed(examples: int):
    return settings(
        max_examples=examples * SCALE,
        deadline=None,
        derandomize=not os.environ.get("SEQ2SEQ_FUZZ_RANDOM"),  # scripts/fuzz_long.py: a seed a round
        suppress_health_check=list(HealthCheck),
    )


LINE = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)
TSV_LINES = st.lists(st.tuples(LINE, LINE).map("\t".join) | LINE, max_size=8).map("\n".join)
BYTES = st.binary(max_size=400) | TSV_LINES.map(str.encode)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=5),
    max_leaves=20,
)


def works_or_one_error(read) -> object:
    try:
        return read()
    except Seq2SeqError as e:
        assert str(e) and "\n" not in str(e).strip()
        return None


def written(folder: Path, name: str, data: bytes, zipped: bool = False) -> Path:
    """The file a reader gets; also copied to SEQ2SEQ_FUZZ_LAST when set (scripts/fuzz_long.py), so
    that an input which crashes the process outright, before hypothesis can report it, is kept."""
    path = folder / name
    path.write_bytes(gzip.compress(data) if zipped else data)
    if os.environ.get("SEQ2SEQ_FUZZ_LAST"):
        Path(os.environ["SEQ2SEQ_FUZZ_LAST"]).write_bytes(path.read_bytes())
    return path


@fuzzed(80)
@given(data=BYTES, suffix=st.sampled_from([".tsv", ".tsv.gz", ".txt"]), zipped=st.booleans())
def test_a_tsv_corpus_of_any_bytes(data, suffix, zipped):
    with tempfile.TemporaryDirectory() as folder:
        written(Path(folder), f"train{suffix}", data, zipped)
        pattern = str(Path(folder) / f"{{split}}{suffix}")
        pairs = works_or_one_error(lambda: load_pairs(pattern, "train", "en", "fr"))
        if pairs is not None:
            assert all(isinstance(s, str) and isinstance(t, str) for s, t in pairs)


@fuzzed(60)
@given(en=BYTES, fr=BYTES, zipped=st.booleans())
def test_a_multi30k_folder_of_any_bytes(en, fr, zipped):
    with tempfile.TemporaryDirectory() as folder:
        written(Path(folder), "train.en.gz", en, zipped)
        written(Path(folder), "train.fr.gz", fr, zipped)
        pairs = works_or_one_error(lambda: load_pairs("multi30k", "train", "en", "fr", folder))
        if pairs is not None:
            assert all(isinstance(s, str) and isinstance(t, str) for s, t in pairs)


ROW = st.fixed_dictionaries({}, optional={"translation": JSON, "en": JSON, "fr": JSON}) | JSON


@fuzzed(6)  # each load goes through `datasets`: a second or so
@given(rows=st.lists(ROW, max_size=4), raw=st.binary(max_size=60), use_raw=st.booleans())
def test_a_json_lines_corpus_of_any_rows(rows, raw, use_raw):
    data = raw if use_raw else "\n".join(json.dumps(r) for r in rows).encode()
    with tempfile.TemporaryDirectory() as folder:
        written(Path(folder), "train.jsonl", data)
        pairs = works_or_one_error(
            lambda: load_pairs(str(Path(folder) / "{split}.jsonl"), "train", "en", "fr")
        )
        if pairs is not None:
            assert all(isinstance(s, str) and isinstance(t, str) for s, t in pairs)


RUN_SEED = 11  # the `run` fixture's weights (conftest.py)


def config_edits():
    """A run's own config.json with one section or one field replaced by anything, or raw bytes."""
    section = st.sampled_from(["model", "train", "tokenizer", None])
    return st.tuples(section, st.text(max_size=20), JSON) | st.binary(max_size=200)


@fuzzed(120)
@given(edit=config_edits())
def test_a_run_config_edited_anyhow(run, edit):
    original = (run / ckpt.CONFIG).read_bytes()
    if isinstance(edit, bytes):
        data = edit
    else:
        sections = json.loads(original)
        name, field, value = edit
        if name is None:
            sections = value
        elif isinstance(sections.get(name), dict) and field in sections[name]:
            sections[name][field] = value
        else:
            sections[name] = value
        data = json.dumps(sections).encode()
    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / "run"
        copy.mkdir()
        (copy / ckpt.CONFIG).write_bytes(data)
        (copy / ckpt.TOKENIZER).write_bytes((run / ckpt.TOKENIZER).read_bytes())
        works_or_one_error(lambda: ckpt.model_config(ckpt.load_config(copy)))
        works_or_one_error(lambda: stored_train_config(copy))
        works_or_one_error(lambda: stored_languages(copy))


@fuzzed(150)
@given(
    values=JSON | st.dictionaries(st.sampled_from(["step", "epoch", "batch", "best_bleu", "progress"]), JSON)
)
def test_a_trainer_state_of_any_json(values):
    state = works_or_one_error(lambda: TrainingState.from_json(values, Path("last.safetensors")))
    if state is not None:
        assert state.step >= 0 and state.best_bleu >= -1


@fuzzed(100)
@given(
    data=st.binary(max_size=300) | st.lists(JSON.map(json.dumps), max_size=6).map("\n".join).map(str.encode)
)
def test_metrics_of_any_bytes(data):
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / ckpt.METRICS).write_bytes(data)
        rows = works_or_one_error(lambda: ckpt.read_metrics(Path(folder)))
        if rows is not None:
            assert all(isinstance(r, dict) and isinstance(r["step"], int) for r in rows)


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    return caption_tokenizer(tmp_path_factory.mktemp("fuzz-tok") / "tokenizer.model")


@fuzzed(200)
@given(texts=st.lists(st.text(st.characters(blacklist_categories=("Cs",)), max_size=60), max_size=5))
def test_the_tokenizer_takes_any_unicode(tokenizer, texts):
    ids = tokenizer.encode(texts)
    assert len(ids) == len(texts) and all(0 <= i < tokenizer.vocab_size for row in ids for i in row)
    decoded = tokenizer.decode(ids)
    assert len(decoded) == len(texts) and all(isinstance(t, str) for t in decoded)
    assert tokenizer.encode(decoded) == tokenizer.encode(decoded)  # deterministic
    for text in texts:
        tokenizer.pieces(text)


@pytest.fixture(scope="module")
def client(run):
    from fastapi.testclient import TestClient

    from tests.serve_helpers import make_app

    with TestClient(make_app(run, beam=2, max_lines=4, max_chars=60)) as client:
        yield client


REQUEST = st.fixed_dictionaries(
    {"text": st.one_of(LINE, st.lists(LINE, max_size=5), JSON)},
    optional={
        key: JSON | st.integers(-3, 70)
        for key in ("beam", "nbest", "min_len", "max_len", "length_penalty", "greedy", "translation")
    },
)


@fuzzed(120)
@given(
    body=REQUEST.map(lambda r: json.dumps(r).encode()) | st.binary(max_size=200),
    path=st.sampled_from(["/translate", "/attention"]),
    content_type=st.sampled_from(["application/json", "text/plain", None]),
)
def test_the_server_answers_any_body_in_its_contract(client, body, path, content_type):
    headers = {"Content-Type": content_type} if content_type else {}
    response = client.post(path, content=body, headers=headers)
    assert response.status_code < 500, response.text
    if response.status_code >= 400:
        assert set(response.json()) == {"error"}


@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
@pytest.mark.parametrize("content", ["null\n", "\ufeff  true\n", "1\n", '[ null, {"en": "a", "fr": "b"}]\n'])
def test_a_json_corpus_that_begins_with_no_object_is_refused_not_a_crash(tmp_path, suffix, content):
    """Found by the fuzzer: a first row of `null`, and an array of `null` then an object, crashed
    the process inside Arrow's JSON reader (SIGSEGV). Run in a child process, so that a crash fails
    this test instead of ending the run."""
    import subprocess
    import sys

    (tmp_path / f"train{suffix}").write_text(content, encoding="utf-8")
    pattern = str(tmp_path / f"{{split}}{suffix}")
    result = subprocess.run(
        [sys.executable, "-m", "seq2seq", "tokenize", "--corpus", pattern, "--run", tmp_path / "run"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2 and "not rows of JSON objects" in result.stderr, result.stderr


class Unreadable:
    """Stands in for a `datasets` table of one `translation` column whose every row raises `error`
    when read, as `datasets` does for rows it cannot turn into Python."""

    column_names = ("translation",)

    def __init__(self, error: Exception):
        self.error = error

    def __getitem__(self, key):  # the column, then a row of it
        if key == "translation":
            return self
        raise self.error


def test_translation_rows_arrow_cannot_read_are_refused_in_one_line():
    """Found by scripts/fuzz_long.py: generated JSON lines whose rows Arrow held as a struct with two
    fields of one name, which it cannot turn into Python: `datasets` raised its ValueError from the
    first row's access. The bytes were lost to the round's timeout, so the row stands in for them."""
    from seq2seq.data.hf_datasets import translation_pairs

    table = Unreadable(
        ValueError("Converting to Python dictionary is not supported when duplicate field names are present")
    )
    with pytest.raises(
        Seq2SeqError, match=r"train.jsonl: its 'translation' rows cannot be read \(Converting"
    ):
        translation_pairs(table, "train.jsonl", "en", "fr")


def test_translation_rows_datasets_cannot_decode_are_refused_in_one_line():
    """Found by scripts/fuzz_long.py: generated JSON lines whose row `datasets` could not decode
    (a KeyError for a field named "\\x00", which Arrow keeps cut at the NUL). The round kept no
    bytes, so the table stands in for them, as above."""
    from seq2seq.data.hf_datasets import translation_pairs

    with pytest.raises(
        Seq2SeqError, match=r"train.jsonl: its 'translation' rows cannot be read \(a field '\\x00'\)"
    ):
        translation_pairs(Unreadable(KeyError("\x00")), "train.jsonl", "en", "fr")


def test_a_language_named_with_a_line_break_is_named_in_one_line(tmp_path):
    """Found by scripts/fuzz_long.py: a JSON-lines corpus whose first translation holds the key
    "\n0" split the error that lists the languages it has in two."""
    path = tmp_path / "train.jsonl"
    path.write_text(json.dumps({"translation": {"\n0": None}}) + "\n")
    with pytest.raises(Seq2SeqError) as refused:
        load_pairs(str(tmp_path / "{split}.jsonl"), "train", "en", "fr")
    assert "\n" not in str(refused.value) and "languages: '\\n0'" in str(refused.value)


def test_a_field_name_with_a_line_break_is_named_in_one_line(run, tmp_path):
    """Found by the fuzzer: a train field named "\\n0" broke the one-line error in two."""
    copy = tmp_path / "run"
    copy.mkdir()
    sections = json.loads((run / ckpt.CONFIG).read_text())
    sections["train"]["\n0"] = 1
    (copy / ckpt.CONFIG).write_text(json.dumps(sections))
    with pytest.raises(Seq2SeqError) as refused:
        stored_train_config(copy)
    assert "does not know: '\\n0'" in str(refused.value) and "\n" not in str(refused.value)


LINKS = st.lists(
    st.tuples(st.integers(0, 12), st.sampled_from("-?p:x "), st.integers(0, 12)).map(
        lambda t: f"{t[0]}{t[1]}{t[2]}"
    ),
    max_size=6,
).map(" ".join)
ALIGNMENT_FILES = st.lists(LINKS | LINE, max_size=6).map("\n".join).map(str.encode) | st.binary(max_size=200)


@fuzzed(150)
@given(data=ALIGNMENT_FILES)
def test_alignment_files_are_read_or_refused_in_one_line(data):
    """Pharaoh and NAACL gold files (`align --gold`, `train --guided-alignment`): links within
    range of a pair of 5 + 5 words are kept, anything else is one error naming the file."""
    from seq2seq.alignment.pharaoh import check_ranges, read_links

    with tempfile.TemporaryDirectory() as tmp:
        path = written(Path(tmp), "gold.align", data)
        links = works_or_one_error(lambda: read_links(path))
        if links is not None:
            assert all(link.sure <= link.possible for link in links)
            works_or_one_error(lambda: check_ranges(links, [5] * len(links), [5] * len(links), path))


def side_file_edits(valid: dict):
    """A side file (aligner.json, trust.json) with one field, or one nested field, replaced by
    anything; or any JSON; or raw bytes."""
    top = st.sampled_from(sorted(valid))
    return (
        st.tuples(top, st.one_of(st.none(), st.text(max_size=12)), JSON)
        | JSON.map(lambda v: ("whole", None, v))
        | st.binary(max_size=200)
    )


def edited(valid: dict, edit) -> bytes:
    if isinstance(edit, bytes):
        return edit
    name, inner, value = edit
    if name == "whole":
        return json.dumps(value).encode()
    data = json.loads(json.dumps(valid))
    if inner is not None and isinstance(data[name], dict):
        data[name][inner if inner in data[name] else sorted(data[name])[0]] = value
    else:
        data[name] = value
    return json.dumps(data).encode()


VALID_CALIBRATION = json.loads(package_files("seq2seq.trust").joinpath("calibration.json").read_text())
VALID_SETTINGS = {"config": {"d_model": 32, "width": 16, "heads": 4}, "threshold": 0.3, "weights": None}


@fuzzed(150)
@given(edit=side_file_edits(VALID_CALIBRATION))
def test_a_trust_json_edited_anyhow_is_read_or_refused_in_one_line(edit):
    from seq2seq.trust.calibration import Calibration

    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "trust.json").write_bytes(edited(VALID_CALIBRATION, edit))
        found = works_or_one_error(lambda: Calibration.read(Path(folder) / "trust.json"))
        if found is not None:
            assert len(found.omission.weights) == len(found.omission.mean) + 1


@fuzzed(150)
@given(edit=side_file_edits(VALID_SETTINGS))
def test_an_aligner_json_edited_anyhow_is_read_or_refused_in_one_line(edit):
    from seq2seq.alignment.aligner import read_settings

    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "aligner.json").write_bytes(edited(VALID_SETTINGS, edit))
        found = works_or_one_error(lambda: read_settings(Path(folder) / "aligner.json"))
        if found is not None:
            config, threshold, _ = found
            assert config["width"] % config["heads"] == 0 and 0 <= threshold <= 1


@pytest.mark.parametrize(
    "settings, words",
    [
        ({"config": {"bogus": 1}, "threshold": 0.5}, "config must hold d_model, width, heads"),
        ({"config": {"d_model": 32, "width": 16, "heads": 3}, "threshold": 0.5}, "multiple of config.heads"),
        ({"config": {"d_model": 32, "width": 16, "heads": 4}, "threshold": "x"}, "threshold must be"),
    ],
)
def test_a_hand_edited_aligner_json_is_one_line_naming_the_field(tmp_path, settings, words):
    from seq2seq.alignment.aligner import read_settings

    (tmp_path / "aligner.json").write_text(json.dumps(settings))
    with pytest.raises(Seq2SeqError, match=words):
        read_settings(tmp_path / "aligner.json")


def test_a_trust_json_with_two_weights_for_five_features_is_one_line(tmp_path):
    from seq2seq.trust.calibration import Calibration

    data = json.loads(json.dumps(VALID_CALIBRATION))
    data["omission"]["weights"] = [0.1, 0.2]
    (tmp_path / "trust.json").write_text(json.dumps(data))
    with pytest.raises(
        Seq2SeqError, match=r"trust.json is no calibration \(omission.weights must be a list of 6"
    ):
        Calibration.read(tmp_path / "trust.json")


PIECES = [
    *"<>&;/*_`[]()!#\\|-~=:.'\" \n\r\t\u00a0\u200b\u2028\u00e9abAB1",
    *("&amp;", "&lt;", "&#1", "&#x4", "&eacute", "<b>", "</b>", "<i>", "</i>", "<br>", "<p>", "</p>"),
    *("<!--", "-->", "<?", "]]>", "<![CDATA[", "<pre>", "</pre>", "<script>", "<a href='x'>", "</a>"),
    *("<wbr>", "<!DOCTYPE", "**", "~~", "  \n", "\\\n", "\n\n", "    ", "](", "![", '](x "t")', "```"),
    *("> ", "- ", "1. ", "| a |", "|---|"),
]
MARKUP = st.lists(st.sampled_from(PIECES), max_size=40).map("".join)
SUBTITLE = st.builds(
    lambda cues: "".join(
        f"{n}\n00:00:0{n % 10},000 --> 00:00:0{n % 10},500\n{c}\n\n" for n, c in enumerate(cues, 1)
    ),
    st.lists(MARKUP.filter(lambda c: c.strip() and "\n\n" not in c and "\r" not in c), max_size=4),
)


@pytest.mark.parametrize("format", ["text", "markdown", "html", "srt"])
@fuzzed(120)
@given(data=st.data())
def test_a_document_comes_back_byte_for_byte_or_is_one_error(format, data):
    """The identity round trip (each sentence translated as itself) gives any document back
    exactly, or refuses it in one line: nothing lost, nothing garbled, no traceback."""
    from seq2seq.documents.translate import round_trip

    text = data.draw(SUBTITLE if format == "srt" else MARKUP)
    back = works_or_one_error(lambda: round_trip(text, format))
    assert back is None or back == text
