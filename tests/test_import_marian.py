"""`seq2seq import`: tiny random Marian models built here (and their two SentencePiece models) are
imported and compute what transformers' MarianMTModel computes, through the same tokenizer ids."""

import io
import json

import pytest
import sentencepiece as spm
import torch

from seq2seq.data.pair_tokenizer import PairTokenizer
from seq2seq.data.special import EOS_ID
from seq2seq.decoding.search import DecodeOptions, search, translate
from seq2seq.training.checkpoint import load_run
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
    path, activation="swish", bias=False, tied=True, shared=True, seed=0, separate=False, scaled=True
):
    """A MarianMTModel with random weights saved as transformers saves one, with OPUS-MT's
    tokenizer files: a vocabulary of both models' pieces, EOS 0, UNK 1 and PAD last; `separate`:
    the source's (larger) and the target's apart, each its own embedding."""
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


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"activation": "relu"},
        {"bias": True},
        {"tied": False, "activation": "relu", "bias": True},
        {"separate": True},
        {"separate": True, "tied": False, "bias": True, "scaled": False},
    ],
)
def test_an_imported_model_computes_marians_logits(cli, tmp_path, kwargs):
    hf, model, tokenizer, _ = imported(cli, tmp_path, **kwargs)
    order, source_order = orders(tokenizer)
    g = torch.Generator().manual_seed(1)
    has_source = (source_order[4:] >= 0).nonzero()[:, 0] + 4  # our ids of the source's pieces, no special
    src = has_source[torch.randint(0, len(has_source), (3, 9), generator=g)]
    src[:, -1] = EOS_ID
    tgt_in = torch.randint(4, model.cfg.vocab_size, (3, 7), generator=g)
    tgt_in[:, 0] = 2  # BOS: Marian's PAD, its decoder start
    with torch.no_grad():
        ours = model(src, tgt_in)  # (B, T, V + 1)
        theirs = hf(input_ids=source_order[src], decoder_input_ids=order[tgt_in]).logits  # (B, T, V)
    torch.testing.assert_close(ours, theirs[..., order], atol=1e-4, rtol=0)
    assert (model.cfg.source_vocab_size is not None) == kwargs.get("separate", False)


@pytest.mark.parametrize("separate", [False, True])
def test_imported_greedy_search_is_transformers_generate(cli, tmp_path, separate):
    hf, model, tokenizer, _ = imported(cli, tmp_path, bias=True, separate=separate)
    order, source_order = orders(tokenizer)
    ids = [[*row, EOS_ID] for row in tokenizer.encode(EN[:4])]
    for row in ids:
        (ours,) = search(model, torch.tensor([row]), DecodeOptions(beam=1))
        theirs = hf.generate(
            source_order[torch.tensor([row])], num_beams=1, do_sample=False, max_new_tokens=60
        )
        expected = theirs[0, 1:].tolist()  # after the decoder start
        expected = expected[: expected.index(0)] if 0 in expected else expected  # to their EOS
        got = order[torch.tensor(ours[0].tokens, dtype=torch.long)].tolist()
        assert got == expected[: len(got)] and len(got) > 0  # our length limit may stop first


@pytest.mark.parametrize("separate", [False, True])
def test_the_tokenizer_gives_marian_tokenizers_ids(cli, tmp_path, separate):
    _, _, tokenizer, folder = imported(cli, tmp_path, separate=separate)
    theirs = hf_tokenizer(folder)
    order = tokenizer.marian_ids
    for side, texts in (("source", EN[:3] + ODD), ("target", FR[:3] + ODD)):
        expected = theirs(texts)["input_ids"] if side == "source" else theirs(text_target=texts)["input_ids"]
        table = tokenizer.marian_source_ids if side == "source" else order
        ours = [[int(table[i]) for i in [*row, EOS_ID]] for row in tokenizer.encode(texts, side)]
        assert ours == expected, side
    rows = tokenizer.encode(FR[:3], "target")
    assert tokenizer.decode(rows) == [theirs.decode([int(order[i]) for i in row]) for row in rows]
    assert isinstance(tokenizer, PairTokenizer) and tokenizer.target_vocab_size == len(order)
    assert (tokenizer.vocab_size > len(order)) == separate  # the source's own pieces follow the target's


def test_an_imported_run_translates_from_the_command_line(cli, tmp_path):
    _, model, tokenizer, _ = imported(cli, tmp_path)
    (tmp_path / "in.txt").write_text("\n".join(EN[:3]) + "\n\n")
    result = cli("translate", "--run", tmp_path / "run", "--input", tmp_path / "in.txt", "--greedy")
    assert result.code == 0, result.err
    expected = translate(model, tokenizer, [*EN[:3], ""], DecodeOptions(beam=1)).best
    assert result.out.splitlines() == expected
    (tmp_path / "ref.txt").write_text("\n".join(FR[:3]) + "\n\n")
    run, files = tmp_path / "run", ["--source", tmp_path / "in.txt"]
    for command in (
        ["evaluate", "--run", run, *files, "--reference", tmp_path / "ref.txt", "--json"],
        ["score", "--run", run, *files, "--target", tmp_path / "ref.txt", "--json"],
        ["align", "--run", run, *files, "--target", tmp_path / "ref.txt"],
    ):
        done = cli(*command)
        assert done.code == 0 and done.out.strip(), (command[0], done.err)


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda f: (f / "vocab.json").unlink(), r"is not a Marian checkpoint: it has no vocab.json"),
        (lambda f: _edit(f, model_type="bart"), r"holds a bart model, not a Marian one"),
        (lambda f: _edit(f, vocab_size=7), r"pieces but the model has 7: the tokenizer does not match"),
        (lambda f: _edit(f, activation_function="tanh"), r"activation 'tanh' is not relu or swish"),
        (lambda f: (f / "model.safetensors").write_bytes(b"nonsense"), r"cannot load the Marian weights"),
        ("unshared", r"the encoder's and the decoder's embeddings differ"),
        (
            lambda f: _edit(f, share_encoder_decoder_embeddings=False),
            r"separate vocabularies, but no target_vocab.json beside vocab.json",
        ),
    ],
)
def test_a_folder_that_is_not_a_marian_checkpoint_is_one_line(cli, tmp_path, damage, message):
    folder = tmp_path / "marian"
    marian_folder(folder, tied=damage != "unshared", shared=damage != "unshared")
    if callable(damage):
        damage(folder)
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    result = cli("import", folder, tmp_path / "run")
    assert result.code == 2 and len(result.err.strip().splitlines()) == 1, result.err
    assert __import__("re").search(message, result.err), result.err
    assert not (tmp_path / "run").exists() and {p.name: p.read_bytes() for p in folder.iterdir()} == before


def _edit(folder, **values):
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(config | values))


@pytest.mark.parametrize("separate", [False, True])
def test_an_imported_run_is_fine_tuned_into_a_new_run_never_trained_over(cli, tmp_path, separate):
    from tests.conftest import write_multi30k
    from tests.helpers import TUNE, train_args

    _, start, _, _ = imported(cli, tmp_path, separate=separate)
    data = write_multi30k(tmp_path / "corpus", {"train": 40, "val": 4})
    over = cli(*train_args(data, tmp_path / "run", steps=2))
    assert over.code == 2 and "holds an imported model; fine-tune it into a new run" in over.err, over.err
    new = tmp_path / "tuned"
    frozen = ["--freeze", "encoder"] if separate else []
    start_from = ["--init-from", tmp_path / "run", "--data-dir", data, "--run", new, *frozen]
    tuned = cli(*TUNE, "--max-steps", "2", *start_from)
    assert tuned.code == 0, tuned.err
    model, tokenizer = load_run(new)
    assert isinstance(tokenizer, PairTokenizer) and model.cfg.ffn == "silu" and not model.cfg.norm_first
    assert model.cfg == start.cfg
    if separate:  # the encoder's own table is the encoder's: frozen with it
        assert torch.equal(model.source_embed.weight, start.source_embed.weight)
        assert not torch.equal(model.embed.weight, start.embed.weight)
    tokenizers = [(run / "tokenizer.model").read_bytes() for run in (new, tmp_path / "run")]
    assert tokenizers[0] == tokenizers[1]


@pytest.mark.parametrize("separate", [False, True])
def test_an_imported_run_exports_to_ctranslate2_and_shows_its_attention(cli, tmp_path, separate):
    ctranslate2 = pytest.importorskip("ctranslate2")
    from seq2seq.data.special import BOS_ID, PAD_ID
    from seq2seq.export.ctranslate2 import export_ctranslate2

    kwargs = dict(bias=True, tied=False, separate=separate, scaled=not separate)
    _, model, tokenizer, _ = imported(cli, tmp_path, **kwargs)
    ours = translate(model, tokenizer, EN[:4], DecodeOptions(beam=1, max_len=12)).tokens
    engine = ctranslate2.Translator(str(export_ctranslate2(tmp_path / "run", tmp_path / "ct2")), device="cpu")
    never = [tokenizer.id_pieces([i]) for i in (PAD_ID, BOS_ID)]
    results = engine.translate_batch(
        [tokenizer.pieces(s) for s in EN[:4]], beam_size=1, max_decoding_length=12, suppress_sequences=never
    )
    assert [[tokenizer.table[p] for p in r.hypotheses[0]] for r in results] == ours
    shown = cli("translate", "--run", tmp_path / "run", "--show-attention", "--greedy", EN[0])
    assert shown.code == 0 and len(shown.out.strip()) > 0, shown.err


def test_a_hub_id_on_a_machine_without_the_hub_is_one_line(tmp_path, monkeypatch):
    from tests.cli_helpers import run_process

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # the subprocess reads it; nothing is cached there
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    result = run_process(["import", "Helsinki-NLP/opus-mt-en-fr", tmp_path / "run"])
    assert result.code == 2 and len(result.err.strip().splitlines()) == 1, result.err
    assert "cannot fetch Helsinki-NLP/opus-mt-en-fr from the Hugging Face Hub" in result.err
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("separate", [False, True])
def test_an_imported_run_exports_to_hugging_face_and_imports_back_the_same(cli, tmp_path, separate):
    from seq2seq.export.huggingface import export_huggingface

    _, model, tokenizer, _ = imported(cli, tmp_path, bias=True, separate=separate, scaled=not separate)
    out = export_huggingface(tmp_path / "run", tmp_path / "hf")
    hf = transformers.AutoModelForSeq2SeqLM.from_pretrained(out).eval()
    theirs = transformers.AutoTokenizer.from_pretrained(out)
    assert type(theirs).__name__ == "MarianTokenizer"
    rows = tokenizer.encode(EN[:3] + ODD)
    assert theirs(EN[:3] + ODD)["input_ids"] == [[*row, EOS_ID] for row in rows]  # our ids, as exported
    for row in rows[:3]:
        (ours,) = search(model, torch.tensor([[*row, EOS_ID]]), DecodeOptions(beam=1))
        generated = hf.generate(
            torch.tensor([[*row, EOS_ID]]), num_beams=1, do_sample=False, max_new_tokens=60
        )
        assert generated[0, 1 : 1 + len(ours[0].tokens)].tolist() == ours[0].tokens
    back = cli("import", out, tmp_path / "back")
    assert back.code == 0, back.err
    again, again_tokenizer = load_run(tmp_path / "back")
    assert again_tokenizer.marian_ids.tolist() == list(range(tokenizer.target_vocab_size))  # ids as exported
    assert again_tokenizer.marian_source_ids.tolist() == list(range(tokenizer.vocab_size))
    assert again.cfg == model.cfg
    (target,) = tokenizer.encode(FR[:1], "target")
    src, tgt_in = torch.tensor([[*rows[0], EOS_ID]]), torch.tensor([[2, *target]])
    with torch.no_grad():
        torch.testing.assert_close(again(src, tgt_in), model(src, tgt_in), atol=1e-5, rtol=0)
    assert again_tokenizer.encode(FR[:3] + ODD, "target") == tokenizer.encode(FR[:3] + ODD, "target")


def test_an_imported_run_is_served_and_drawn_as_the_library_does(cli, tmp_path):
    pytest.importorskip("fastapi", reason='the server needs the extra: pip install -e ".[serve]"')
    from fastapi.testclient import TestClient

    from seq2seq.decoding.attention import attention
    from seq2seq.views.explorer import maps_json
    from tests.serve_helpers import make_app

    _, model, tokenizer, _ = imported(cli, tmp_path, separate=True, scaled=False)
    with TestClient(make_app(tmp_path / "run", beam=2)) as client:
        served = client.post("/translate", json={"text": EN[:2]}).json()["translations"]
        forced = client.post("/attention", json={"text": EN[0], "translation": FR[0]}).json()
    assert served == translate(model, tokenizer, EN[:2], DecodeOptions(beam=2)).best
    assert forced["source"] == [*tokenizer.pieces(EN[0]), "</s>"]
    assert forced["target"] == [*tokenizer.pieces(FR[0], "target"), "</s>"]
    library = maps_json(attention(model, tokenizer, EN[0], FR[0]))
    assert forced["kinds"] == library["kinds"]
    page = tmp_path / "explorer.html"
    drawn = cli("translate", "--run", tmp_path / "run", "--greedy", "--attention-html", page, EN[0])
    assert drawn.code == 0 and page.read_text(encoding="utf-8").startswith("<!"), drawn.err
