"""int8 decoding (`--quantize int8`): which layers become int8, how far it moves the model from fp32,
which equivalences of decoding survive it, and the CLI flag end to end.

int8 quantizes the activations with one scale per call, computed over the whole batch, so the
equivalences that are exact in fp32 hold here within a tolerance: the same tokens, scores within
0.1 nats, on these tiny models."""

import pytest
import torch
from torch import nn
from torch.ao.nn.quantized.dynamic import Linear as Int8Linear

from seq2seq.decoding.search import DecodeOptions, greedy, pad, search
from seq2seq.models.quantize import quantize
from tests.conftest import EN, tiny_model, write_multi30k, write_run
from tests.helpers import RNN_VARIANTS, rnn_variant

SOURCES = [[5, 9, 12, 3], [7, 3], [11, 4, 6, 8, 20, 3], [30, 31, 3], [8, 8, 9, 10, 11, 3], [33, 21, 3]]
MODELS = {
    "pre-ln": lambda: tiny_model(seed=0),
    "post-ln": lambda: tiny_model(seed=1, norm_first=False),
    "untied": lambda: tiny_model(seed=2, tie_embeddings=False),
    "swiglu": lambda: tiny_model(seed=3, ffn="swiglu"),
    **{f"rnn-{name}": lambda name=name: rnn_variant(name) for name in RNN_VARIANTS},
}
LOGPROB_TOLERANCE = 0.15  # nats, the largest change int8 may make to any log-probability here


def sources():
    return pad(SOURCES)


def lens(value=12):
    return torch.full((len(SOURCES),), value)


@pytest.mark.parametrize("name", MODELS)
def test_every_linear_layer_and_the_output_projection_become_int8(name):
    model = MODELS[name]()
    linears = sum(isinstance(m, nn.Linear) for m in model.modules())
    tgt = torch.randint(4, 40, (len(SOURCES), 6), generator=torch.Generator().manual_seed(0))
    before = model(sources(), tgt)
    q = quantize(model, "int8")
    int8 = [m for m in q.modules() if isinstance(m, Int8Linear)]
    assert not any(type(m) is nn.Linear for m in q.modules())
    assert len(int8) == linears + (model.generator is None)  # a tied projection gets its own layer
    assert isinstance(q.generator, Int8Linear) and q.generator.weight().shape == model.embed.weight.shape
    assert all(m.weight().dtype == torch.qint8 for m in int8)
    weight = int8[0].weight()
    assert weight.q_per_channel_scales().shape == (weight.size(0),)  # a scale per output row
    assert q.embed.weight.dtype == torch.float32  # lookups keep the fp32 matrix
    assert torch.equal(model(sources(), tgt), before)  # the fp32 model is left as it was
    assert (model.generator is None) == (name != "untied")


@pytest.mark.parametrize("name", MODELS)
def test_int8_log_probabilities_are_close_to_fp32(name):
    model = MODELS[name]()
    q = quantize(model, "int8")
    tgt = torch.randint(4, 40, (len(SOURCES), 10), generator=torch.Generator().manual_seed(1))
    tgt[:, 0] = 2
    with torch.inference_mode():
        fp32, int8 = model(sources(), tgt).log_softmax(-1), q(sources(), tgt).log_softmax(-1)
    difference = (fp32 - int8).abs()
    assert 0 < difference.max() < LOGPROB_TOLERANCE  # it did change something, and not much
    assert difference.mean() < 0.03


@pytest.mark.parametrize("seed", [0, 1, 3])
def test_int8_greedy_output_agrees_with_fp32_on_most_tokens(seed):
    model = tiny_model(seed=seed)
    fp32, int8 = greedy(model, sources(), lens()), greedy(quantize(model, "int8"), sources(), lens())
    pairs = [
        (a, b) for x, y in zip(fp32, int8, strict=True) for a, b in zip(x.tokens, y.tokens, strict=False)
    ]
    assert sum(a == b for a, b in pairs) >= 0.9 * len(pairs) > 0


def test_int8_decodes_through_search_with_beams():
    q = quantize(tiny_model(seed=4), "int8")
    results = search(q, sources(), DecodeOptions(beam=4, nbest=4, max_len=8))
    assert all(len(hyps) == 4 and all(len(h.tokens) <= 8 for h in hyps) for hyps in results)


@pytest.mark.parametrize(
    "make", [lambda v: tiny_model(vocab_size=v, seed=6), lambda v: rnn_variant("bahdanau-gru", vocab_size=v)]
)
def test_translate_and_evaluate_with_quantize_int8(make, cli, tmp_path):
    run = write_run(tmp_path / "run", make)
    fp32 = cli("translate", "--run", run, "--greedy", *EN)
    int8 = cli("translate", "--run", run, "--greedy", "--quantize", "int8", *EN)
    assert int8.code == 0 and len(int8.out.splitlines()) == len(EN), int8.err
    assert fp32.code == 0 and fp32.out != ""
    data = write_multi30k(tmp_path / "corpus", {"test_2016_flickr": 6})
    result = cli("evaluate", "--run", run, "--data-dir", data, "--quantize", "int8", "--json", "--beam", "2")
    assert result.code == 0 and '"bleu"' in result.out, result.err


def test_quantize_int8_on_auto_decodes_on_the_cpu_where_a_gpu_is_seen(cli, tmp_path, monkeypatch):
    """On a machine with a GPU, `--device auto` picks it, and int8 runs on the CPU only: asked for
    int8, auto means the CPU (on a GPU machine this refused with "add --device cpu")."""
    run = write_run(tmp_path / "run", lambda v: tiny_model(vocab_size=v, seed=6))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    result = cli("translate", "--run", run, "--greedy", "--quantize", "int8", *EN)
    assert result.code == 0 and len(result.out.splitlines()) == len(EN), result.err


@pytest.mark.parametrize(
    "args,message",
    [
        (["--quantize", "int8", "--bf16"], "int8 and bf16 do not combine"),
        (["--quantize", "int4"], "'int4' is not one of int8"),
    ],
)
@pytest.mark.parametrize("command", ["translate", "evaluate"])
def test_bad_quantize_options_are_one_line_and_exit_2(command, args, message, cli, tmp_path):
    result = cli(
        command, "--run", tmp_path / "nowhere", *args, *(["a dog"] if command == "translate" else [])
    )
    assert result.code == 2 and message in result.err and len(result.err.splitlines()) == 1
