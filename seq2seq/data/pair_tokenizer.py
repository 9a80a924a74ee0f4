"""Two SentencePiece models, one per side, over one id table: the tokenizer of a Marian model
(OPUS-MT), which `seq2seq import` brings in (`export/marian.py`), beside the joint one of our own
runs (`tokenizer.py`), behind the same interface.

A Marian source text is cut into pieces by the source model, a target text by the target model,
and both sides' pieces take their ids from the model's vocabulary (vocab.json: piece -> id, the
unknown piece for one it lacks), as `MarianTokenizer` does; a leading language code (">>fr<<")
is one piece of its own. Our special ids are fixed (`special.py`), Marian's are not (EOS 0, UNK
1, PAD wherever the vocabulary puts it, and PAD starts the decoder), so the table is reordered:
our 0 (PAD) is Marian's PAD, 1 its UNK, 2 (BOS) the piece that starts its decoder (its PAD again,
in OPUS-MT; in a model our Hugging Face export wrote, our own BOS), 3 its EOS, and from 4 on its
other ids in their order. `marian_ids` says which Marian id each of ours is: the importer reorders
the embedding rows by it, so the model computes the same function over the new ids.

A Marian model with separate vocabularies (target_vocab.json beside vocab.json, the source's) has
two id tables. Ours stays one, so that every view names a piece by its id alone: the target's
pieces in the order above, then the source's pieces the target lacks. The decoder reads and writes
the first part (`target_vocab_size` ids), the encoder the whole (a table of its own in the model,
`source_vocab_size`); `marian_source_ids` says which source id each of ours is (-1: the source has
no such piece). A piece both sides have is one id of ours, seen through each side's table.

The run keeps the files in one archive (`tokenizer.model`, a zip holding source.spm, target.spm,
vocab.json and the decoder's start piece, written with fixed dates so its bytes, which key the
tokenized corpus, depend on the files alone).
"""

import io
import json
import zipfile
from pathlib import Path

import numpy as np
import sentencepiece as spm

from seq2seq.atomic import write_atomic
from seq2seq.data.special import BOS_ID, EOS_ID, PAD_ID, UNK_ID
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.errors import Seq2SeqError

FILES = ("source.spm", "target.spm", "vocab.json", "decoder_start")
TARGET_VOCAB = "target_vocab.json"  # in the archive of a model with separate vocabularies alone
SPECIALS = {"pad": "<pad>", "unk": "<unk>", "eos": "</s>"}
SPACE = "\u2581"  # SentencePiece's word start
DATE = (1980, 1, 1, 0, 0, 0)  # the earliest a zip holds: the archive's bytes are its files'


def is_archive(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"PK\x03\x04"
    except OSError:  # the joint model's loader says why in its own words
        return False


def write_archive(
    path: Path,
    source_spm: bytes,
    target_spm: bytes,
    vocab: dict[str, int],
    start: str,
    target_vocab: dict[str, int] | None = None,
) -> None:
    """`vocab` is both sides' table, or the source's where `target_vocab` is the target's."""
    buffer = io.BytesIO()
    table = lambda v: json.dumps(v, ensure_ascii=False).encode("utf-8")  # noqa: E731
    contents = dict(zip(FILES, (source_spm, target_spm, table(vocab), start.encode("utf-8")), strict=True))
    if target_vocab is not None:
        contents[TARGET_VOCAB] = table(target_vocab)
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as z:
        for name, data in contents.items():
            z.writestr(zipfile.ZipInfo(name, DATE), data)
    write_atomic(path, buffer.getvalue())


def marian_order(vocab: dict[str, int], start: str) -> np.ndarray:
    """The Marian id of each of our ids: (V + 1,) when the decoder starts with PAD (twice: as our
    PAD and our BOS), else (V,)."""
    missing = [p for p in (*SPECIALS.values(), start) if p not in vocab]
    if missing:
        raise ValueError(f"the vocabulary has no {', '.join(missing)}")
    pad, unk, eos, bos = (vocab[p] for p in (*SPECIALS.values(), start))
    ids = sorted(set(vocab.values()))
    if ids != list(range(len(ids))) or len(ids) != len(vocab):
        raise ValueError("the vocabulary's ids are not 0 .. N-1, each once")
    if len({pad, unk, eos, bos}) < 4 - (bos == pad):
        raise ValueError("the vocabulary's PAD, UNK, EOS and decoder start share an id")
    rest = [i for i in ids if i not in (pad, unk, eos, bos)]
    order = np.empty(len(rest) + 4, dtype=np.int64)
    order[[PAD_ID, UNK_ID, BOS_ID, EOS_ID]] = pad, unk, bos, eos
    order[4:] = rest
    return order


class PairTokenizer(Tokenizer):
    """Text <-> our ids through a source and a target SentencePiece model and one vocabulary."""

    def __init__(self, path: str | Path):  # the joint model's loader does not apply
        self.path = path = Path(path)
        try:
            with zipfile.ZipFile(path) as z:
                names = [*FILES, *([TARGET_VOCAB] if TARGET_VOCAB in z.namelist() else [])]
                self.files = {name: z.read(name) for name in names}
            source, target, vocab, start = (self.files[name] for name in FILES)
            vocab, start = json.loads(vocab), start.decode("utf-8")
            target_vocab = json.loads(self.files[TARGET_VOCAB]) if TARGET_VOCAB in self.files else vocab
            self.marian_ids = marian_order(target_vocab, start)
            self.sides = {"source": _processor(source), "target": _processor(target)}
        except (OSError, KeyError, ValueError, RuntimeError, zipfile.BadZipFile) as e:
            raise Seq2SeqError(f"{path} is not a source/target tokenizer archive ({e})") from None
        shared = start == SPECIALS["pad"]  # our BOS a second PAD, not a piece of the table
        ours = {marian: i for i, marian in enumerate(self.marian_ids) if not (shared and i == BOS_ID)}
        target_table = {piece: ours[i] for piece, i in target_vocab.items()}  # piece -> our id
        self.table = target_table | {  # then the source's own pieces, in its order
            piece: len(self.marian_ids) + n
            for n, piece in enumerate(p for p in sorted(vocab, key=vocab.get) if p not in target_table)
        }
        self.tables = {"source": self.table, "target": target_table}
        self.piece_of = {ours: piece for piece, ours in self.table.items()} | (
            {BOS_ID: "<s>"} if shared else {}
        )
        self.marian_source_ids = np.full(len(self.piece_of), -1, dtype=np.int64)
        for piece, i in vocab.items():
            self.marian_source_ids[self.table[piece]] = i

    @property
    def vocab_size(self) -> int:
        """Every id of ours: the source reads them all, the target the first `target_vocab_size`."""
        return len(self.piece_of)

    @property
    def target_vocab_size(self) -> int:
        return len(self.marian_ids)

    @property
    def separate(self) -> bool:
        return TARGET_VOCAB in self.files

    def encode(self, texts: list[str], side: str = "source") -> list[list[int]]:
        processor = self.sides[side]
        return [
            self._ids(code, processor.Encode(text, out_type=str), side) for code, text in map(_code, texts)
        ]

    def sample(self, texts: list[str], alpha: float, seed: int, side: str = "source") -> list[list[int]]:
        """As the joint model's `sample`, with the side's model."""
        spm.set_random_generator_seed(seed)
        processor, split = self.sides[side], [_code(t) for t in texts]
        pieces = processor.Encode(
            [t for _, t in split],
            out_type=str,
            enable_sampling=True,
            alpha=alpha,
            nbest_size=-1,
            num_threads=1,
        )
        return [self._ids(code, p, side) for (code, _), p in zip(split, pieces, strict=True)]

    def _ids(self, code: list[str], pieces: list[str], side: str) -> list[int]:
        table = self.tables[side]
        return [table.get(p, UNK_ID) for p in code + pieces]

    def decode(self, ids: list[list[int]]) -> list[str]:
        """The text `MarianTokenizer.decode(ids, skip_special_tokens=True)` writes (what the
        translation pipeline prints): the special pieces (PAD, BOS, EOS, UNK) left out, the target
        model joins the rest, and a piece it lacks, which it keeps as written (a source-only piece
        of a shared vocabulary, as a model emits when it copies a name), has its ▁ made a space,
        and the ends are stripped (the joint tokenizer keeps them, as SentencePiece does)."""
        processor = self.sides["target"]
        skip = (PAD_ID, BOS_ID, EOS_ID, UNK_ID)
        return [
            processor.DecodePieces([self.piece_of[i] for i in row if i not in skip])
            .replace(SPACE, " ")
            .strip()
            for row in ids
        ]

    def pieces(self, text: str, side: str = "source") -> list[str]:
        code, text = _code(text)
        return code + self.sides[side].Encode(text, out_type=str)

    def id_pieces(self, ids: list[int]) -> list[str]:
        return [self.piece_of[int(i)] for i in ids]


def _processor(model: bytes) -> spm.SentencePieceProcessor:
    processor = spm.SentencePieceProcessor()
    processor.LoadFromSerializedProto(model)
    return processor


def _code(text: str) -> tuple[list[str], str]:
    """A leading language code (">>fr<<") apart from the text, as MarianTokenizer splits it."""
    end = text.find("<<") if text.startswith(">>") else -1
    return ([text[: end + 2]], text[end + 2 :]) if end != -1 else ([], text)
