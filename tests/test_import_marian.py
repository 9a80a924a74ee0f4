"""`seq2seq import`: tiny random Marian models built here (and their two SentencePiece models) are
imported and compute what transformers' MarianMTModel computes, through the same tokenizer ids."""

import json

import pytest
import torch

from seq2seq.data.pair_tokenizer import PairTokenizer
from seq2seq.data.special import EOS_ID
from seq2seq.decoding.search import DecodeOptions, search, translate
from seq2seq.runs.load import load_run
from tests.conftest import EN, FR
from tests.marian_helpers import ODD, hf_tokenizer, imported, marian_folder, orders, transformers


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


def test_imported_text_is_marian_tokenizers_text_with_source_only_pieces_and_the_length_limit(cli, tmp_path):
    """50 greedy lines of a shared-vocabulary model that copies source-only pieces: our text is
    `MarianTokenizer.decode(..., skip_special_tokens=True)`'s, and `max_len` N (pieces, EOS not
    counted, as fairseq's) is `generate(max_new_tokens=N + 1)` (which counts the forced EOS)."""
    hf, model, tokenizer, folder = imported(cli, tmp_path, bias=True, copies=True)
    theirs, (order, source_order) = hf_tokenizer(folder), orders(tokenizer)
    known = tokenizer.sides["target"]
    lines = [f"{i} {i + 1} {EN[i % len(EN)]}" for i in range(50)]
    copied = stopped = 0
    for row in tokenizer.encode(lines):
        (hyps,) = search(model, torch.tensor([[*row, EOS_ID]]), DecodeOptions(beam=1, max_len=12))
        generated = hf.generate(
            source_order[torch.tensor([[*row, EOS_ID]])], num_beams=1, do_sample=False, max_new_tokens=13
        )
        expected = generated[0, 1:].tolist()  # after the decoder start
        expected = expected[: expected.index(0)] if 0 in expected else expected  # to their EOS
        tokens = hyps[0].tokens
        assert order[torch.tensor(tokens, dtype=torch.long)].tolist() == expected
        text = tokenizer.decode([tokens])[0]
        assert text == theirs.decode(expected, skip_special_tokens=True) and "\u2581" not in text
        copied += any(known.PieceToId(p) == known.unk_id() for p in tokenizer.id_pieces(tokens))
        stopped += len(tokens) == 12
    assert copied >= 10  # lines holding a piece the target model lacks
    assert stopped >= 1  # lines the limit stopped


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
        # every field that shapes the model, checked before anything loads (and never a traceback)
        (lambda f: _edit(f, d_model="16"), r'd_model must be a whole number, not "16"'),
        (lambda f: _edit(f, vocab_size="60"), r'vocab_size must be a whole number, not "60"'),
        (lambda f: _edit(f, scale_embedding="no"), r"scale_embedding must be true or false"),
        (lambda f: _edit(f, encoder_layers=True), r"encoder_layers must be a whole number, not true"),
        (lambda f: _edit(f, activation_function=["relu"]), r"activation \['relu'\] is not relu or swish"),
        (lambda f: _edit(f, architectures=5), r"architectures must be a list of class names, not 5"),
        (lambda f: _edit(f, max_position_embeddings=0), r"max_position_embeddings is 0; it must be from 2"),
        (lambda f: _edit(f, encoder_layers=0), r"encoder_layers is 0; it must be from 1"),
        (lambda f: _edit(f, decoder_layers=0), r"decoder_layers is 0; it must be from 1"),
        (lambda f: _edit(f, dropout=float("nan")), r"dropout must be a finite number, not NaN"),
        (lambda f: _edit(f, d_model=[[[16]]]), r"d_model must be a whole number, not a list"),
        (lambda f: _nest(f / "config.json"), r"config.json is not readable JSON"),
        (lambda f: _nest(f / "vocab.json"), r"vocab.json is not readable JSON"),
        (lambda f: _edit(f, encoder_layers=1), r"the weights hold \d+ tensors config.json does not declare"),
        (lambda f: (f / "model.safetensors").write_bytes(b"nonsense"), r"cannot load the Marian weights"),
        (
            lambda f: (f / "target.spm").write_bytes(b"nonsense"),
            r"marian/target.spm is not a SentencePiece model",
        ),
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


@pytest.mark.parametrize("out", ["marian", "marian/run", "."])
def test_an_import_into_or_around_its_folder_is_refused(cli, tmp_path, monkeypatch, out):
    marian_folder(tmp_path / "marian")
    before = sorted(tmp_path.rglob("*"))
    monkeypatch.chdir(tmp_path)
    result = cli("import", "marian", out, "--force")
    assert result.code == 2 and "is, holds or lies inside the folder marian" in result.err, result.err
    assert sorted(tmp_path.rglob("*")) == before


def _nest(path, depth=100_000):
    """A JSON object nested deeper than any parser's recursion: `{"a": [[[...]]]}`."""
    path.write_text('{"model_type": "marian", "a": ' + "[" * depth + "]" * depth + "}")


def _edit(folder, **values):
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(config | values))


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
