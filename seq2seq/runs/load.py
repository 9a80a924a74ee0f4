"""Opening a run: its model and tokenizer, ready to decode."""

from pathlib import Path

import torch

from seq2seq.data.opener import open_tokenizer
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.device import resolve_device
from seq2seq.errors import Seq2SeqError
from seq2seq.models.protocol import Seq2SeqModel
from seq2seq.models.registry import build_model
from seq2seq.runs.files import BEST, TOKENIZER, load_config, load_weights, model_config


def load_run(
    run_dir: Path,
    device: str | torch.device = "cpu",
    weights: str = BEST,
    quantize: str | None = None,
    packed: bool = False,
) -> tuple[Seq2SeqModel, Tokenizer]:
    """(model in eval mode, tokenizer) from a run directory, with every mismatch a clean error;
    `device` may be "auto"; `quantize="int8"` gives the int8 decoder (`models/quantize.py`), which
    runs on the CPU only, so with it "auto" means the CPU even where a GPU is seen; `packed` the
    fp32 decoder on packed GEMMs where they are faster here (`models/packed.py`)."""
    run_dir = Path(run_dir)
    if quantize is not None and device == "auto":
        device = "cpu"
    if isinstance(device, str) and device in ("auto", "cpu", "cuda"):
        device = resolve_device(device)
    cfg = model_config(load_config(run_dir))
    tokenizer = open_tokenizer(run_dir / TOKENIZER)
    # a model with a source table of its own (separate vocabularies) reads all the tokenizer's ids
    expected = getattr(cfg, "source_vocab_size", None) or cfg.vocab_size
    if tokenizer.vocab_size != expected:
        raise Seq2SeqError(
            f"{run_dir}: tokenizer has {tokenizer.vocab_size} pieces but the model expects "
            f"{expected}; the run's files do not belong together"
        )
    model = build_model(cfg)
    load_weights(model, run_dir / weights)
    model = model.to(device).eval()
    if quantize is not None:
        from seq2seq.models.quantize import quantize as quantized

        model = quantized(model, quantize)
    elif packed:
        from seq2seq.models.packed import packed_if_faster

        model = packed_if_faster(model)
    return model, tokenizer
