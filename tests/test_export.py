"""Export to CTranslate2: the engine, given our weights, decodes what we decode and scores what we
score. Skips without the `ct2` extra (CI installs it)."""

import json
import shutil

import pytest
import torch

from seq2seq.data.batch import pad
from seq2seq.data.special import BOS_ID, EOS_ID, PAD_ID
from seq2seq.decoding.search import DecodeOptions, source_ids, translate
from seq2seq.export.ctranslate2 import export_ctranslate2
from seq2seq.runs.load import load_run
from tests.cli_helpers import run_cli
from tests.conftest import tiny_model, write_run

ctranslate2 = pytest.importorskip("ctranslate2")

SENTENCES = ["a dog runs", "two men sit on the red car 12", "the sun sets", "une fille joue 3"]


SHAPES = {"pre-LN": {}, "post-LN": dict(norm_first=False), "swiglu": dict(ffn="swiglu")}


@pytest.fixture(scope="module", params=SHAPES.values(), ids=SHAPES.keys())
def run_dir(request, tmp_path_factory):
    return write_run(tmp_path_factory.mktemp("export-run"), lambda v: with_biases(v, **request.param))


def with_biases(vocab_size: int, **shape) -> torch.nn.Module:
    """A tiny model whose biases are not the zeros it starts with, so a bias the export drops or
    misplaces (the gate's and the value's of a SwiGLU block, say) changes what the engine computes."""
    model = tiny_model(vocab_size=vocab_size, seed=7, **shape)
    g = torch.Generator().manual_seed(8)
    with torch.no_grad():
        for linear in (m for m in model.modules() if isinstance(m, torch.nn.Linear)):
            linear.bias.normal_(std=0.1, generator=g)
    return model


@pytest.fixture(scope="module")
def exported(run_dir, tmp_path_factory):
    return export_ctranslate2(run_dir, tmp_path_factory.mktemp("ct2") / "model")


def test_the_engine_decodes_what_we_decode(run_dir, exported):
    model, tokenizer = load_run(run_dir)
    ours = translate(model, tokenizer, SENTENCES, DecodeOptions(beam=1, max_len=12)).tokens
    engine = ctranslate2.Translator(str(exported), device="cpu")
    never = [tokenizer.id_pieces([i]) for i in (PAD_ID, BOS_ID)]  # as our search (an untrained
    pieces = [tokenizer.pieces(s) for s in SENTENCES]  # model may rank them first)
    results = engine.translate_batch(pieces, beam_size=1, max_decoding_length=12, suppress_sequences=never)
    theirs = [[tokenizer.sp.PieceToId(p) for p in r.hypotheses[0]] for r in results]
    assert theirs == ours
    assert any(len(t) > 3 for t in ours)  # real outputs, not all empty


def test_the_engine_scores_what_we_score(run_dir, exported):
    """Per-piece log-probabilities of forced targets agree to fp32 precision."""
    model, tokenizer = load_run(run_dir)
    targets = tokenizer.encode(["un chien court", "le soleil se couche 4"])
    sources = SENTENCES[:2]
    engine = ctranslate2.Translator(str(exported), device="cpu")
    results = engine.score_batch(
        [tokenizer.pieces(s) for s in sources], [tokenizer.id_pieces(t) for t in targets]
    )
    src = pad(source_ids(model, tokenizer, sources)[0])
    with torch.no_grad():
        logprobs = model(src, pad([[BOS_ID, *t] for t in targets])).log_softmax(-1)
    for i, (t, result) in enumerate(zip(targets, results, strict=True)):
        ours = logprobs[i, torch.arange(len(t) + 1), torch.tensor([*t, EOS_ID])]
        torch.testing.assert_close(torch.tensor(result.log_probs), ours, atol=1e-4, rtol=1e-4)


def test_export_from_the_command_line(run_dir, tmp_path, capsys, monkeypatch):
    out = tmp_path / "ct2"
    result = run_cli(["export", "--run", run_dir, "--to", "ctranslate2", out], capsys, monkeypatch)
    assert result.code == 0, result.err
    assert json.loads((out / "config.json").read_text())["add_source_eos"] is True
    assert out.stat().st_mode & 0o055 == 0o055 & ~_umask()  # readable by others, as mkdir makes it
    again = run_cli(["export", "--run", run_dir, out], capsys, monkeypatch)
    assert again.code == 2 and "already exists; pass --force" in again.err
    forced = run_cli(
        ["export", "--run", run_dir, "--force", "--quantization", "int8", out], capsys, monkeypatch
    )
    assert forced.code == 0, forced.err
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary left
    (tmp_path / "file").write_text("not a model")
    onto_file = run_cli(["export", "--run", run_dir, "--force", tmp_path / "file"], capsys, monkeypatch)
    assert onto_file.code == 0 and (tmp_path / "file" / "model.bin").is_file(), onto_file.err


def _umask() -> int:
    import os

    mask = os.umask(0)
    os.umask(mask)
    return mask


@pytest.mark.parametrize(
    "args,message",
    [
        (["--run", "{missing}"], "does not exist"),
        (["--to", "onnx"], "'onnx' is not one of ctranslate2"),
        (["--quantization", "int3"], "unknown quantization 'int3'"),
    ],
)
def test_bad_exports_write_nothing(run_dir, tmp_path, capsys, monkeypatch, args, message):
    args = [a.format(missing=tmp_path / "nothing") for a in args]
    out = tmp_path / "ct2"
    result = run_cli(["export", "--run", run_dir, *args, out], capsys, monkeypatch)
    assert result.code == 2 and message in result.err, result.err
    assert len(result.err.strip().splitlines()) == 1 and list(tmp_path.iterdir()) == []


def test_an_rnn_run_is_not_supported(tmp_path, capsys, monkeypatch):
    from seq2seq.models.rnn import RNN, RNNConfig

    run = write_run(tmp_path / "rnn", lambda v: RNN(RNNConfig(vocab_size=v, d_model=16, n_layers=1)))
    result = run_cli(["export", "--run", run, tmp_path / "out"], capsys, monkeypatch)
    assert result.code == 2 and "supports Transformers only" in result.err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("to", ["ctranslate2", "huggingface"])
@pytest.mark.parametrize(
    "run,out",
    [
        ("v", "v"),  # the output is the run: `export --run v v --force`
        ("p/run", "p"),  # replacing p would delete the run inside it
        ("p/run", "p/run/model"),  # the export would land inside the run
        ("p/run", "p/../p/run"),  # another spelling of the run
        ("p/run", "link"),  # a symbolic link to the run
        ("p/run", "p/run/away"),  # a link inside the run to a folder outside: replaced, it lands inside
    ],
)
def test_an_export_never_replaces_or_enters_its_run(run_dir, tmp_path, capsys, monkeypatch, to, run, out):
    if to == "huggingface":
        pytest.importorskip("transformers")
    monkeypatch.chdir(tmp_path)  # relative paths, as a user types them
    shutil.copytree(run_dir, run)
    (tmp_path / "link").symlink_to(tmp_path / run)
    (tmp_path / run / "away").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    before = _tree(tmp_path / run)
    result = run_cli(["export", "--run", run, "--to", to, "--force", out], capsys, monkeypatch)
    assert result.code == 2 and "is, holds or lies inside the run" in result.err, result.err
    assert len(result.err.strip().splitlines()) == 1
    assert _tree(tmp_path / run) == before  # every file of the run still there, unchanged


def _tree(folder) -> dict:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
