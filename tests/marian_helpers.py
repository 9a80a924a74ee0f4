"""Tiny random Marian models built with transformers, with their two SentencePiece models, and
the run `seq2seq import` makes of one: what the import tests start from (all offline)."""

import io
import json

import pytest
import sentencepiece as spm
import torch

from seq2seq.runs.load import load_run
from tests.conftest import EN, FR

transformers = pytest.importorskip("transformers")

ODD = ["Un élève à l'école, 1984.", "", "Ĉu ŝi 42 ☃ naĝas?", "a  dog", "naïve café 2 3 5 ≥ ★"]


def _spm(texts: list[str], size: int) -> bytes:
    model = io.BytesIO()
    spm.SentencePieceTrainer.Train(
        sentence_iterator=iter(texts), model_writer=model, vocab_size=size, model_type="unigram",
        hard_vocab_limit=False, minloglevel=2, character_coverage=0.999,
    )  # fmt: skip
    return model.getvalue()


def _table(*models: bytes) -> dict[str, int]:
    """OPUS-MT's vocabulary of the models' pieces: EOS 0, UNK 1, the pieces, PAD last."""
    pieces = []
    for model in models:
        processor = spm.SentencePieceProcessor(model_proto=model)
        pieces += [processor.IdToPiece(i) for i in range(processor.GetPieceSize())]
    rest = [p for p in dict.fromkeys(pieces) if p not in ("<unk>", "<s>", "</s>", "<pad>")]
    vocab = {"</s>": 0, "<unk>": 1} | {p: i + 2 for i, p in enumerate(rest)}
    return vocab | {"<pad>": len(vocab)}


def marian_folder(
    path,
    activation="swish",
    bias=False,
    tied=True,
    shared=True,
    seed=0,
    separate=False,
    scaled=True,
    copies=False,
):
    """A MarianMTModel with random weights saved as transformers saves one, with OPUS-MT's
    tokenizer files: a vocabulary of both models' pieces, EOS 0, UNK 1 and PAD last; `separate`:
    the source's (larger) and the target's apart, each its own embedding; `copies`: the output
    bias favours the pieces only the source model knows, as a real model's are when it copies a
    name, so that its outputs hold them."""
    torch.manual_seed(seed)
    digits = [f"{i} {i + 1}" for i in range(0, 100, 2)]  # the synthetic corpus numbers its lines
    source, target = _spm(EN * 3 + digits, 60), _spm(FR * 3 + digits, 40 if separate else 60)
    vocab = _table(source) if separate else _table(source, target)
    target_vocab = _table(target) if separate else vocab
    config = transformers.MarianConfig(
        vocab_size=len(vocab), decoder_vocab_size=len(target_vocab),
        share_encoder_decoder_embeddings=not separate, d_model=16, encoder_layers=2, decoder_layers=2,
        encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=24, decoder_ffn_dim=24,
        max_position_embeddings=64,
        activation_function=activation, pad_token_id=target_vocab["<pad>"], eos_token_id=0,
        decoder_start_token_id=target_vocab["<pad>"], forced_eos_token_id=0,
        bad_words_ids=[[target_vocab["<pad>"]]], scale_embedding=scaled, tie_word_embeddings=tied,
        dropout=0.1,
    )  # fmt: skip
    model = transformers.MarianMTModel(config).eval()
    with torch.no_grad():
        for p in model.parameters():  # larger than the init, so that every part shows in the logits
            if p.requires_grad:  # not the position table, which Marian computes, never saves
                p.normal_(0.0, 0.5)
        if bias:
            model.final_logits_bias.normal_(0.0, 1.0)
        if copies:
            known = spm.SentencePieceProcessor(model_proto=target)
            copied = [i for p, i in vocab.items() if known.PieceToId(p) == known.unk_id() and p != "<unk>"]
            model.final_logits_bias[0, copied] += 2.0
        if not tied and shared and not separate:  # untied, transformers unties every embedding: one
            # output apart (`shared=False`: the encoder's and decoder's differ over one vocabulary)
            for stack in (model.model.encoder, model.model.decoder):
                stack.embed_tokens.weight.copy_(model.model.shared.weight)
    model.save_pretrained(path)
    (path / "source.spm").write_bytes(source)
    (path / "target.spm").write_bytes(target)
    (path / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False))
    if separate:
        (path / "target_vocab.json").write_text(json.dumps(target_vocab, ensure_ascii=False))
    languages = {"source_lang": "en", "target_lang": "fr", "separate_vocabs": separate}
    (path / "tokenizer_config.json").write_text(json.dumps(languages))
    return transformers.MarianMTModel.from_pretrained(path).eval()  # as a user of transformers has it


def hf_tokenizer(folder):
    separate = (folder / "target_vocab.json").is_file()
    return transformers.MarianTokenizer(
        str(folder / "source.spm"),
        str(folder / "target.spm"),
        str(folder / "vocab.json"),
        str(folder / "target_vocab.json") if separate else None,
        separate_vocabs=separate,
    )


def orders(tokenizer) -> tuple[torch.Tensor, torch.Tensor]:
    """The Marian id of each of our ids, on the target side and on the source side."""
    return torch.from_numpy(tokenizer.marian_ids), torch.from_numpy(tokenizer.marian_source_ids)


def imported(cli, tmp_path, **kwargs):
    folder = tmp_path / "marian"
    hf = marian_folder(folder, **kwargs)
    result = cli("import", folder, tmp_path / "run")
    assert result.code == 0, result.err
    return hf, *load_run(tmp_path / "run"), folder
