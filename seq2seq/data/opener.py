"""Opening a run's tokenizer file, whichever of the two kinds it holds."""

from pathlib import Path

from seq2seq.data.pair_tokenizer import PairTokenizer, is_archive
from seq2seq.data.tokenizer import Tokenizer


def open_tokenizer(path: str | Path) -> Tokenizer:
    """A run's tokenizer: the joint SentencePiece model, or an imported model's archive of two."""
    path = Path(path)
    if path.is_file() and is_archive(path):
        return PairTokenizer(path)
    return Tokenizer(path)
