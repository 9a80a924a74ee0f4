"""One joint SentencePiece model for both languages, so embeddings and output layer can be tied.

Every text-to-ids method takes the text's `side` ("source" or "target"): the joint model reads
both alike, an imported Marian model's tokenizer (`pair_tokenizer.py`) has one model per side.
`open_tokenizer` opens either from a run's `tokenizer.model`.
"""

import io
import os
import random
import unicodedata
from collections.abc import Iterable
from pathlib import Path

import sentencepiece as spm

from seq2seq.allocator import release_freed_memory
from seq2seq.atomic import write_atomic
from seq2seq.data.special import BOS_ID, EOS_ID, PAD_ID, UNK_ID
from seq2seq.errors import Seq2SeqError, first_line


class Tokenizer:
    """Text <-> piece ids through a trained SentencePiece model."""

    def __init__(self, path: str | Path):
        self.path = path = Path(path)
        if not path.is_file():
            raise Seq2SeqError(f"no tokenizer at {path}; run `seq2seq tokenize` or `seq2seq train`")
        self.sp = spm.SentencePieceProcessor()
        try:
            self.sp.Load(str(path))
        except (OSError, RuntimeError) as e:
            raise Seq2SeqError(f"{path} is not a SentencePiece model ({e})") from None
        if (self.sp.pad_id(), self.sp.unk_id(), self.sp.bos_id(), self.sp.eos_id()) != (
            PAD_ID,
            UNK_ID,
            BOS_ID,
            EOS_ID,
        ):
            raise Seq2SeqError(f"{path} was not trained with seq2seq's special ids")

    @property
    def vocab_size(self) -> int:
        return self.sp.GetPieceSize()

    @property
    def target_vocab_size(self) -> int:
        """The ids the target side uses, the decoder's vocabulary: all of them in a joint model."""
        return self.vocab_size

    def encode(self, texts: list[str], side: str = "source") -> list[list[int]]:
        """Piece ids without BOS/EOS; the batcher adds those where each side needs them."""
        return self.sp.Encode(texts)

    def sample(self, texts: list[str], alpha: float, seed: int, side: str = "source") -> list[list[int]]:
        """One segmentation per text drawn from the whole lattice with probability ~ P(x)^alpha
        (subword regularization, Kudo 2018): training sees the many ways a word splits, so the
        model leans less on one. SentencePiece's generator is global and its state unsaved, so it
        is reseeded per call: the same `seed` gives the same pieces, and a resumed run the same
        batches as the one never stopped. One thread: SentencePiece hands sentences to its threads
        in no fixed order, and each thread draws from its own generator."""
        spm.set_random_generator_seed(seed)
        return self.sp.Encode(texts, enable_sampling=True, alpha=alpha, nbest_size=-1, num_threads=1)

    def decode(self, ids: list[list[int]]) -> list[str]:
        return self.sp.Decode(ids)

    def pieces(self, text: str, side: str = "source") -> list[str]:
        return self.sp.EncodeAsPieces(text)

    def count_pieces(self, texts: list[str], side: str = "source") -> list[int]:
        return [len(ids) for ids in self.encode(texts, side)]

    def id_pieces(self, ids: list[int]) -> list[str]:
        """The piece of each id, specials included (`<s>`, `</s>`): labels for attention maps."""
        return [self.sp.IdToPiece(i) for i in ids]


def is_blank(text: str) -> bool:
    """Whether a line holds nothing to translate: only whitespace, invisible format characters
    (zero-width spaces and joiners, a byte-order mark, soft hyphens: Unicode's category Cf) and
    control characters (Cc: a backspace, an escape), which the tokenizer drops or cannot read.
    Such a line is a blank line, never a source of invented text.

    A line of printable characters only (most lines; `isprintable` is one C loop) is blank when it
    is spaces; the others are read a character at a time."""
    if text.isprintable():
        return not text.strip()
    return all(c.isspace() or unicodedata.category(c) in ("Cf", "Cc") for c in text)


RECORDED_SAMPLE = 2_000_000  # SentencePiece's own sample size, written into every model file


def train_tokenizer(
    texts: Iterable[str],
    path: str | Path,
    vocab_size: int = 8000,
    model_type: str = "unigram",
    *,
    sentences: int,
    seed: int = 1,
) -> Tokenizer:
    """Train on `texts` (both languages) and write the model atomically to `path`.

    The vocabulary size is a ceiling: on a corpus too small for it SentencePiece stops earlier
    instead of failing, and `vocab_size` of the result says what was reached. Above `sentences`
    (blank ones not counted) it trains on a uniform sample of that many, drawn from `seed`, so the
    same seed gives the same tokenizer.
    """
    path = Path(path)
    sample, seen = sample_sentences((t for t in texts if t.strip()), sentences, seed)
    model = io.BytesIO()
    spm.set_random_generator_seed(seed)
    try:
        spm.SentencePieceTrainer.Train(
            sentence_iterator=iter(sample),
            model_writer=model,
            vocab_size=vocab_size,
            model_type=model_type,
            character_coverage=1.0,
            hard_vocab_limit=False,
            # never reached (the sample is drawn above), so SentencePiece keeps every sentence in order
            input_sentence_size=max(sentences, RECORDED_SAMPLE),
            shuffle_input_sentence=True,
            pad_id=PAD_ID,
            unk_id=UNK_ID,
            bos_id=BOS_ID,
            eos_id=EOS_ID,
            num_threads=os.cpu_count() or 1,
            minloglevel=2,
        )
    except RuntimeError as e:
        raise Seq2SeqError(f"SentencePiece could not train: {first_line(e)}") from None
    finally:  # its suffix array, freed now, held by the process (allocator.py) unless handed back
        del sample
        release_freed_memory()
    reached = spm.SentencePieceProcessor(model_proto=model.getvalue()).GetPieceSize()
    if seen > sentences and reached < vocab_size:  # the corpus had more to give than the sample
        raise Seq2SeqError(
            f"a sample of {sentences:,} of the corpus's {seen:,} sentences gives only {reached:,} of the "
            f"{vocab_size:,} pieces asked for; raise --tokenizer-sentences or lower --vocab-size"
        )
    write_atomic(path, model.getvalue())
    return Tokenizer(path)


def sample_sentences(texts: Iterable[str], size: int, seed: int) -> tuple[list[str], int]:
    """`size` of `texts` drawn uniformly in one pass, holding only the sample (reservoir sampling,
    Vitter's algorithm R), and how many there were; all of them, in order, when there are no more
    than `size`.

    SentencePiece samples too, but only after it has read every sentence into memory, and its
    unigram trainer's suffix array over the sample's characters takes several times their size:
    4M sentences of a 2M-pair corpus cost 5 GB. The sample bounds both."""
    rng = random.Random(seed)
    sample: list[str] = []
    seen = 0
    for seen, text in enumerate(texts, start=1):
        if seen <= size:
            sample.append(text)
        elif (slot := rng.randrange(seen)) < size:
            sample[slot] = text
    return sample, seen
