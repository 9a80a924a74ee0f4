"""Packed GEMMs: the decode path the CLI uses where they are faster gives the plain eager path's
translations token for token, and bf16 decoding is untouched by it."""

import os
import subprocess
import sys

import pytest
import torch
from torch import nn

from seq2seq.data.batch import pad
from seq2seq.decoding.search import DecodeOptions, beam_search, translate
from seq2seq.models import packed as packed_module
from seq2seq.models.packed import PackedLinear, pack, packing_available, packing_speedup
from seq2seq.runs.load import load_run
from tests.conftest import EN, tiny_model, write_run
from tests.serve_helpers import tiny_rnn

pytestmark = pytest.mark.skipif(not packing_available(tiny_model()), reason="no oneDNN linear here")
MODELS = {
    "transformer": lambda: tiny_model(vocab_size=40, seed=1),
    "swiglu": lambda: tiny_model(vocab_size=40, seed=1, ffn="swiglu"),
    "rnn": lambda: tiny_rnn(40, seed=1),
}
SOURCES = [[5, 9, 12, 3], [7, 3], [11, 4, 6, 8, 20, 3], [30, 31, 3], [8, 8, 8, 8, 8, 8, 8, 3]]


@pytest.mark.parametrize("arch", MODELS)
def test_pack_replaces_every_linear_layer_of_a_copy(arch):
    model = MODELS[arch]()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    packed = pack(model)
    assert not any(type(m) is nn.Linear for m in packed.modules())
    assert isinstance(packed.generator, PackedLinear)  # the tied output projection too
    assert model.generator is None and all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert not {p.data_ptr() for p in model.parameters()} & {q.data_ptr() for q in packed.parameters()}


def test_a_linear_layer_followed_by_a_relu_becomes_one_packed_call():
    """The feed-forward block's first layer applies the ReLU inside oneDNN's call: one operator
    fewer per block and step, and the same values."""
    model = MODELS["transformer"]().eval()
    packed = pack(model)
    assert all(block.ff[0].relu and isinstance(block.ff[1], nn.Identity) for block in packed.decoder)
    assert not any(isinstance(m, nn.ReLU) for m in packed.modules())
    x = torch.randn(3, 5, model.cfg.d_model, generator=torch.Generator().manual_seed(2))
    with torch.inference_mode():
        torch.testing.assert_close(packed.encoder[0].ff(x), model.encoder[0].ff(x), atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("arch", MODELS)
@pytest.mark.parametrize("beam", [1, 4])
def test_packed_search_gives_the_plain_search_token_for_token(arch, beam):
    model = MODELS[arch]()
    lens = torch.full((len(SOURCES),), 12)
    plain = beam_search(model, pad(SOURCES), lens, DecodeOptions(beam=beam, nbest=beam))
    fast = beam_search(pack(model), pad(SOURCES), lens, DecodeOptions(beam=beam, nbest=beam))
    assert [[h.tokens for h in hyps] for hyps in fast] == [[h.tokens for h in hyps] for hyps in plain]
    scores = [h.score for hyps in plain for h in hyps]
    assert [h.score for hyps in fast for h in hyps] == pytest.approx(scores, abs=1e-4)


@pytest.mark.parametrize("arch", MODELS)
def test_packed_logits_are_the_plain_logits_within_fp32_rounding(arch):
    model = MODELS[arch]()
    src, tgt = (
        pad(SOURCES),
        torch.randint(4, 40, (len(SOURCES), 6), generator=torch.Generator().manual_seed(0)),
    )
    with torch.inference_mode():
        torch.testing.assert_close(pack(model)(src, tgt), model(src, tgt), atol=1e-5, rtol=1e-5)


def test_under_bf16_autocast_packed_layers_compute_exactly_what_plain_ones_do():
    model = tiny_model(vocab_size=40, seed=2)
    src, tgt = (
        pad(SOURCES),
        torch.randint(4, 40, (len(SOURCES), 6), generator=torch.Generator().manual_seed(1)),
    )
    with torch.inference_mode(), torch.autocast("cpu", torch.bfloat16):
        assert torch.equal(pack(model)(src, tgt), model(src, tgt))


@pytest.mark.parametrize("pays", [True, False])
def test_load_run_packs_only_where_it_pays_and_never_an_int8_model(tmp_path, monkeypatch, pays):
    run = tmp_path / "run"
    write_run(run, lambda v: tiny_model(vocab_size=v, seed=3))
    monkeypatch.setattr(packed_module, "packing_pays", lambda: pays)
    model, tokenizer = load_run(run, packed=True)
    assert isinstance(model.generator, PackedLinear) == pays
    plain, _ = load_run(run)
    options = DecodeOptions(beam=3)
    assert translate(model, tokenizer, EN, options).best == translate(plain, tokenizer, EN, options).best
    int8, _ = load_run(run, quantize="int8", packed=True)
    assert not any(isinstance(m, PackedLinear) for m in int8.modules())


def test_the_speedup_is_measured():
    assert packing_speedup(rows=8, d_model=16, vocab=64) > 0


CACHE_PROBE = """
import os
import torch
from seq2seq.models.packed import CACHE_CAPACITY, CACHE_VARIABLES, PackedLinear
layer = PackedLinear(torch.randn(8, 4), None)
with torch.inference_mode():
    for rows in [*range(1, CACHE_CAPACITY + 2), 1]:  # one shape more than the cache holds, then the first
        layer(torch.randn(rows, 4))
print(*(os.environ[name] for name in CACHE_VARIABLES))
"""


@pytest.mark.parametrize("asked, evicted", [(None, True), ("1024", False)])
def test_the_primitive_caches_are_bounded_unless_the_user_sized_them(asked, evicted):
    """In a fresh process (the caches read their capacity once): after more shapes than the bound,
    the first shape is compiled again, a miss of oneDNN's cache; sized by the user, a hit. Both
    capacities are set, ideep's too (its effect is on memory, measured in docs/serving.md)."""
    env = {k: v for k, v in os.environ.items() if k not in packed_module.CACHE_VARIABLES}
    env |= {"ONEDNN_VERBOSE": "all", "OMP_NUM_THREADS": "1"}
    env |= {name: asked for name in packed_module.CACHE_VARIABLES} if asked else {}
    done = subprocess.run(
        [sys.executable, "-c", CACHE_PROBE], env=env, capture_output=True, text=True, check=True
    )
    lines = done.stdout.splitlines()
    assert lines[-1] == " ".join([asked or str(packed_module.CACHE_CAPACITY)] * 2)
    creations = [line for line in lines if ",primitive,create:" in line and "inner_product" in line]
    assert len(creations) == packed_module.CACHE_CAPACITY + 2
    assert ("create:cache_miss" in creations[-1]) == evicted
