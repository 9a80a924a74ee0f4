"""The README.md model card of an exported run, ready for the Hugging Face Hub: languages, shape,
training data and the validation BLEU (with its sacreBLEU signature) of the exported weights."""

from pathlib import Path

from seq2seq.evaluate import score
from seq2seq.runs import files as ckpt
from seq2seq.runs.recipe import stored_languages

CARD = """---
language:
- {src}
- {tgt}
library_name: transformers
pipeline_tag: translation
tags:
- translation
- {model_type}
- seq2seq
---

# {src} → {tgt} translation, trained with seq2seq

An encoder-decoder Transformer trained from scratch with seq2seq on the `train` split of
`{corpus}`, {src} → {tgt}, and exported as a `{hf_class}`: the same weights, the same
SentencePiece pieces and ids, and the same greedy translations as seq2seq's own decoder.

| | |
|---|---|
| layers (encoder + decoder) | {n_encoder_layers} + {n_decoder_layers} |
| model dim, heads, feed-forward dim | {d_model}, {n_heads}, {d_ff} |
| layer norm | {norm} |
| feed-forward block | {block} |
| vocabulary | {vocab_size} SentencePiece (Unigram) pieces, shared by both languages |
| longest source or output | {max_positions} pieces |
| parameters | {parameters:,} |

## Validation

{validation}

## Use

```python
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

tokenizer = AutoTokenizer.from_pretrained("path/to/this/folder")
model = AutoModelForSeq2SeqLM.from_pretrained("path/to/this/folder"{load_options})
batch = tokenizer(["A dog runs on the beach."], return_tensors="pt", padding=True)
print(tokenizer.batch_decode(model.generate(**batch), skip_special_tokens=True))
```

`generate()` searches with beam 5 by default (`generation_config.json`), as seq2seq does;
`num_beams=1` gives exactly seq2seq's greedy translations. Beam search may differ now and then:
seq2seq divides scores by the GNMT length penalty ((5 + length) / 6)^alpha, transformers by length^alpha.
{remote_code}"""

REMOTE_CODE = """
transformers has no class with a gated (SwiGLU) feed-forward block, so this folder brings its own:
`modeling_gated.py` defines `{hf_class}`: transformers' `{parent}` with each layer's first feed-forward
projection doubled into a gate and a value (silu(gate) * value), and config.json's `auto_map`
names it. Read the file, then load with `trust_remote_code=True`; without it transformers builds
the plain `{parent}` and refuses these weights (their first projection is twice its size). Do not
pass `ignore_mismatched_sizes=True`: it would load them into an ungated block and translate nonsense.
"""


def model_card(run_dir: Path, model, hf) -> str:
    """The card's text for the run at `run_dir` (its `model`) exported as the transformers model `hf`."""
    (corpus, src, tgt), cfg = stored_languages(run_dir), model.cfg
    return CARD.format(
        src=src,
        tgt=tgt,
        corpus=corpus,
        hf_class=type(hf).__name__,
        model_type=hf.config.model_type,
        norm="pre-LN, a final LayerNorm on each stack" if cfg.norm_first else "post-LN (Add & Norm)",
        **_feed_forward_fields(cfg, hf),
        parameters=sum(p.numel() for p in model.parameters()),
        validation=_validation(run_dir),
        **{k: getattr(cfg, k) for k in ("n_encoder_layers", "n_decoder_layers", "d_model", "n_heads")},
        **{k: getattr(cfg, k) for k in ("d_ff", "vocab_size", "max_positions")},
    )


def _feed_forward_fields(cfg, hf) -> dict[str, str]:
    """The card's block row, load options and remote-code paragraph: a gated block needs the
    folder's own model code, so trust_remote_code and a word on what it runs."""
    if cfg.ffn != "swiglu":
        return dict(block="ReLU" if cfg.ffn == "relu" else "SiLU", load_options="", remote_code="")
    return dict(
        block="SwiGLU (gated)",
        load_options=", trust_remote_code=True",
        remote_code=REMOTE_CODE.format(hf_class=type(hf).__name__, parent=type(hf).__base__.__name__),
    )


def _validation(run_dir: Path) -> str:
    """The BLEU the exported (best) weights scored on the `val` split, and when."""
    bleu = ckpt.best_score(run_dir)
    rows = [r for r in ckpt.read_metrics(run_dir) if r.get("best")]
    row = next((r for r in reversed(rows) if bleu is None or r.get("val_bleu") == bleu), None)
    if bleu is None and row is not None:
        bleu = row.get("val_bleu")
    if bleu is None:
        return "The run recorded no validation score."
    when = f" after {row['step']} steps ({row['epoch']} epochs)" if row is not None else ""
    signature = score(["a"], ["a"]).bleu_signature  # the settings validation scores with
    return (
        f"BLEU **{bleu:.2f}** on the `val` split{when}, greedy search, detokenized output against "
        f"one reference.\nsacreBLEU signature: `{signature}`"
    )
