"""Export to Hugging Face transformers: the directory, loaded by plain `transformers` (with the
code the folder ships for a gated block), computes our logits, decodes our greedy translations and
tokenizes into our ids. Skips without the `hf` extra (CI installs it)."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from seq2seq.data.batch import collate, pad
from seq2seq.data.special import BOS_ID, EOS_ID, PAD_ID, UNK_ID
from seq2seq.decoding.search import DecodeOptions, source_ids, translate
from seq2seq.export import huggingface as hf_export
from seq2seq.export.huggingface import export_huggingface
from seq2seq.runs import files as ckpt
from seq2seq.runs.load import load_run
from tests.cli_helpers import run_cli
from tests.conftest import EN, FR, caption_tokenizer, tiny_model, write_run

transformers = pytest.importorskip("transformers")
pytest.importorskip("google.protobuf")

SENTENCES = [
    "a dog runs",
    "two men sit on the red car 12",
    "the sun sets",
    "une fille joue 3",
    "A girl plays with a red ball in the park",
    "the cat sleeps 7",
]
TEXTS = [
    "a dog runs",
    "Crème brûlée à 12h30, ça coûte 3,50 €!",  # accents, digits, a symbol outside the vocabulary
    "日本語 Ωmega ☃ 🙂",  # characters outside the vocabulary
    "",
    " ",
    "  two   men  sit  ",  # runs of spaces, leading and trailing
    "tab\there\nnew line",
    "\ufb01 \u2460 \uff21\uff22\uff23",  # NFKC folds these: the fi ligature, a circled 1, full-width ABC
    "▁already escaped",
    "DON'T SHOUT 1234567890",
]


def trained_model(tokenizer, norm_first: bool, ffn: str):
    """A tiny model taught the captions for a moment: real, varied translations, some ending early
    with EOS and some at the length limit, so that greedy equality means something."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # faster at this size, and the machine is shared
    try:
        model = tiny_model(vocab_size=tokenizer.vocab_size, seed=0, norm_first=norm_first, ffn=ffn).train()
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
        src, tgt = ([f"{s} {i}" for i, s in enumerate(side * 4)] for side in (EN, FR))
        batch = collate(tokenizer.encode(src), tokenizer.encode(tgt), 64)
        for _ in range(40):
            logits = model(batch.src, batch.tgt_in)
            loss = F.cross_entropy(logits.flatten(0, 1), batch.tgt_out.flatten(), ignore_index=PAD_ID)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    finally:
        torch.set_num_threads(threads)
    return model.eval()


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    return caption_tokenizer(tmp_path_factory.mktemp("tokenizer") / "tokenizer.model")


SHAPES = {  # id -> (norm_first, ffn): Pegasus, Marian, and each with the gated block (our subclasses)
    "pre-LN": (True, "relu"),
    "post-LN": (False, "relu"),
    "pre-LN-swiglu": (True, "swiglu"),
    "post-LN-swiglu": (False, "swiglu"),
}


@pytest.fixture(scope="module", params=list(SHAPES))
def run_dir(request, tokenizer, tmp_path_factory):
    model = trained_model(tokenizer, *SHAPES[request.param])
    run = write_run(tmp_path_factory.mktemp("hf-run"), lambda v: model, tokenizer)
    ckpt.save_weights(model, run / ckpt.BEST, val_bleu=12.345)
    ckpt.append_metrics(run, {"step": 40, "epoch": 3, "val_bleu": 12.345, "best": True})
    return run


@pytest.fixture(scope="module")
def exported(run_dir, tmp_path_factory):
    return export_huggingface(run_dir, tmp_path_factory.mktemp("hf") / "model")


def ships_code(folder: Path) -> bool:
    """Whether the export brought its own model class (a gated block), named in `auto_map`."""
    return "auto_map" in json.loads((folder / "config.json").read_text())


def load(folder: Path):
    """As a user would: trust_remote_code only where the folder ships code."""
    return (
        transformers.AutoModelForSeq2SeqLM.from_pretrained(folder, trust_remote_code=ships_code(folder)),
        transformers.AutoTokenizer.from_pretrained(folder),
    )


def greedy_ids(hf, batch, max_len: int) -> list[list[int]]:
    """generate()'s greedy outputs as our decoder returns them: the start token and EOS dropped."""
    out = hf.generate(**batch, num_beams=1, max_new_tokens=max_len + 1)  # + the EOS step
    rows = [row[1:] for row in out.tolist()]
    return [row[: row.index(EOS_ID)] if EOS_ID in row else row for row in rows]


@pytest.mark.parametrize("table", ["saved", "recomputed"])
def test_teacher_forced_logits_equal_ours(run_dir, exported, table):
    """With the position table from the file or recomputed by transformers itself (as Marian does,
    and as any version might), the logits are ours."""
    model, tokenizer = load_run(run_dir)
    hf, _ = load(exported)
    if table == "recomputed":
        with torch.no_grad():
            for table in (hf.model.encoder.embed_positions, hf.model.decoder.embed_positions):
                if hasattr(table, "create_weight"):  # transformers 5
                    table.weight.copy_(table.create_weight())
                else:  # transformers 4
                    table._init_weight()
    src = pad(source_ids(model, tokenizer, SENTENCES)[0])
    tgt = pad([[BOS_ID, *ids] for ids in tokenizer.encode(FR)])[: len(SENTENCES)]
    with torch.no_grad():
        theirs = hf(input_ids=src, attention_mask=src != PAD_ID, decoder_input_ids=tgt).logits
        torch.testing.assert_close(theirs, model(src, tgt), atol=1e-5, rtol=1e-5)


def test_greedy_translations_equal_ours(run_dir, exported):
    model, tokenizer = load_run(run_dir)
    ours = translate(model, tokenizer, SENTENCES, DecodeOptions(beam=1, max_len=12))
    hf, hf_tokenizer = load(exported)
    batch = hf_tokenizer(SENTENCES, return_tensors="pt", padding=True)
    theirs = greedy_ids(hf, batch, 12)
    assert theirs == ours.tokens
    assert {len(t) for t in ours.tokens} > {12}  # some end with EOS, some at the limit
    assert hf_tokenizer.batch_decode(theirs, skip_special_tokens=True) == ours.best


def test_the_translation_pipeline_translates_as_we_do(run_dir, exported):
    """transformers 4 has `pipeline("translation")`; 5 removed the task (and text2text-generation),
    leaving tokenizer + generate(), which the test above checks."""
    from transformers.pipelines import SUPPORTED_TASKS

    if "translation" not in SUPPORTED_TASKS:
        pytest.skip(f"transformers {transformers.__version__} has no translation pipeline")
    model, tokenizer = load_run(run_dir)
    ours = translate(model, tokenizer, SENTENCES, DecodeOptions(beam=1, max_len=12)).best
    translator = transformers.pipeline(
        "translation", model=str(exported), trust_remote_code=ships_code(exported)
    )
    theirs = translator(SENTENCES, num_beams=1, max_new_tokens=13)
    assert [t["translation_text"] for t in theirs] == ours


def test_the_longest_output_is_ours(tmp_path):
    """generation_config.json's limit: a model that never emits EOS stops where ours does, EOS
    forced after max_positions - 1 pieces, within the position table."""
    run = write_run(tmp_path / "run", lambda v: tiny_model(vocab_size=v, seed=3))
    model, tokenizer = load_run(run)
    longest = model.cfg.max_positions - 1
    ours = translate(model, tokenizer, SENTENCES[:2], DecodeOptions(beam=1, max_len=longest)).tokens
    hf, hf_tokenizer = load(export_huggingface(run, tmp_path / "hf"))
    batch = hf_tokenizer(SENTENCES[:2], return_tensors="pt", padding=True)
    out = hf.generate(**batch, num_beams=1).tolist()
    assert [row[1:-1] for row in out] == ours and [len(t) for t in ours] == [longest, longest]
    assert [row[-1] for row in out] == [EOS_ID, EOS_ID]
    assert hf.generation_config.num_beams == DecodeOptions().beam


@pytest.mark.parametrize("shape", ["pre-LN", "post-LN", "post-LN-swiglu"])
def test_an_untied_output_layer_keeps_its_bias(tmp_path, shape):
    norm_first, ffn = SHAPES[shape]

    def make(v):
        model = tiny_model(vocab_size=v, seed=5, norm_first=norm_first, ffn=ffn, tie_embeddings=False)
        torch.nn.init.normal_(model.generator.bias)
        return model

    run = write_run(tmp_path / "run", make)
    model, _ = load_run(run)
    hf, _ = load(export_huggingface(run, tmp_path / "hf"))
    src, tgt = torch.tensor([[5, 9, 7, EOS_ID]]), torch.tensor([[BOS_ID, 8, 6]])
    with torch.no_grad():
        torch.testing.assert_close(hf(input_ids=src, decoder_input_ids=tgt).logits, model(src, tgt))


@pytest.mark.parametrize("text", TEXTS)
def test_the_tokenizer_gives_our_ids(run_dir, exported, text):
    model, tokenizer = load_run(run_dir)
    hf_tokenizer = transformers.AutoTokenizer.from_pretrained(exported)
    ids = hf_tokenizer(text)["input_ids"]
    assert ids == source_ids(model, tokenizer, [text])[0][0]
    assert hf_tokenizer.convert_ids_to_tokens(ids) == tokenizer.id_pieces(ids)


def test_the_tokenizer_decodes_as_we_do(run_dir, exported):
    """Outputs that begin with lone ▁ pieces too: SentencePiece drops every leading space. (Not
    <unk>: `skip_special_tokens` drops it, where SentencePiece writes ⁇.)"""
    _, tokenizer = load_run(run_dir)
    hf_tokenizer = transformers.AutoTokenizer.from_pretrained(exported)
    space = tokenizer.sp.PieceToId("▁")
    words = [ids for ids in tokenizer.encode(TEXTS) if UNK_ID not in ids]
    outputs = [*words, *([space] * n + ids + [space] * n + ids for n, ids in enumerate(words, 1))]
    theirs = hf_tokenizer.batch_decode(outputs, skip_special_tokens=True)
    assert theirs == tokenizer.decode(outputs)
    assert len(words) > 2 and any(o[:1] == [space] for o in outputs)


def test_the_tokenizer_pads_and_truncates_as_we_do(run_dir, exported):
    model, tokenizer = load_run(run_dir)
    hf_tokenizer = transformers.AutoTokenizer.from_pretrained(exported)
    lines = [*TEXTS, " ".join(EN * 20)]  # the last is longer than max_positions
    ids, truncated = source_ids(model, tokenizer, lines)
    batch = hf_tokenizer(lines, return_tensors="pt", padding=True, truncation=True)
    assert truncated == 1 and batch["input_ids"].tolist() == pad(ids).tolist()
    assert batch["attention_mask"].tolist() == (pad(ids) != PAD_ID).long().tolist()


@pytest.mark.parametrize("run_dir", ["pre-LN", "post-LN-swiglu"], indirect=True)  # ~10 s each
def test_a_fresh_python_without_seq2seq_loads_it(run_dir, exported, tmp_path):
    """The directory needs only transformers: a new interpreter that never imports seq2seq loads
    it and translates as we do (a gated model through the code its folder ships)."""
    model, tokenizer = load_run(run_dir)
    ours = translate(model, tokenizer, SENTENCES, DecodeOptions(beam=1, max_len=12)).best
    script = (
        "import json, sys\n"
        "from transformers import AutoModelForSeq2SeqLM, AutoTokenizer\n"
        f"tokenizer = AutoTokenizer.from_pretrained({str(exported)!r})\n"
        f"model = AutoModelForSeq2SeqLM.from_pretrained({str(exported)!r}, "
        f"trust_remote_code={ships_code(exported)})\n"
        f"batch = tokenizer({SENTENCES!r}, return_tensors='pt', padding=True)\n"
        "out = model.generate(**batch, num_beams=1, max_new_tokens=13)\n"
        "ours = [m for m in sys.modules if m.split('.')[0] == 'seq2seq']\n"
        "print(json.dumps([tokenizer.batch_decode(out, skip_special_tokens=True), ours]))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"HF_MODULES_CACHE": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    texts, imported = json.loads(proc.stdout.strip().splitlines()[-1])
    assert texts == ours and imported == []


def test_the_model_card(run_dir, exported):
    card = (exported / "README.md").read_text(encoding="utf-8")
    assert card.startswith("---\nlanguage:\n- en\n- fr\n")
    assert "BLEU **12.35** on the `val` split after 40 steps (3 epochs)" in card
    assert "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:" in card
    assert "`multi30k`" in card and "| 2 + 2 |" in card
    gated = load_run(run_dir)[0].cfg.ffn == "swiglu"
    assert ("| feed-forward block | SwiGLU (gated) |" in card) == gated
    assert ('from_pretrained("path/to/this/folder", trust_remote_code=True)' in card) == gated
    assert ("`modeling_gated.py` defines `Gated" in card) == gated


def test_export_from_the_command_line(run_dir, tmp_path, capsys, monkeypatch):
    out = tmp_path / "hf"
    result = run_cli(["export", "--run", run_dir, "--to", "huggingface", out], capsys, monkeypatch)
    assert result.code == 0, result.err
    assert "wrote the Hugging Face model" in result.out
    assert ("trust_remote_code=True" in " ".join(result.out.split())) == ships_code(out)
    names = {"config.json", "model.safetensors", "generation_config.json", "tokenizer.json", "README.md"}
    assert names <= {p.name for p in out.iterdir()}
    # the name transformers 4 also loads (optimum's ONNX export needs 4); 5 alone knows its own
    assert (
        json.loads((out / "tokenizer_config.json").read_text())["tokenizer_class"]
        == "PreTrainedTokenizerFast"
    )
    again = run_cli(["export", "--run", run_dir, "--to", "huggingface", out], capsys, monkeypatch)
    assert again.code == 2 and "already exists; pass --force" in again.err
    forced = run_cli(["export", "--run", run_dir, "--to", "huggingface", "--force", out], capsys, monkeypatch)
    assert forced.code == 0, forced.err
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary left


@pytest.mark.parametrize(
    "args,out,message",
    [
        (["--run", "{tmp}/nothing"], "{tmp}/hf", "does not exist"),
        (["--quantization", "int8"], "{tmp}/hf", "only for --to ctranslate2"),
        ([], "{run}", "is, holds or lies inside the run"),
        (["--force"], "{run}", "is, holds or lies inside the run"),
        (["--force"], "{run}/hf", "is, holds or lies inside the run"),
        (["--force"], "{tmp}/outer", "is, holds or lies inside the run"),  # replacing it would delete the run
    ],
)
def test_bad_exports_write_nothing(run_dir, tmp_path, capsys, monkeypatch, args, out, message):
    run = shutil.copytree(run_dir, tmp_path / "outer" / "run")
    before = sorted(tmp_path.rglob("*"))
    fill = lambda s: s.format(tmp=tmp_path, run=run)  # noqa: E731
    argv = ["export", "--run", run, "--to", "huggingface", *map(fill, args), fill(out)]
    result = run_cli(argv, capsys, monkeypatch)
    assert result.code == 2 and message in result.err, result.err
    assert len(result.err.strip().splitlines()) == 1 and sorted(tmp_path.rglob("*")) == before


def test_an_rnn_run_is_not_supported(tmp_path, capsys, monkeypatch):
    from seq2seq.models.rnn import RNN, RNNConfig

    run = write_run(tmp_path / "rnn", lambda v: RNN(RNNConfig(vocab_size=v, d_model=16, n_layers=1)))
    result = run_cli(["export", "--run", run, "--to", "huggingface", tmp_path / "out"], capsys, monkeypatch)
    assert result.code == 2 and "supports Transformers only" in result.err
    assert len(result.err.strip().splitlines()) == 1 and not (tmp_path / "out").exists()


@pytest.mark.parametrize("run_dir", ["pre-LN-swiglu", "post-LN-swiglu"], indirect=True)
def test_a_gated_model_ships_its_code_and_needs_trust(run_dir, exported, capsys):
    """A SwiGLU block, which transformers lacks, comes as modeling_gated.py named in auto_map for
    the model alone: the config stays Pegasus's or Marian's, so AutoTokenizer loads without asking
    about code, and without trust_remote_code the plain class refuses the weights (never loads
    them into an ungated block)."""
    config = json.loads((exported / "config.json").read_text())
    assert (exported / "modeling_gated.py").is_file() and config["model_type"] in {"pegasus", "marian"}
    assert list(config["auto_map"]) == ["AutoModelForSeq2SeqLM"]
    assert config["auto_map"]["AutoModelForSeq2SeqLM"].startswith("modeling_gated.Gated")
    transformers.AutoTokenizer.from_pretrained(exported)
    assert "custom code" not in capsys.readouterr().out
    with pytest.raises(RuntimeError, match=r"ignore_mismatched_sizes|size mismatch"):  # transformers 5 | 4
        transformers.AutoModelForSeq2SeqLM.from_pretrained(exported)


def test_the_relu_model_ships_no_code(tmp_path):
    run = write_run(tmp_path / "run", lambda v: tiny_model(vocab_size=v, seed=3))
    exported = export_huggingface(run, tmp_path / "hf")
    assert not ships_code(exported) and not list(exported.glob("*.py"))


def test_without_transformers_the_error_says_what_to_install(run_dir, tmp_path, monkeypatch):
    from seq2seq.errors import Seq2SeqError

    monkeypatch.setattr(hf_export, "_installed", lambda module: module != "transformers")
    with pytest.raises(
        Seq2SeqError, match=r'needs transformers; install it with `pip install -e "\.\[hf\]"`'
    ):
        export_huggingface(run_dir, tmp_path / "hf")
    assert not (tmp_path / "hf").exists()


def test_the_benchmark_s_hugging_face_peer_is_ours_or_skipped_with_the_reason():
    """`python -m scripts.bench_decode --against ctranslate2` times HF generate() on the exported weights,
    gated blocks included; a model transformers cannot hold is a one-line skip there, never a crash
    after the engine's rows."""
    from scripts import against_hf

    hf, note = against_hf.hf_model(tiny_model(vocab_size=40))
    assert hf is not None and "teacher-forced logits within" in note
    hf, note = against_hf.hf_model(tiny_model(vocab_size=40, ffn="swiglu"))
    assert (
        type(hf).__name__ == "GatedPegasusForConditionalGeneration" and "teacher-forced logits within" in note
    )
    from seq2seq.models.rnn import RNN, RNNConfig

    hf, note = against_hf.hf_model(RNN(RNNConfig(vocab_size=40, d_model=16, n_layers=1)))
    assert hf is None and note == "Hugging Face peer skipped: transformers has no rnn encoder-decoder"


@pytest.mark.parametrize("post_ln", [False, True], ids=["pegasus", "marian"])
def test_a_gated_class_built_from_a_config_initialises_its_gated_blocks_as_every_other_layer(post_ln):
    """transformers' `from_config` (to train in HF) must reach the widened fc1 with the class's own
    initialisation (normal, std init_std; zero bias), not PyTorch's default for a new Linear."""
    from transformers import MarianConfig, PegasusConfig

    from seq2seq.export import modeling_gated

    config_class, model_class = (
        (MarianConfig, modeling_gated.GatedMarianMTModel)
        if post_ln
        else (PegasusConfig, modeling_gated.GatedPegasusForConditionalGeneration)
    )
    shape = dict(encoder_layers=1, decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2)
    shape |= dict(vocab_size=50, pad_token_id=0, d_model=64, encoder_ffn_dim=48, decoder_ffn_dim=48)
    config = config_class(**shape)
    torch.manual_seed(0)
    model = model_class(config)
    for layer in (model.model.encoder.layers[0], model.model.decoder.layers[0]):
        assert layer.fc1.weight.shape == (96, 64)  # gated: D -> 2F
        assert layer.fc1.weight.std().item() == pytest.approx(config.init_std, rel=0.1)
        assert not layer.fc1.bias.any()


def test_the_onnx_benchmark_refuses_a_gated_run_in_one_line(tmp_path, monkeypatch):
    """scripts.bench_onnx would hand optimum a gated folder's remote code, unchecked against ours:
    it says so before importing optimum or loading anything; a ReLU run passes the check."""
    from scripts import bench_onnx

    tokenizer = caption_tokenizer(tmp_path / "tokenizer.model")
    relu = write_run(tmp_path / "relu", lambda v: tiny_model(vocab_size=v), tokenizer)
    gated = write_run(tmp_path / "gated", lambda v: tiny_model(vocab_size=v, ffn="swiglu"), tokenizer)
    assert bench_onnx.refusal(relu) is None
    monkeypatch.setattr(sys, "argv", ["bench_onnx.py", "--run", str(gated)])
    with pytest.raises(SystemExit, match=r"^bench_onnx: \S+ has a gated \(SwiGLU\) feed-forward block; "):
        bench_onnx.main()


def test_an_exported_folder_imports_back_to_the_same_model(run_dir, exported, tmp_path):
    """`seq2seq import` of our own export, of each shape (Marian, Pegasus, gated): the same
    logits, the same pieces of any text, the same translations."""
    from seq2seq.export.marian import import_marian

    model, tokenizer = load_run(run_dir)
    again, again_tokenizer = load_run(import_marian(exported, tmp_path / "back"))
    assert again.cfg == model.cfg
    for side in ("source", "target"):
        assert again_tokenizer.encode(TEXTS, side) == tokenizer.encode(TEXTS)
    src, _ = source_ids(model, tokenizer, SENTENCES)
    batch = collate([s[:-1] for s in src], [s[:-1] for s in src], 64)
    with torch.no_grad():
        theirs, ours = again(batch.src, batch.tgt_in), model(batch.src, batch.tgt_in)
    torch.testing.assert_close(theirs, ours, atol=1e-5, rtol=0)
    options = DecodeOptions(beam=2, max_len=12)
    expected = translate(model, tokenizer, SENTENCES, options)
    back = translate(again, again_tokenizer, SENTENCES, options)
    assert back.tokens == expected.tokens
    # the imported run writes MarianTokenizer's text, which strips the ends SentencePiece keeps
    assert back.best == [text.strip() for text in expected.best]
