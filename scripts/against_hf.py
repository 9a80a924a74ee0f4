"""`bench_decode.py --against ctranslate2`'s second peer: Hugging Face `generate()` on the same weights.

Our pre-LN layout is exactly `M2M100ForConditionalGeneration`'s: pre-LN layers with a final
LayerNorm on each stack, embeddings scaled by sqrt(D), a tied output projection without bias,
ReLU feed-forward. Only three things need care: our fused QKV / KV projections are split into
q/k/v; M2M100's sinusoidal table (sines then cosines, rows offset by padding_idx + 1) is replaced
by ours, row for row; and the ids (PAD 0, BOS 2, EOS 3) are given to its config. `hf_model`
checks the result: teacher-forced logits must equal ours to 1e-3, or the peer is not run.
Post-LN runs have no such HF twin here (Marian is post-LN but adds a final-logits bias and other
positions), so the peer is skipped for them.
"""

import torch
from timing import length_sorted_batches, median_time

from seq2seq.data.batch import pad
from seq2seq.data.special import BOS_ID, EOS_ID, PAD_ID

INSTALL_HINT = 'pip install -e ".[bench]"  (Hugging Face transformers, for the generate() peer)'


def hf_model(model):
    """Our Transformer's weights in an `M2M100ForConditionalGeneration`, or None with the reason."""
    try:
        import transformers
    except ImportError:
        return None, f"Hugging Face peer skipped: transformers is not installed; {INSTALL_HINT}"
    cfg = model.cfg
    if cfg.arch != "transformer" or not cfg.norm_first or not cfg.tie_embeddings:
        return None, "Hugging Face peer skipped: M2M100 matches pre-LN, tied Transformers only"
    hf_cfg = transformers.M2M100Config(
        vocab_size=cfg.vocab_size,
        d_model=cfg.d_model,
        encoder_layers=cfg.n_encoder_layers,
        decoder_layers=cfg.n_decoder_layers,
        encoder_attention_heads=cfg.n_heads,
        decoder_attention_heads=cfg.n_heads,
        encoder_ffn_dim=cfg.d_ff,
        decoder_ffn_dim=cfg.d_ff,
        activation_function="relu",
        dropout=0.0,
        attention_dropout=0.0,
        activation_dropout=0.0,
        encoder_layerdrop=0.0,
        decoder_layerdrop=0.0,
        max_position_embeddings=cfg.max_positions,
        scale_embedding=True,
        pad_token_id=PAD_ID,
        bos_token_id=BOS_ID,
        eos_token_id=EOS_ID,
        decoder_start_token_id=BOS_ID,
        tie_word_embeddings=True,
    )
    hf = transformers.M2M100ForConditionalGeneration(hf_cfg).eval()
    with torch.no_grad():
        load_weights(hf.model, model)
    difference = logit_difference(hf, model)
    if difference > 1e-3:
        return None, f"Hugging Face peer skipped: its logits differ from ours by {difference:.2e}"
    return (
        hf,
        f"Hugging Face transformers {transformers.__version__} generate(), M2M100 class holding our "
        f"weights (teacher-forced logits within {difference:.1e} of ours), fp32",
    )


def load_weights(hf, model) -> None:
    """Copy our weights into the M2M100 modules (in place, under no_grad)."""
    hf.shared.weight.copy_(model.embed.weight)
    for stack in (hf.encoder, hf.decoder):
        table = stack.embed_positions.weights
        table.zero_()  # row padding_idx + 1 + i is position i; the rows before it stay zero
        n = min(model.positions.size(0), table.size(0) - PAD_ID - 1)
        table[PAD_ID + 1 : PAD_ID + 1 + n] = model.positions[:n]
    for ours, theirs in zip(model.encoder, hf.encoder.layers, strict=True):
        _self_attention(theirs.self_attn, ours.self_attn.qkv, ours.self_attn.out)
        _norm(theirs.self_attn_layer_norm, ours.res_attn.norm)
        _feed_forward(theirs, ours.ff, ours.res_ff.norm)
    for ours, theirs in zip(model.decoder, hf.decoder.layers, strict=True):
        _self_attention(theirs.self_attn, ours.self_attn.qkv, ours.self_attn.out)
        _norm(theirs.self_attn_layer_norm, ours.res_self.norm)
        cross = ours.cross_attn
        _linear(theirs.encoder_attn.q_proj, cross.q.weight, cross.q.bias)
        for proj, w, b in zip(
            (theirs.encoder_attn.k_proj, theirs.encoder_attn.v_proj),
            cross.kv.weight.chunk(2),
            cross.kv.bias.chunk(2),
            strict=True,
        ):
            _linear(proj, w, b)
        _linear(theirs.encoder_attn.out_proj, cross.out.weight, cross.out.bias)
        _norm(theirs.encoder_attn_layer_norm, ours.res_cross.norm)
        _feed_forward(theirs, ours.ff, ours.res_ff.norm)
    _norm(hf.encoder.layer_norm, model.encoder_norm)
    _norm(hf.decoder.layer_norm, model.decoder_norm)


def _self_attention(theirs, qkv, out) -> None:
    projections = (theirs.q_proj, theirs.k_proj, theirs.v_proj)
    for proj, w, b in zip(projections, qkv.weight.chunk(3), qkv.bias.chunk(3), strict=True):
        _linear(proj, w, b)
    _linear(theirs.out_proj, out.weight, out.bias)


def _feed_forward(theirs, ff, norm) -> None:
    _linear(theirs.fc1, ff[0].weight, ff[0].bias)
    _linear(theirs.fc2, ff[3].weight, ff[3].bias)
    _norm(theirs.final_layer_norm, norm)


def _linear(linear, weight, bias) -> None:
    linear.weight.copy_(weight)
    linear.bias.copy_(bias)


def _norm(theirs, ours) -> None:
    theirs.weight.copy_(ours.weight)
    theirs.bias.copy_(ours.bias)


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
