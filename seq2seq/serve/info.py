"""What a server says about itself (`GET /info`), and the check that its extra is installed."""

import importlib.util
import math
from dataclasses import asdict
from pathlib import Path

from seq2seq.data.corpus import corpus_name
from seq2seq.errors import Seq2SeqError
from seq2seq.runs.files import best_score
from seq2seq.runs.recipe import stored_languages

INSTALL_HINT = 'pip install -e ".[serve]"'
NEEDS = ("fastapi", "uvicorn")


def require() -> None:
    """Fail in one line, before the run is loaded, when FastAPI or uvicorn is missing."""
    missing = [name for name in NEEDS if importlib.util.find_spec(name) is None]
    if missing:
        raise Seq2SeqError(f"serving needs {' and '.join(missing)}, which `{INSTALL_HINT}` installs")


def run_info(run: Path, model, tokenizer) -> dict:
    """The run as a client sees it: architecture, languages, shape, vocabulary, validation BLEU."""
    (corpus, src, tgt), bleu = stored_languages(run), best_score(run)
    return {
        "run": Path(run).name,  # the folder's name only: a client has no business with our paths
        "architecture": model.cfg.arch,
        "src": src,
        "tgt": tgt,
        "corpus": corpus_name(corpus),  # likewise: `mine` for a pattern like mine/{split}.tsv
        "model": asdict(model.cfg),
        "parameters": sum(p.numel() for p in model.parameters()),
        "vocab_size": tokenizer.vocab_size,
        "val_bleu": bleu if bleu is not None and math.isfinite(bleu) else None,  # JSON has no NaN
    }
