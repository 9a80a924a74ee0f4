"""Our SentencePiece model as a `tokenizers` fast tokenizer that `AutoTokenizer` loads: the same
pieces and ids as `Tokenizer.encode`, EOS after the source as our decoder reads it.

The model file is read with SentencePiece's own protobuf schema (it holds the piece scores and
the normalization table, which the processor's API does not expose), then rebuilt in
SentencePiece's order: the precompiled normalization table (nmt_nfkc), extra spaces removed,
spaces escaped as "▁", the dummy "▁" prefix, and the Unigram lattice over the same scored pieces.
One difference stays: `transformers` reads the special tokens' text ("<s>", "</s>", "<pad>",
"<unk>") typed in the input as those tokens, where SentencePiece reads them as characters.
"""

import json
import math
from pathlib import Path

from seq2seq.data.special import BOS_ID, EOS_ID, PAD_ID, UNK_ID
from seq2seq.errors import Seq2SeqError

UNIGRAM = 1  # TrainerSpec.model_type


def hf_tokenizer(path: Path, max_positions: int):
    """A `PreTrainedTokenizerFast` equal to our SentencePiece model at `path`; `truncation=True`
    cuts a source to `max_positions` ids, EOS included, as our decoder does."""
    import transformers
    from tokenizers import Regex, Tokenizer, decoders, normalizers, processors
    from tokenizers.models import Unigram

    proto = _model_proto(path)
    if proto.trainer_spec.model_type != UNIGRAM or proto.trainer_spec.byte_fallback:
        raise Seq2SeqError(f"{path} is not a Unigram model without byte fallback, as seq2seq trains them")
    pieces = [(p.piece, p.score) for p in proto.pieces]
    bad = next((i for i, (_, score) in enumerate(pieces) if not math.isfinite(score)), None)
    if bad is not None:  # SentencePiece decodes with it; a Unigram model of tokenizers refuses it
        raise Seq2SeqError(
            f"{path}: piece {bad} ({pieces[bad][0]!r}) has a score of {pieces[bad][1]}, not a number"
        )
    tokenizer = Tokenizer(Unigram(pieces, unk_id=UNK_ID, byte_fallback=False))
    spec = proto.normalizer_spec
    steps = [normalizers.Precompiled(spec.precompiled_charsmap)] if spec.precompiled_charsmap else []
    if spec.remove_extra_whitespaces:  # only spaces: the table has already mapped tabs and newlines
        steps += [normalizers.Replace(Regex(r"\A +| +\z"), ""), normalizers.Replace(Regex(" {2,}"), " ")]
    if spec.escape_whitespaces:
        steps.append(normalizers.Replace(" ", "▁"))
    if spec.add_dummy_prefix:
        steps.append(normalizers.Prepend("▁"))
    tokenizer.normalizer = normalizers.Sequence(steps)
    # SentencePiece drops one leading ▁ of each piece until some text is out (with a dummy prefix
    # or extra whitespace removed); its pieces never begin with two (training text has no double
    # spaces), so that is every leading space, one per piece at most
    leading = max_positions if spec.add_dummy_prefix or spec.remove_extra_whitespaces else 0
    tokenizer.decoder = decoders.Sequence(
        [decoders.Replace("▁", " "), decoders.Fuse(), decoders.Strip(" ", leading, 0)]
    )
    eos = pieces[EOS_ID][0]
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"$A {eos}", pair=f"$A $B {eos}", special_tokens=[(eos, EOS_ID)]
    )
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        model_input_names=["input_ids", "attention_mask"],  # no token_type_ids, which generate() refuses
        pad_token=pieces[PAD_ID][0],
        unk_token=pieces[UNK_ID][0],
        bos_token=pieces[BOS_ID][0],
        eos_token=eos,
        model_max_length=max_positions,
    )


def save_tokenizer(tokenizer, folder: Path, ours, src: str, tgt: str) -> None:
    """Save under the class name that transformers 4 and 5 both load: 5 writes its own new name,
    `TokenizersBackend`, which 4 (and so optimum's ONNX export, which needs transformers 4) does
    not know. Beside it, `ours` (the run's SentencePiece model) as a Marian checkpoint's source.spm,
    target.spm and vocab.json, which `seq2seq import` reads the folder back with (and the
    languages, which it records)."""
    tokenizer.save_pretrained(folder)
    model = Path(ours.path).read_bytes()
    _save_pieces(ours, folder, model, model)
    path = Path(folder) / "tokenizer_config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    config |= {"tokenizer_class": "PreTrainedTokenizerFast", "source_lang": src, "target_lang": tgt}
    path.write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def save_marian_tokenizer(tokenizer, folder: Path, max_positions: int, src: str, tgt: str) -> None:
    """An imported Marian model's tokenizer (a `PairTokenizer`) as `MarianTokenizer`'s files, in
    our ids: the vocabulary maps each piece to our id, our BOS (the decoder's start) included."""
    _save_pieces(tokenizer, folder, tokenizer.files["source.spm"], tokenizer.files["target.spm"])
    if tokenizer.separate:  # vocab.json is the source's (every id), target_vocab.json the target's
        _write_vocab(Path(folder) / "target_vocab.json", tokenizer, tokenizer.target_vocab_size)
    config = dict(
        tokenizer_class="MarianTokenizer", source_lang=src, target_lang=tgt, model_max_length=max_positions,
        separate_vocabs=tokenizer.separate, unk_token="<unk>", eos_token="</s>", pad_token="<pad>",
    )  # fmt: skip
    (Path(folder) / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")


def _save_pieces(tokenizer, folder: Path, source_spm: bytes, target_spm: bytes) -> None:
    """A Marian checkpoint's tokenizer files: source.spm, target.spm and vocab.json (each piece ->
    our id, the specials and our BOS, the decoder's start, included)."""
    folder = Path(folder)
    (folder / "source.spm").write_bytes(source_spm)
    (folder / "target.spm").write_bytes(target_spm)
    _write_vocab(folder / "vocab.json", tokenizer, tokenizer.vocab_size)


def _write_vocab(path: Path, tokenizer, size: int) -> None:
    """The tokenizer's first `size` ids as a Marian vocabulary file: each piece -> our id."""
    vocab = {piece: i for i, piece in enumerate(tokenizer.id_pieces(range(size)))}
    if len(vocab) != size:
        raise Seq2SeqError(f"{tokenizer.path}: two ids share a piece; a {path.name} cannot hold them")
    path.write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")


def _model_proto(path: Path):
    from sentencepiece import sentencepiece_model_pb2

    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(Path(path).read_bytes())
    return proto
