"""Fine-tuning: a new run that starts from another run's best weights and its tokenizer (fairseq's
--finetune-from-model, OpenNMT's -train_from with a fresh optimizer), with its own optimizer,
schedule and budget, on whatever corpus `train` reads; optionally with the encoder or the
embeddings frozen. The new run records where it started (`init_from` in config.json) and resumes
as any run does: the start is read once, when the run is new.

Freezing goes through the protocol's `encoder_modules` (the submodules that make the encoder), so
it never asks which architecture it holds. With tied embeddings (every preset) freezing the
embeddings freezes the output layer too: they are one matrix.
"""

import shutil
from collections import deque
from collections.abc import Iterable
from itertools import islice
from pathlib import Path

from seq2seq.atomic import write_with
from seq2seq.data.opener import open_tokenizer
from seq2seq.data.special import UNK_ID
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.errors import Seq2SeqError
from seq2seq.models.protocol import Seq2SeqModel
from seq2seq.models.registry import ModelConfig
from seq2seq.runs import files as ckpt

MAX_UNKNOWN = 0.01  # the share of unknown pieces above which a start's tokenizer does not fit a corpus
SAMPLE = 20_000  # training pairs whose pieces are counted


def start(run_dir: Path, init_from: str) -> ModelConfig:
    """For a new run: RUN's model config, which the new run trains; a one-line error when RUN is
    no run with best weights and a tokenizer, or is the run itself or holds it or lies inside it."""
    source = Path(init_from)
    if not (source / ckpt.BEST).is_file() or not (source / ckpt.TOKENIZER).is_file():
        raise Seq2SeqError(f"--init-from {source}: no run there (it needs {ckpt.BEST} and {ckpt.TOKENIZER})")
    start, new = source.resolve(), Path(run_dir).resolve()
    if start == new:
        raise Seq2SeqError("--init-from names the run itself; give the new run another --run")
    if start in new.parents or new in start.parents:  # one run's files written among the other's
        raise Seq2SeqError(
            f"--run {run_dir} and --init-from {source} lie one inside the other; "
            "give the new run a folder of its own"
        )
    return ckpt.model_config(ckpt.load_config(source))


def refuse_imported(run_dir: Path) -> None:
    """An imported model's run is never trained over (its weights would be replaced): it is a
    start for a new run."""
    config = Path(run_dir) / ckpt.CONFIG
    if config.is_file() and "imported" in ckpt.load_config(run_dir):
        raise Seq2SeqError(
            f"{run_dir} holds an imported model; fine-tune it into a new run: --init-from {run_dir} --run NEW"
        )


def copy_tokenizer(path: Path, init_from: str, pairs: Iterable[tuple[str, str]]) -> None:
    """RUN's tokenizer as the new run's, at `path`, once it is seen to cover the training pairs
    (the first SAMPLE of them): nothing is written before a refusal, the corpus's own (a bad line)
    among them, so the rest is read through too."""
    source, pairs = Path(init_from) / ckpt.TOKENIZER, iter(pairs)
    check_coverage(open_tokenizer(source), list(islice(pairs, SAMPLE)), Path(init_from))
    deque(pairs, maxlen=0)
    write_with(path, lambda temporary: shutil.copyfile(source, temporary))


def check_coverage(tokenizer: Tokenizer, pairs: list[tuple[str, str]], source: Path) -> None:
    """Refuse a corpus the start's tokenizer does not cover: more than MAX_UNKNOWN of the pieces
    of `pairs` unknown, said as the rate."""
    sources, targets = [s for s, _ in pairs], [t for _, t in pairs]
    pieces = tokenizer.encode(sources, "source") + tokenizer.encode(targets, "target")
    total, unknown = sum(map(len, pieces)), sum(p.count(UNK_ID) for p in pieces)
    rate = unknown / max(total, 1)
    if rate > MAX_UNKNOWN:
        raise Seq2SeqError(
            f"the tokenizer of --init-from {source} leaves {100 * rate:.1f}% of this corpus's pieces "
            f"unknown (above {100 * MAX_UNKNOWN:.0f}%): it was not trained on these languages; train a "
            "new run instead"
        )


def load_start(model: Seq2SeqModel, init_from: str) -> None:
    ckpt.load_weights(model, Path(init_from) / ckpt.BEST)


def freeze(model: Seq2SeqModel, part: str) -> None:
    """Stop the gradient of `part` ("encoder", "embeddings" or "none"): the optimizer then never
    changes it (AdamW skips parameters without a gradient, weight decay included)."""
    if part == "none":
        return
    names = model.encoder_modules if part == "encoder" else model.embedding_modules
    modules = [getattr(model, name) for name in names]
    params = [p for module in modules if module is not None for p in module.parameters()]
    for p in params:
        p.requires_grad_(False)
