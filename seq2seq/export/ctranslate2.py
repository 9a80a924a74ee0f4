"""A run as a CTranslate2 model directory, filled through the engine's own spec API: the same
weights, so the C++ engine and our decoder can be compared (and the engine deployed) on one model.

Our layout maps onto `TransformerSpec` one to one: fused QKV for self-attention, Q plus fused KV
for cross-attention, pre- or post-norm, a ReLU or gated SiLU (SwiGLU) feed-forward block,
embeddings scaled by sqrt(D), tied output projection. The engine's built-in sinusoidal table is
laid out differently from ours (sines then cosines, not interleaved), so ours is given explicitly.
"""

import importlib.util
from pathlib import Path

from seq2seq.atomic import write_dir
from seq2seq.errors import Seq2SeqError
from seq2seq.export.folder import transformer_run
from seq2seq.models.feed_forward import GatedFeedForward

INSTALL_HINT = 'pip install -e ".[ct2]"'
QUANTIZATIONS = ("int8", "int8_float32", "int16", "bfloat16", "float16", "float32")


def export_ctranslate2(run_dir: Path, output_dir: Path, quantization: str | None = None, force: bool = False):
    """Write the run's best weights and vocabulary to `output_dir`, all or nothing."""
    if importlib.util.find_spec("ctranslate2") is None:
        raise Seq2SeqError(f"export needs CTranslate2; install it with `{INSTALL_HINT}`")
    if quantization is not None and quantization not in QUANTIZATIONS:
        raise Seq2SeqError(f"unknown quantization {quantization!r}; use one of {', '.join(QUANTIZATIONS)}")
    model, tokenizer, output_dir = transformer_run(run_dir, output_dir, force, "CTranslate2")
    spec = transformer_spec(model, tokenizer.id_pieces(range(tokenizer.vocab_size)))  # the source's ids
    spec.validate()
    spec.optimize(quantization=quantization)
    try:
        write_dir(output_dir, lambda tmp: spec.save(str(tmp)))
    except OSError as e:
        raise Seq2SeqError(f"cannot write {output_dir}: {e.strerror or e}") from None
    return output_dir


def transformer_spec(model, vocabulary: list[str]):
    """A `ctranslate2.specs.TransformerSpec` holding `model`'s weights (fp32 numpy arrays);
    `vocabulary` the pieces of the source's ids, whose first `vocab_size` are the target's."""
    from ctranslate2.specs import common_spec
    from ctranslate2.specs import transformer_spec as ct2

    cfg, gated = model.cfg, model.cfg.ffn == "swiglu"
    spec = ct2.TransformerSpec.from_config(
        (cfg.n_encoder_layers, cfg.n_decoder_layers),
        cfg.n_heads,
        pre_norm=cfg.norm_first,
        activation=common_spec.Activation.RELU if cfg.ffn == "relu" else common_spec.Activation.SWISH,
        ffn_glu=gated,  # act(linear_0(x)) * linear_0_noact(x), then linear_1
    )
    embeddings, positions = _array(model.embed.weight), _array(model.positions)
    source = model.embed if model.source_embed is None else model.source_embed  # separate vocabularies
    spec.encoder.embeddings[0].weight = _array(source.weight)
    spec.encoder.position_encodings.encodings = positions
    spec.encoder.scale_embeddings = spec.decoder.scale_embeddings = cfg.scale_embeddings
    for layer_spec, layer in zip(spec.encoder.layer, model.encoder, strict=True):
        _attention(layer_spec.self_attention, layer.res_attn.norm, [layer.self_attn.qkv, layer.self_attn.out])
        _feed_forward(layer_spec.ffn, layer.res_ff.norm, layer.ff)
    spec.decoder.embeddings.weight = embeddings
    spec.decoder.position_encodings.encodings = positions
    for layer_spec, layer in zip(spec.decoder.layer, model.decoder, strict=True):
        _attention(layer_spec.self_attention, layer.res_self.norm, [layer.self_attn.qkv, layer.self_attn.out])
        cross = layer.cross_attn
        _attention(layer_spec.attention, layer.res_cross.norm, [cross.q, cross.kv, cross.out])
        _feed_forward(layer_spec.ffn, layer.res_ff.norm, layer.ff)
    if cfg.norm_first:  # pre-LN ends each stack with a LayerNorm; post-LN has none
        _norm(spec.encoder.layer_norm, model.encoder_norm)
        _norm(spec.decoder.layer_norm, model.decoder_norm)
    if model.generator is None:
        spec.decoder.projection.weight = embeddings
    else:
        _linear(spec.decoder.projection, model.generator)
    spec.register_source_vocabulary(vocabulary)
    spec.register_target_vocabulary(vocabulary[: cfg.vocab_size])
    spec.config.add_source_eos = True  # our encoder reads the pieces and </s>
    spec.config.layer_norm_epsilon = model.encoder[0].res_attn.norm.eps
    return spec


def _attention(spec, norm, linears) -> None:
    _norm(spec.layer_norm, norm)
    for linear_spec, linear in zip(spec.linear, linears, strict=True):
        _linear(linear_spec, linear)


def _feed_forward(spec, norm, ff) -> None:
    _norm(spec.layer_norm, norm)
    if isinstance(ff, GatedFeedForward):  # our one fused gate-and-value projection, in two
        weights, biases = ff.gate_up.weight.chunk(2), ff.gate_up.bias.chunk(2)  # gate, value: (F, D), (F,)
        spec.linear_0.weight, spec.linear_0.bias = _array(weights[0]), _array(biases[0])
        spec.linear_0_noact.weight, spec.linear_0_noact.bias = _array(weights[1]), _array(biases[1])
        _linear(spec.linear_1, ff.out)
        return
    _linear(spec.linear_0, ff[0])
    _linear(spec.linear_1, ff[3])


def _norm(spec, norm) -> None:
    spec.gamma, spec.beta = _array(norm.weight), _array(norm.bias)


def _linear(spec, linear) -> None:
    spec.weight = _array(linear.weight)
    if linear.bias is not None:
        spec.bias = _array(linear.bias)


def _array(tensor):
    return tensor.detach().float().cpu().numpy()
