import pytest

from seq2seq.data.special import BOS_ID, EOS_ID, PAD_ID, UNK_ID
from seq2seq.data.tokenizer import Tokenizer, train_tokenizer
from seq2seq.errors import Seq2SeqError
from tests.conftest import EN, FR

TEXTS = [f"{e} {i}" for i, e in enumerate(EN * 20)] + [f"{f} {i}" for i, f in enumerate(FR * 20)]


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    return train_tokenizer(TEXTS, tmp_path_factory.mktemp("tok") / "tokenizer.model", vocab_size=120)


def test_special_ids_are_fixed(tokenizer):
    sp = tokenizer.sp
    assert (sp.pad_id(), sp.unk_id(), sp.bos_id(), sp.eos_id()) == (PAD_ID, UNK_ID, BOS_ID, EOS_ID)
    assert tokenizer.vocab_size <= 120


@pytest.mark.parametrize("text", ["a dog runs 12", "le chat dort", "une fille joue 7", ""])
def test_round_trip(tokenizer, text):
    assert tokenizer.decode(tokenizer.encode([text])) == [text]


def test_encoding_never_adds_specials(tokenizer):
    ids = tokenizer.encode(["a dog runs"])[0]
    assert ids and not {PAD_ID, BOS_ID, EOS_ID} & set(ids)


def test_reload_gives_same_ids(tokenizer, tmp_path):
    path = tmp_path / "copy.model"
    path.write_bytes(tokenizer.sp.serialized_model_proto())
    assert Tokenizer(path).encode(["le chat dort"]) == tokenizer.encode(["le chat dort"])


def test_missing_or_broken_model_is_a_clean_error(tmp_path):
    with pytest.raises(Seq2SeqError, match="no tokenizer at"):
        Tokenizer(tmp_path / "none.model")
    (tmp_path / "bad.model").write_bytes(b"not a model")
    with pytest.raises(Seq2SeqError, match="is not a SentencePiece model"):
        Tokenizer(tmp_path / "bad.model")


def test_a_corpus_above_the_sample_size_gives_the_same_tokenizer_each_time(tmp_path):
    """SentencePiece trains on a sample above `seed_sentences`; the sample is drawn from the seed
    (SentencePiece 0.2 draws it from a fixed seed of its own too), so a rerun matches."""
    import random

    rng = random.Random(0)
    texts = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(12)) for _ in range(3000)]
    for name in ("first", "again"):
        train_tokenizer(texts, tmp_path / name, 200, seed_sentences=101, seed=7)
    assert (tmp_path / "first").read_bytes() == (tmp_path / "again").read_bytes()
