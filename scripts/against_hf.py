"""`python -m scripts.bench_decode --against ctranslate2`'s second peer: Hugging Face `generate()` on
the same weights.

The model is the one `seq2seq export --to huggingface` writes, built by the exporter's own mapping
(`seq2seq.export.huggingface.hf_model`, one place): Pegasus for pre-LN runs, Marian for post-LN
runs (with the export's gated subclasses for a SwiGLU block), our weights in their residual order
so that their sinusoidal table is ours. `hf_model` checks the result: teacher-forced logits must
equal ours to 1e-3, or the peer is not run.
"""

import torch

from scripts.common import length_sorted_batches, median_time
from seq2seq.data.batch import pad
from seq2seq.data.special import BOS_ID, EOS_ID, PAD_ID

INSTALL_HINT = 'pip install -e ".[bench]"  (Hugging Face transformers, for the generate() peer)'


def hf_model(model):
    """Our Transformer's weights in the exporter's transformers class, or None with the reason."""
    try:
        import transformers
    except ImportError:
        return None, f"Hugging Face peer skipped: transformers is not installed; {INSTALL_HINT}"
    if model.cfg.arch != "transformer":
        return None, f"Hugging Face peer skipped: transformers has no {model.cfg.arch} encoder-decoder"
    from seq2seq.export.huggingface import hf_model as exported_model

    hf = exported_model(model)
    difference = logit_difference(hf, model)
    if difference > 1e-3:
        return None, f"Hugging Face peer skipped: its logits differ from ours by {difference:.2e}"
    return (
        hf,
        f"Hugging Face transformers {transformers.__version__} generate(), {type(hf).__name__} holding "
        f"our weights as `seq2seq export --to huggingface` writes them (teacher-forced logits within "
        f"{difference:.1e} of ours), fp32",
    )


def logit_difference(hf, model) -> float:
    """Largest |logit| difference, teacher forcing, on padded random sentences."""
    g = torch.Generator().manual_seed(0)
    src = pad([[*torch.randint(4, model.cfg.vocab_size, (n,), generator=g).tolist(), EOS_ID] for n in (5, 9)])
    tgt = torch.randint(4, model.cfg.vocab_size, (2, 7), generator=g)
    tgt[:, 0] = BOS_ID
    with torch.inference_mode():
        theirs = hf(input_ids=src, attention_mask=src != PAD_ID, decoder_input_ids=tgt).logits
        return (theirs - model(src, tgt)).abs().max().item()


def generate(hf, sources: list[list[int]], beam: int, args, steps: int | None):
    """Median seconds of `generate()` over every batch (length-sorted, as ours), and the outputs
    (ids, EOS excluded) in input order. `steps`: exactly that many decoder steps, else free."""
    batches = length_sorted_batches(sources, args.batch_size)
    options = dict(num_beams=beam, do_sample=False, length_penalty=1.0, suppress_tokens=[PAD_ID, BOS_ID])
    outputs = [[] for _ in sources]

    def run() -> list:
        results = []
        for rows in batches:
            src = pad([sources[i] for i in rows])
            # forced: exactly `steps`; free: our longest limit in the batch (1.5 S + 10) + EOS
            limit = steps or int(1.5 * max(len(sources[i]) for i in rows)) + 11
            lengths = dict(min_new_tokens=steps or 0, max_new_tokens=limit)
            results.append(hf.generate(input_ids=src, attention_mask=src != PAD_ID, **options, **lengths))
        return results

    with torch.inference_mode():
        warm = pad(sources[:2])
        hf.generate(input_ids=warm, attention_mask=warm != PAD_ID, **options, max_new_tokens=4)
        seconds, results = median_time(run, args.repeats)
    for rows, out in zip(batches, results, strict=True):
        for i, ids in zip(rows, out[:, 1:].tolist(), strict=True):  # drop the start token
            outputs[i] = ids[: ids.index(EOS_ID)] if EOS_ID in ids else [t for t in ids if t != PAD_ID]
    return seconds, outputs
