"""A Hugging Face Marian checkpoint (Helsinki-NLP's OPUS-MT, `MarianMTModel`) as a run directory
of ours: `seq2seq import`. Every tool then works on it as on a run we trained. The folders our
own `export --to huggingface` writes import back the same way: Marian for post-LN runs, Pegasus
(pre-LN, a final LayerNorm on each stack) for pre-LN ones, either with our gated block (loaded
from this package, never from the folder), with our SentencePiece model and our ids in vocab.json.

A Marian model is our post-LN Transformer (`norm_first=False`) with sqrt(D)-scaled embeddings
shared by encoder, decoder and output (in most), biases everywhere, and a ReLU or SiLU ("swish")
feed-forward block; what differs is laid out, not computed, differently, and is undone here:

- its position table holds all sines then all cosines where ours interleaves them: the residual
  stream's dims are permuted back (`residual_order`, the inverse of the Hugging Face export's);
- its special ids are not ours: the vocabulary is reordered (`pair_tokenizer.marian_order`) and
  so are the rows of the embedding and the output layer;
- `final_logits_bias`, when it is not zero, or an output layer of its own, becomes our untied
  output layer (a copy of the embedding, with that bias).

Separate source and target vocabularies (`share_encoder_decoder_embeddings` false, target_vocab.json)
become one id table of ours (`pair_tokenizer.py`) and a source embedding table of the encoder's
own (`source_vocab_size`); embeddings Marian does not scale by sqrt(D) stay unscaled.

Shapes: D model dim, V the checkpoint's (target) vocabulary; ours has V + 1 ids where the decoder
starts with PAD (OPUS-MT: their PAD is our PAD and our BOS), else V (our own exports).
"""

import json
import re
from dataclasses import asdict
from pathlib import Path

import torch
from torch import Tensor

from seq2seq.errors import Seq2SeqError, first_line
from seq2seq.export.folder import check_output
from seq2seq.export.huggingface import INSTALL_HINT, quiet, residual_order
from seq2seq.export.marian_config import check_fields, decoder_start, languages_of
from seq2seq.models.transformer import TransformerConfig
from seq2seq.runs.lock import replace_run

FILES = ("config.json", "source.spm", "target.spm", "vocab.json")
# what a Hub checkpoint's import reads: the weights in either format, the tokenizer's files
HUB_FILES = [*FILES, "tokenizer_config.json", "generation_config.json", "*.safetensors", "pytorch_model.bin"]
HUB_ID = re.compile(r"[\w.-]+/[\w.-]+")
ACTIVATIONS = {"relu": "relu", "swish": "silu", "silu": "silu"}  # theirs -> our `ffn`


def import_marian(
    source: str, run_dir: Path, force: bool = False, src: str | None = None, tgt: str | None = None
) -> Path:
    """Write `run_dir` (config.json, model.safetensors, tokenizer.model) from the Marian folder
    `source` (or a Hub id, fetched into huggingface_hub's cache), all or nothing; `source` is only
    read."""
    source = checkpoint_folder(str(source))
    check_output(source, run_dir, force, "the folder")  # never over, in or around what it reads
    config = _config(source)
    pieces = [_sentencepiece(source / name) for name in ("source.spm", "target.spm")]
    separate = not config.get("share_encoder_decoder_embeddings", True)
    vocab = _vocab(source / "vocab.json", config.get("vocab_size"), config, ids=not separate)
    target_vocab = _target_vocab(source, config) if separate else vocab
    model_class = _model_class(config)
    from safetensors import SafetensorError

    try:
        with quiet():
            hf, loading = model_class.from_pretrained(source, dtype=torch.float32, output_loading_info=True)
    except (OSError, ValueError, RuntimeError, KeyError, SafetensorError) as e:
        raise Seq2SeqError(f"{source}: cannot load the Marian weights ({first_line(e)})") from None
    unread = sorted(loading.get("unexpected_keys") or [])
    if unread:  # transformers drops them; the run would be another model than the checkpoint
        raise Seq2SeqError(
            f"{source}: the weights hold {len(unread)} tensors config.json does not declare (such as "
            f"{unread[0]}): its layer counts or sizes do not match the weights"
        )
    hf.eval()
    from seq2seq.data.pair_tokenizer import PairTokenizer, marian_order, write_archive

    start = decoder_start(source, config, target_vocab)
    try:
        marian_order(target_vocab, start)
    except ValueError as e:
        raise Seq2SeqError(f"{source / ('target_vocab.json' if separate else 'vocab.json')}: {e}") from None
    languages = languages_of(source, src, tgt)

    def write(folder: Path) -> None:
        from seq2seq.models.registry import build_model
        from seq2seq.runs import files as ckpt
        from seq2seq.runs import load

        write_archive(folder / ckpt.TOKENIZER, *pieces, vocab, start, target_vocab if separate else None)
        tokenizer = PairTokenizer(folder / ckpt.TOKENIZER)
        ours = our_config(config, hf, tokenizer, gated=model_class.__name__.startswith("Gated"))
        model = build_model(ours)
        model.load_state_dict(our_state_dict(hf, ours, tokenizer), strict=True)
        ckpt.save_weights(model, folder / ckpt.BEST)
        ckpt.save_config(
            folder,
            {
                "model": asdict(ours),
                "train": dict(zip(("corpus", "src", "tgt"), languages, strict=True)),
                "tokenizer": {"file": ckpt.TOKENIZER, "vocab_size": tokenizer.vocab_size},
                "imported": {"from": str(source), "kind": "marian"},
            },
        )
        try:  # what is written is a run every command loads, or nothing is written
            load.load_run(folder, "cpu")
        except (Seq2SeqError, ValueError, RuntimeError) as e:
            raise Seq2SeqError(f"{source}: the imported run would not load ({first_line(e)})") from None

    try:
        replace_run(Path(run_dir), write)
    except OSError as e:
        raise Seq2SeqError(f"cannot write {run_dir}: {e.strerror or first_line(e)}") from None
    return Path(run_dir)


def _sentencepiece(path: Path) -> bytes:
    """A SentencePiece model's bytes, refused under its own name when SentencePiece cannot read it."""
    import sentencepiece as spm

    try:
        data = path.read_bytes()
        spm.SentencePieceProcessor().LoadFromSerializedProto(data)
    except (OSError, RuntimeError) as e:
        why = e.strerror if isinstance(e, OSError) else "SentencePiece cannot read it"
        raise Seq2SeqError(f"{path} is not a SentencePiece model ({why})") from None
    return data


def checkpoint_folder(source: str) -> Path:
    """The folder `source` names, or for a Hub id ("Helsinki-NLP/opus-mt-en-fr") that is no
    folder here, the checkpoint's files in huggingface_hub's cache, fetched when not there."""
    if Path(source).exists() or not HUB_ID.fullmatch(source):
        return Path(source)
    try:
        from huggingface_hub import snapshot_download
        from huggingface_hub.errors import HfHubHTTPError
    except ImportError:
        raise Seq2SeqError(f"{source} is no folder here, and the Hub needs `{INSTALL_HINT}`") from None
    try:
        return Path(snapshot_download(source, allow_patterns=HUB_FILES))
    except (OSError, ValueError, HfHubHTTPError) as e:  # offline, no such model, refused
        raise Seq2SeqError(
            f"cannot fetch {source} from the Hugging Face Hub ({first_line(e)}); on a machine without "
            "the Hub, download it elsewhere and give its folder"
        ) from None


def _model_class(config: dict):
    """The transformers class of the checkpoint: Marian's, or for our exports Pegasus's or our
    gated subclass of either (named in config.json's architectures)."""
    try:
        import transformers
    except ImportError:
        raise Seq2SeqError(f"import needs transformers; install it with `{INSTALL_HINT}`") from None
    from seq2seq.export import modeling_gated

    gated = any(str(a).startswith("Gated") for a in config.get("architectures") or [])
    classes = {
        ("marian", False): transformers.MarianMTModel,
        ("pegasus", False): transformers.PegasusForConditionalGeneration,
        ("marian", True): modeling_gated.GatedMarianMTModel,
        ("pegasus", True): modeling_gated.GatedPegasusForConditionalGeneration,
    }
    return classes[(config["model_type"], gated)]


def _config(source: Path) -> dict:
    if not source.is_dir():
        raise Seq2SeqError(f"{source} is not a folder; give a Marian checkpoint's folder")
    missing = [name for name in FILES if not (source / name).is_file()]
    if missing:
        raise Seq2SeqError(f"{source} is not a Marian checkpoint: it has no {', '.join(missing)}")
    config = _json(source / "config.json")
    kind = config.get("model_type") if isinstance(config, dict) else None
    if kind not in ("marian", "pegasus"):
        raise Seq2SeqError(f"{source} holds a {kind or 'unknown'} model, not a Marian one (model_type)")
    activation = config.get("activation_function")
    if not isinstance(activation, str) or activation not in ACTIVATIONS:
        raise Seq2SeqError(f"{source}: activation {activation!r} is not relu or swish")
    check_fields(source / "config.json", config)
    separate = not config.get("share_encoder_decoder_embeddings", True)
    if separate and not (source / "target_vocab.json").is_file():
        raise Seq2SeqError(f"{source}: separate vocabularies, but no target_vocab.json beside vocab.json")
    return config


def _json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError, RecursionError) as e:  # RecursionError: nested too deep
        raise Seq2SeqError(f"{path} is not readable JSON ({first_line(e)})") from None


def _vocab(path: Path, size, config: dict, ids: bool = True) -> dict[str, int]:
    """A piece -> id table of `size` pieces with PAD and EOS, at the config's ids (`ids`: the
    decoder's table; a separate source table has its own)."""
    vocab = _json(path)
    if not isinstance(vocab, dict) or not all(isinstance(i, int) for i in vocab.values()):
        raise Seq2SeqError(f"{path} is not a piece -> id table")
    if len(vocab) != size:
        raise Seq2SeqError(
            f"{path} has {len(vocab)} pieces but the model has {size}: "
            "the tokenizer does not match the vocabulary"
        )
    for key, piece in {"pad_token_id": "<pad>", "eos_token_id": "</s>"}.items():
        if piece not in vocab or (ids and vocab[piece] != config.get(key)):
            raise Seq2SeqError(f"{path}: {key} is {config.get(key)}, but {piece} is {vocab.get(piece)}")
    return vocab


def _target_vocab(source: Path, config: dict) -> dict[str, int]:
    """The decoder's own table, where the model has separate vocabularies."""
    return _vocab(source / "target_vocab.json", config.get("decoder_vocab_size"), config)


def our_config(config: dict, hf, tokenizer, gated: bool) -> TransformerConfig:
    """Our Transformer of the checkpoint's shape (one dropout: theirs on the sub-layers)."""
    same = [("encoder_attention_heads", "decoder_attention_heads"), ("encoder_ffn_dim", "decoder_ffn_dim")]
    for a, b in same:
        if config.get(a) != config.get(b):
            raise Seq2SeqError(f"{a} {config.get(a)} and {b} {config.get(b)} differ; ours are one")
    embed = hf.model.decoder.embed_tokens.weight
    if not tokenizer.separate and not torch.equal(hf.model.encoder.embed_tokens.weight, embed):
        raise Seq2SeqError("the encoder's and the decoder's embeddings differ over one vocabulary")
    tied = torch.equal(hf.lm_head.weight, embed) and not hf.final_logits_bias.any()
    try:
        return TransformerConfig(
            vocab_size=tokenizer.target_vocab_size,
            source_vocab_size=tokenizer.vocab_size if tokenizer.separate else None,
            scale_embeddings=bool(config.get("scale_embedding", False)),
            d_model=config["d_model"],
            n_heads=config["encoder_attention_heads"],
            n_encoder_layers=config["encoder_layers"],
            n_decoder_layers=config["decoder_layers"],
            d_ff=config["encoder_ffn_dim"],
            dropout=float(config.get("dropout", 0.1)),
            max_positions=config["max_position_embeddings"],
            norm_first=config["model_type"] == "pegasus",
            tie_embeddings=tied,
            ffn="swiglu" if gated else ACTIVATIONS[config["activation_function"]],
        )
    except (KeyError, TypeError, ValueError) as e:
        raise Seq2SeqError(f"the Marian config does not describe a model of ours ({first_line(e)})") from None


def our_state_dict(hf, cfg: TransformerConfig, tokenizer) -> dict[str, Tensor]:
    """Our tensors from theirs: residual dims back in our order, vocabulary rows in the
    tokenizer's (a separate source table's rows by `marian_source_ids`, zero where it lacks one)."""
    back = torch.argsort(residual_order(cfg.d_model))  # dim i of ours is their dim back[i]
    order = torch.from_numpy(tokenizer.marian_ids)
    theirs = {name: t.detach().float() for name, t in hf.state_dict().items()}
    out = {"embed.weight": theirs["model.decoder.embed_tokens.weight"][order][:, back]}
    if cfg.source_vocab_size is not None:
        rows = torch.from_numpy(tokenizer.marian_source_ids)
        table = theirs["model.encoder.embed_tokens.weight"][rows.clamp_min(0)][:, back]
        out["source_embed.weight"] = table * (rows >= 0)[:, None]

    def linear(ours: str, names: list[str], reads: bool, writes: bool) -> None:
        """Their linears `names` (stacked) as ours: the columns of one that reads the residual
        stream and the rows of one that writes it, in our order."""
        weight = torch.cat([theirs[f"{n}.weight"] for n in names])
        bias = torch.cat([theirs[f"{n}.bias"] for n in names])
        out[f"{ours}.weight"] = (weight[:, back] if reads else weight)[back if writes else slice(None)]
        out[f"{ours}.bias"] = bias[back] if writes else bias

    def attention(ours: str, prefix: str, parts: dict[str, str]) -> None:
        for name, projections in parts.items():
            linear(f"{ours}.{name}", [f"{prefix}.{p}_proj" for p in projections], True, False)
        linear(f"{ours}.out", [f"{prefix}.out_proj"], False, True)

    block = ("ff.gate_up", "ff.out") if cfg.ffn == "swiglu" else ("ff.0", "ff.3")  # fc1, fc2 in ours

    def layer_end(ours: str, prefix: str) -> None:  # the feed-forward block and its norm
        linear(f"{ours}.{block[0]}", [f"{prefix}.fc1"], True, False)
        linear(f"{ours}.{block[1]}", [f"{prefix}.fc2"], False, True)
        norm(f"{ours}.res_ff.norm", f"{prefix}.final_layer_norm")

    def norm(ours: str, name: str) -> None:
        out.update({f"{ours}.{part}": theirs[f"{name}.{part}"][back] for part in ("weight", "bias")})

    for i in range(cfg.n_encoder_layers):
        ours, prefix = f"encoder.{i}", f"model.encoder.layers.{i}"
        attention(f"{ours}.self_attn", f"{prefix}.self_attn", {"qkv": "qkv"})
        norm(f"{ours}.res_attn.norm", f"{prefix}.self_attn_layer_norm")
        layer_end(ours, prefix)
    for i in range(cfg.n_decoder_layers):
        ours, prefix = f"decoder.{i}", f"model.decoder.layers.{i}"
        attention(f"{ours}.self_attn", f"{prefix}.self_attn", {"qkv": "qkv"})
        norm(f"{ours}.res_self.norm", f"{prefix}.self_attn_layer_norm")
        attention(f"{ours}.cross_attn", f"{prefix}.encoder_attn", {"q": "q", "kv": "kv"})
        norm(f"{ours}.res_cross.norm", f"{prefix}.encoder_attn_layer_norm")
        layer_end(ours, prefix)
    if cfg.norm_first:  # Pegasus: pre-LN, each stack ending with a LayerNorm
        norm("encoder_norm", "model.encoder.layer_norm")
        norm("decoder_norm", "model.decoder.layer_norm")
    if not cfg.tie_embeddings:
        out["generator.weight"] = theirs["lm_head.weight"][order][:, back]
        out["generator.bias"] = theirs["final_logits_bias"][0][order]
    return {name: t.contiguous() for name, t in out.items()}
