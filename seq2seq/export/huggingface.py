"""A run as a Hugging Face `transformers` model directory: `AutoModelForSeq2SeqLM.from_pretrained`
and `AutoTokenizer.from_pretrained` load it with no code of seq2seq's installed, and it decodes
what we decode.

Which class: pre-LN runs are `PegasusForConditionalGeneration` (pre-LN layers, a final LayerNorm
on each stack), post-LN runs `MarianMTModel` (Add & Norm after each sub-layer, no final norm).
Both have our ReLU feed-forward block (a gated SwiGLU block, which no transformers class has,
takes our subclasses in `modeling_gated.py`, which the folder ships: see there), biases,
sqrt(D)-scaled embeddings shared by encoder, decoder and a bias-free output projection (an untied
output's bias goes to their `final_logits_bias`), and the Vaswani sinusoids starting at position
0, but laid out as all sines then all cosines where ours interleave them; Marian does not even
save the table, it recomputes its own on load. A fixed permutation of the D model dims turns our
table into theirs, and every operation on the residual stream (embedding sums, LayerNorm,
residual additions, the projections that read or write it) is equivariant to one consistent
permutation, so permuting every weight that touches the residual stream gives exactly our
function with their own table, whichever way a version of transformers loads it.
Attention heads and feed-forward dims are untouched.

Shapes: D model dim, V vocabulary.
"""

import importlib.util
from contextlib import contextmanager
from pathlib import Path

import torch
from torch import Tensor

from seq2seq.atomic import write_dir
from seq2seq.data.special import BOS_ID, EOS_ID, PAD_ID
from seq2seq.decoding.search import DecodeOptions
from seq2seq.errors import Seq2SeqError, first_line
from seq2seq.export.folder import transformer_run
from seq2seq.models.feed_forward import outer_linears

INSTALL_HINT = 'pip install -e ".[hf]"'


def export_huggingface(run_dir: Path, output_dir: Path, force: bool = False) -> Path:
    """Write config.json, model.safetensors, generation_config.json, the tokenizer files and a
    README.md model card to `output_dir`, all or nothing."""
    missing = [m for m in ("transformers", "tokenizers", "google.protobuf") if not _installed(m)]
    if missing:
        raise Seq2SeqError(f"export needs {', '.join(missing)}; install it with `{INSTALL_HINT}`")
    from seq2seq.data.pair_tokenizer import PairTokenizer
    from seq2seq.export.hf_tokenizer import hf_tokenizer, save_marian_tokenizer, save_tokenizer
    from seq2seq.export.model_card import model_card
    from seq2seq.runs.recipe import stored_languages

    model, tokenizer, output_dir = transformer_run(run_dir, output_dir, force, "Hugging Face")
    hf = hf_model(model)
    _, src, tgt = stored_languages(run_dir)
    if isinstance(tokenizer, PairTokenizer):  # an imported model's: MarianTokenizer's files again
        save = lambda folder: save_marian_tokenizer(tokenizer, folder, model.cfg.max_positions, src, tgt)  # noqa: E731
    else:
        fast = hf_tokenizer(tokenizer.path, model.cfg.max_positions)
        save = lambda folder: save_tokenizer(fast, folder, tokenizer, src, tgt)  # noqa: E731
    card = model_card(run_dir, model, hf)

    def write(folder: Path) -> None:
        with quiet():
            hf.save_pretrained(folder)
        generation_config(model.cfg).save_pretrained(folder)
        save(folder)
        (folder / "README.md").write_text(card, encoding="utf-8")

    from safetensors import SafetensorError

    try:
        write_dir(output_dir, write)
    except (OSError, SafetensorError) as e:  # safetensors says a full disk in its own error
        raise Seq2SeqError(
            f"cannot write {output_dir}: {getattr(e, 'strerror', None) or first_line(e)}"
        ) from None
    return output_dir


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # the parent package of a dotted name is missing
        return False


@contextmanager
def quiet():
    """No progress bar from transformers for one small file, and no notices but errors."""
    from transformers.utils import logging

    shown, verbosity = logging.is_progress_bar_enabled(), logging.get_verbosity()
    logging.disable_progress_bar()
    logging.set_verbosity_error()
    try:
        yield
    finally:
        logging.set_verbosity(verbosity)
        if shown:
            logging.enable_progress_bar()


def hf_model(model):
    """Our Transformer's weights in a `transformers` model of the matching class, in eval mode."""
    cfg = model.cfg
    separate = cfg.source_vocab_size is not None  # the encoder's own table: Marian's separate vocabularies
    if separate and cfg.norm_first:
        raise Seq2SeqError("a pre-LN model with separate vocabularies has no Hugging Face class")
    shape = dict(
        vocab_size=cfg.source_vocab_size or cfg.vocab_size,
        d_model=cfg.d_model,
        encoder_layers=cfg.n_encoder_layers,
        decoder_layers=cfg.n_decoder_layers,
        encoder_attention_heads=cfg.n_heads,
        decoder_attention_heads=cfg.n_heads,
        encoder_ffn_dim=cfg.d_ff,
        decoder_ffn_dim=cfg.d_ff,
        activation_function="relu" if cfg.ffn == "relu" else "silu",  # the gated classes read it so
        dropout=cfg.dropout,  # where ours applies it: embeddings, sub-layer outputs, attention, ReLU
        attention_dropout=cfg.dropout,
        activation_dropout=cfg.dropout,
        max_position_embeddings=cfg.max_positions,
        scale_embedding=cfg.scale_embeddings,
        pad_token_id=PAD_ID,
        bos_token_id=BOS_ID,
        eos_token_id=EOS_ID,
        decoder_start_token_id=BOS_ID,
        forced_eos_token_id=EOS_ID,
        tie_word_embeddings=cfg.tie_embeddings,
    )
    model_class, config_class = hf_classes(cfg)
    if not cfg.norm_first:  # Marian's switches
        shape |= dict(share_encoder_decoder_embeddings=not separate, decoder_vocab_size=cfg.vocab_size)
    hf = model_class(config_class(**shape))
    hf.load_state_dict(hf_state_dict(model), strict=True)
    return hf.eval()


def hf_classes(cfg) -> tuple[type, type]:
    """(model class, config class): Pegasus for pre-LN, Marian for post-LN. A gated (SwiGLU)
    feed-forward block, which neither has, takes our subclass in `modeling_gated.py` (same config
    class), registered so that save_pretrained ships that file and names it in `auto_map`."""
    import transformers as t

    if cfg.ffn != "swiglu":
        return (
            (t.PegasusForConditionalGeneration, t.PegasusConfig)
            if cfg.norm_first
            else (t.MarianMTModel, t.MarianConfig)
        )
    from seq2seq.export import modeling_gated as g

    model_class = g.GatedPegasusForConditionalGeneration if cfg.norm_first else g.GatedMarianMTModel
    model_class.register_for_auto_class("AutoModelForSeq2SeqLM")
    return model_class, (t.PegasusConfig if cfg.norm_first else t.MarianConfig)


def residual_order(d_model: int) -> Tensor:
    """Dim i of their residual stream is dim order[i] of ours: our even (sine) dims, then our odd
    (cosine) dims, which turns our interleaved position table into their sines-then-cosines one."""
    return torch.cat([torch.arange(0, d_model, 2), torch.arange(1, d_model, 2)])


def hf_state_dict(model) -> dict[str, Tensor]:
    """Every tensor of the Pegasus (pre-LN) or Marian (post-LN) model, named as transformers names
    them, tied copies included, in their residual order."""
    cfg, order = model.cfg, residual_order(model.cfg.d_model)
    embed = model.embed.weight.detach()[:, order]  # (V, D)
    table = model.positions[:, order]  # (max_positions, D)
    if model.source_embed is None:
        out = {f"model.{name}": embed for name in ("shared.weight", "encoder.embed_tokens.weight")}
    else:  # separate vocabularies: no shared table, the encoder's own
        out = {"model.encoder.embed_tokens.weight": model.source_embed.weight.detach()[:, order]}
    out["model.decoder.embed_tokens.weight"] = embed
    for stack in ("encoder", "decoder"):
        out[f"model.{stack}.embed_positions.weight"] = table
    for i, layer in enumerate(model.encoder):
        prefix = f"model.encoder.layers.{i}"
        out |= _attention(f"{prefix}.self_attn", layer.self_attn.qkv, layer.self_attn.out, order)
        out |= _norm(f"{prefix}.self_attn_layer_norm", layer.res_attn.norm, order)
        out |= _feed_forward(prefix, layer.ff, layer.res_ff.norm, order)
    for i, layer in enumerate(model.decoder):
        prefix = f"model.decoder.layers.{i}"
        out |= _attention(f"{prefix}.self_attn", layer.self_attn.qkv, layer.self_attn.out, order)
        out |= _norm(f"{prefix}.self_attn_layer_norm", layer.res_self.norm, order)
        cross = layer.cross_attn
        out |= _attention(f"{prefix}.encoder_attn", [cross.q, cross.kv], cross.out, order)
        out |= _norm(f"{prefix}.encoder_attn_layer_norm", layer.res_cross.norm, order)
        out |= _feed_forward(prefix, layer.ff, layer.res_ff.norm, order)
    if cfg.norm_first:  # Pegasus ends each stack with a LayerNorm, as pre-LN does
        out |= _norm("model.encoder.layer_norm", model.encoder_norm, order)
        out |= _norm("model.decoder.layer_norm", model.decoder_norm, order)
    if model.generator is None:
        out["lm_head.weight"] = embed
        out["final_logits_bias"] = torch.zeros(1, cfg.vocab_size)
    else:
        out["lm_head.weight"] = model.generator.weight.detach()[:, order]
        out["final_logits_bias"] = model.generator.bias.detach()[None]
    return {name: tensor.float().contiguous() for name, tensor in out.items()}


def _attention(prefix: str, inputs, output, order: Tensor) -> dict[str, Tensor]:
    """Our fused projections (one QKV linear, or Q and a fused KV) split into q/k/v_proj; their
    inputs come from the residual stream, out_proj writes to it."""
    inputs = inputs if isinstance(inputs, list) else [inputs]
    weight = torch.cat([linear.weight for linear in inputs]).detach()  # (3D, D)
    bias = torch.cat([linear.bias for linear in inputs]).detach()  # (3D,)
    out = {}
    for name, w, b in zip(("q_proj", "k_proj", "v_proj"), weight.chunk(3), bias.chunk(3), strict=True):
        out |= {f"{prefix}.{name}.weight": w[:, order], f"{prefix}.{name}.bias": b}
    return out | _writes(f"{prefix}.out_proj", output, order)


def _feed_forward(prefix: str, ff, norm, order: Tensor) -> dict[str, Tensor]:
    """Either block as fc1 -> fc2: the gated block's fc1 is its fused gate-and-value projection."""
    fc1, fc2 = outer_linears(ff)
    reads = {f"{prefix}.fc1.weight": fc1.weight.detach()[:, order], f"{prefix}.fc1.bias": fc1.bias.detach()}
    return reads | _writes(f"{prefix}.fc2", fc2, order) | _norm(f"{prefix}.final_layer_norm", norm, order)


def _writes(prefix: str, linear, order: Tensor) -> dict[str, Tensor]:
    """A projection whose output is added to the residual stream: its rows follow their order."""
    return {f"{prefix}.weight": linear.weight.detach()[order], f"{prefix}.bias": linear.bias.detach()[order]}


def _norm(prefix: str, norm, order: Tensor) -> dict[str, Tensor]:
    return {f"{prefix}.weight": norm.weight.detach()[order], f"{prefix}.bias": norm.bias.detach()[order]}


def generation_config(cfg):
    """Our default search: beam 5, GNMT-like stop once 5 hypotheses end (`early_stopping`), never
    PAD or BOS, and EOS forced at our longest output: max_positions - 1 pieces, then EOS. Our
    shorter source-dependent limit (1.5 x source + 10) has no counterpart here; a caller's
    `max_new_tokens` replaces this one."""
    import transformers

    defaults = DecodeOptions()
    return transformers.GenerationConfig(
        num_beams=defaults.beam,
        length_penalty=defaults.length_penalty,
        early_stopping=True,
        max_new_tokens=cfg.max_positions,
        suppress_tokens=[PAD_ID, BOS_ID],
        decoder_start_token_id=BOS_ID,
        bos_token_id=BOS_ID,
        eos_token_id=EOS_ID,
        forced_eos_token_id=EOS_ID,
        pad_token_id=PAD_ID,
    )
