import pytest

from seq2seq.data.special import BOS_ID, EOS_ID, PAD_ID, UNK_ID
from seq2seq.data.tokenizer import Tokenizer, sample_sentences, train_tokenizer
from seq2seq.errors import Seq2SeqError
from tests.conftest import EN, FR
from tests.helpers import SENTENCES

TEXTS = [f"{e} {i}" for i, e in enumerate(EN * 20)] + [f"{f} {i}" for i, f in enumerate(FR * 20)]


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    return train_tokenizer(
        TEXTS, tmp_path_factory.mktemp("tok") / "tokenizer.model", 120, sentences=SENTENCES
    )


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
        train_tokenizer(texts, tmp_path / name, 200, sentences=1001, seed=7)
    assert (tmp_path / "first").read_bytes() == (tmp_path / "again").read_bytes()


def test_a_corpus_within_the_sample_is_read_whole_in_order():
    texts = [f"s{i}" for i in range(50)]
    assert sample_sentences(iter(texts), 50, seed=3) == (texts, 50)
    assert sample_sentences(iter(texts), 80, seed=3) == (texts, 50)


def test_the_sample_is_uniform_and_drawn_from_the_seed():
    n, size, draws = 40, 10, 4000
    counts = [0] * n
    for seed in range(draws):
        sample, seen = sample_sentences(iter(range(n)), size, seed)
        assert seen == n and len(sample) == size == len(set(sample))
        for i in sample:
            counts[i] += 1
    expected = draws * size / n  # 1,000 each; a binomial's standard deviation is ~27
    assert all(abs(c - expected) < 150 for c in counts), counts
    assert sample_sentences(iter(range(n)), size, 5) == sample_sentences(iter(range(n)), size, 5)
    assert sample_sentences(iter(range(n)), size, 5) != sample_sentences(iter(range(n)), size, 6)


def test_a_tokenizer_within_its_sample_does_not_depend_on_the_sample_size(tmp_path):
    """A corpus under the sample size is not sampled: the model file is the same byte for byte."""
    texts = [f"{e} {i}" for i, e in enumerate(EN * 40)] + [f"{f} {i}" for i, f in enumerate(FR * 40)]
    for name, sentences in (("exact", len(texts)), ("larger", 10 * len(texts))):
        train_tokenizer(texts, tmp_path / name, 90, sentences=sentences)
    assert (tmp_path / "exact").read_bytes() == (tmp_path / "larger").read_bytes()


def test_a_sample_is_what_the_tokenizer_learns_from(tmp_path):
    """Above the sample size the tokenizer sees a sample: another model than of every sentence."""
    texts = [f"{e} {i % 10}" for i, e in enumerate(EN * 200)] + ["zyxwvutsrq " * 3] * 20
    whole = train_tokenizer(texts, tmp_path / "whole", 40, sentences=2000)
    part = train_tokenizer(texts, tmp_path / "part", 40, sentences=1000, seed=2)
    assert whole.vocab_size == part.vocab_size == 40
    assert (tmp_path / "whole").read_bytes() != (tmp_path / "part").read_bytes()


def test_a_sample_too_small_for_the_vocabulary_says_so(tmp_path):
    texts = [f"w{i} v{i * 7}" for i in range(3000)]
    with pytest.raises(Seq2SeqError, match="raise --tokenizer-sentences or lower --vocab-size") as e:
        train_tokenizer(texts, tmp_path / "t.model", 4000, sentences=1000)
    assert "a sample of 1,000 of the corpus's 3,000 sentences gives only" in str(e.value)
    assert not (tmp_path / "t.model").exists()
    assert train_tokenizer(texts[:1000], tmp_path / "t.model", 4000, sentences=1000).vocab_size < 4000
