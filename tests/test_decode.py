import itertools
from types import SimpleNamespace

import pytest
import torch

from seq2seq.data.batch import pad
from seq2seq.data.special import EOS_ID
from seq2seq.decoding.beams import best_continuations, block_size, parent_slots
from seq2seq.decoding.penalty import penalty
from seq2seq.decoding.search import DecodeOptions, beam_search, max_lengths, search, translate
from seq2seq.errors import Seq2SeqError
from tests.conftest import EN, caption_tokenizer, tiny_model

SOURCES = [[5, 9, 12, 3], [7, 3], [11, 4, 6, 8, 20, 3], [30, 31, 3]]


def sources():
    return pad(SOURCES)


def lens(n, value=12):
    return torch.full((n,), value)


@pytest.mark.parametrize("beam", [1, 4])
def test_translate_in_batches_equals_one_line_at_a_time(beam, tmp_path):
    tokenizer = caption_tokenizer(tmp_path / "tokenizer.model")
    model = tiny_model(vocab_size=tokenizer.vocab_size, seed=4)
    lines = [*EN, "", "two men sit on the red car 12 and the sun sets"]
    options = DecodeOptions(beam=beam, nbest=beam, batch_size=3)
    together = translate(model, tokenizer, lines, options)
    for i, line in enumerate(lines):
        alone = translate(model, tokenizer, [line], options).nbest[0]
        assert [t for t, _ in alone] == [t for t, _ in together.nbest[i]]
        assert [s for _, s in alone] == pytest.approx([s for _, s in together.nbest[i]], abs=1e-5)
    assert len(set(together.best)) > len(lines) // 2  # varied output: the comparison means something


def test_the_self_attention_cache_is_kept_in_the_compute_dtype():
    model = tiny_model()
    for autocast, dtype in ((True, torch.bfloat16), (False, torch.float32)):
        with torch.autocast("cpu", torch.bfloat16, enabled=autocast):
            cache = model.init_cache(*model.encode(sources()), max_len=8)
        assert cache.self_kv.dtype == dtype


@pytest.mark.parametrize("asked", [True, False])
def test_decoding_precision_follows_one_rule_on_every_device(asked, monkeypatch):
    """bf16 exactly when asked for and native (pretended here), whatever the device type."""
    import seq2seq.decoding.search as decode
    import seq2seq.device

    monkeypatch.setattr(seq2seq.device, "use_bf16", lambda device, wanted: wanted)
    model, dtypes = tiny_model(), []
    init_cache = model.init_cache

    def recorded(*args, **kwargs):
        cache = init_cache(*args, **kwargs)
        dtypes.append(cache.self_kv.dtype)
        return cache

    model.init_cache = recorded
    tokenizer = SimpleNamespace(encode=lambda lines: [[5, 6]] * len(lines), decode=lambda i: ["x"] * len(i))
    decode.translate(model, tokenizer, ["a"], DecodeOptions(beam=1, max_len=3, bf16=asked))
    assert dtypes == [torch.bfloat16 if asked else torch.float32]


class CountingLinear(torch.nn.Module):
    """Wraps a projection and counts the rows (sentences x beams) it projects."""

    def __init__(self, inner):
        super().__init__()
        self.inner, self.calls, self.rows = inner, 0, 0

    def forward(self, x):
        self.calls += 1
        self.rows += x.size(0)
        return self.inner(x)


@pytest.mark.parametrize("beam,max_len", [(1, 5), (1, 20), (4, 5), (4, 20)])
def test_cross_attention_kv_projected_once_per_layer(beam, max_len):
    model = tiny_model(seed=6)
    counters = []
    for layer in model.decoder:
        layer.cross_attn.kv = CountingLinear(layer.cross_attn.kv)
        counters.append(layer.cross_attn.kv)
    search(model, sources(), DecodeOptions(beam=beam, nbest=1, min_len=max_len, max_len=max_len))
    # one call per layer, over the 4 sentences only: beams share the projected K/V
    assert [(c.calls, c.rows) for c in counters] == [(1, 4)] * len(model.decoder)


def test_uncached_path_reprojects_every_step():
    model = tiny_model(seed=6)
    layer = model.decoder[0].cross_attn
    layer.kv = CountingLinear(layer.kv)
    search(model, sources(), DecodeOptions(beam=1, min_len=8, max_len=8, use_cache=False))
    assert layer.kv.calls == 9  # 8 tokens + EOS


def sequence_score(model, src, tokens, alpha):
    """Exact log-probability of src -> tokens + EOS by teacher forcing, length-normalised."""
    tgt = torch.tensor([[2, *tokens]])
    out = torch.tensor([[*tokens, EOS_ID]])
    with torch.no_grad():
        logprobs = model(src, tgt).log_softmax(-1)
    return logprobs.gather(-1, out[..., None]).sum().item() / penalty(len(tokens) + 1, alpha)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("alpha", [0.0, 1.0])
def test_beam_search_finds_exhaustive_optimum(seed, alpha):
    """With vocabulary {unk, a, b, c} + EOS and at most 3 tokens, a wide enough beam is exact."""
    model = tiny_model(vocab_size=7, seed=seed)
    src = torch.tensor([[4, 5, 6, 3]])
    words = [1, 4, 5, 6]
    candidates = [list(seq) for n in range(4) for seq in itertools.product(words, repeat=n)]
    scores = {tuple(c): sequence_score(model, src, c, alpha) for c in candidates}
    best = max(scores, key=scores.get)
    found = beam_search(
        model, src, torch.tensor([3]), DecodeOptions(beam=len(candidates), length_penalty=alpha, nbest=5)
    )[0]
    assert found[0].tokens == list(best)
    assert found[0].score == pytest.approx(scores[best], abs=1e-4)
    top5 = sorted(scores.values(), reverse=True)[:5]
    assert [h.score for h in found] == pytest.approx(top5, abs=1e-4)


def test_nbest_sorted_and_distinct():
    model = tiny_model(seed=7)
    results = beam_search(model, sources(), lens(4), DecodeOptions(beam=5, nbest=5))
    for hyps in results:
        scores = [h.score for h in hyps]
        assert scores == sorted(scores, reverse=True)
        assert len({tuple(h.tokens) for h in hyps}) == len(hyps) == 5


@pytest.mark.parametrize("beam", [1, 3])
@pytest.mark.parametrize("min_len,max_len", [(0, 3), (6, 6), (4, 9)])
def test_length_limits_are_respected(beam, min_len, max_len):
    model = tiny_model(seed=8)
    options = DecodeOptions(beam=beam, nbest=beam, min_len=min_len, max_len=max_len)
    for hyps in search(model, sources(), options):
        for h in hyps:
            assert min_len <= len(h.tokens) <= max_len
            assert EOS_ID not in h.tokens and 0 not in h.tokens and 2 not in h.tokens


def test_default_max_len_follows_source_length():
    options = DecodeOptions(max_len_a=1.0, max_len_b=2)
    assert max_lengths(sources(), options, limit=63).tolist() == [6, 4, 8, 5]
    options.min_len = 7  # a minimum length the user asked for wins over the default maximum
    assert max_lengths(sources(), options, limit=63).tolist() == [7, 7, 8, 7]
    assert max_lengths(sources(), options, limit=6).tolist() == [6, 6, 6, 6]


@pytest.mark.parametrize(
    "kwargs,message",
    [
        (dict(beam=0), "beam: must be at least 1"),
        (dict(beam=2, nbest=3), "nbest, beam: must be between 1 and the beam size 2"),
        (dict(min_len=-1), "min_len: must be at least 0"),
        (dict(max_len=0), "max_len: must be at least 1"),
        (dict(min_len=5, max_len=4), "min_len, max_len: 5 pieces at least is above 4 at most"),
        (dict(batch_size=0), "batch_size: must be at least 1"),
        (dict(sample=True, beam=2), "sample, beam: sampling draws one piece at a time"),
    ],
)
def test_bad_options_are_rejected(kwargs, message):
    with pytest.raises(Seq2SeqError, match=message):
        DecodeOptions(**kwargs).check()


def test_lengths_beyond_any_tensor_are_capped_at_the_models_limit():
    """A --max-len or --min-len above int64 is the model's limit, not an OverflowError."""
    huge = 10**20
    assert max_lengths(sources(), DecodeOptions(max_len=huge), limit=63).tolist() == [63] * 4
    assert max_lengths(sources(), DecodeOptions(min_len=huge, max_len=huge), limit=63).tolist() == [63] * 4


def test_parent_slots_keep_each_parents_first_child_in_its_row():
    """Every row gets one hypothesis; a row whose parent has children keeps one of them (nothing
    to copy), and the rest take childless rows, copying from a row that stays itself."""
    parent = torch.tensor([[0, 1, 2, 3, 4], [2, 2, 0, 2, 4], [3, 3, 3, 3, 3], [4, 0, 1, 2, 3]])
    slots = parent_slots(parent)
    assert (slots.sort(1).values == torch.arange(5)).all()  # a permutation of each sentence's 5
    arranged = parent.gather(1, slots)  # (n, K): the parent of the hypothesis each row now holds
    for row_parents, parents in zip(arranged.tolist(), parent.tolist(), strict=True):
        kept = [r for r, p in enumerate(row_parents) if p == r]
        assert len(kept) == len(set(parents))  # one row per distinct parent needs no copy
        assert all(row_parents[p] == p for p in row_parents)  # every donor keeps its own row
    assert arranged[0].tolist() == [0, 1, 2, 3, 4] and arranged[2].tolist() == [3, 3, 3, 3, 3]


@pytest.mark.parametrize(
    ("n", "k", "V", "block"),
    [(3, 5, 8000, 160), (2, 1, 8000, 160), (3, 5, 8009, 1), (4, 5, 32, 2), (2, 1, 7, 1)],
)
def test_best_continuations_equal_a_top_k_over_every_candidate(n, k, V, block):
    """The blocked search returns what a top-k over all k x V candidates returns, whatever the
    vocabulary: a multiple of the block, a prime (one column a block), or smaller than the width;
    rows forbidden tokens (-inf), as constrain makes them, included."""
    generator = torch.Generator().manual_seed(V + k)
    scores = torch.randn(n, k, generator=generator) * 4
    logprobs = (torch.randn(n * k, V, generator=generator) * 3).log_softmax(-1)
    logprobs[:, :2] = float("-inf")
    width = 10
    top, parent, token = best_continuations(scores, logprobs, width)
    everything = (scores[:, :, None] + logprobs.view(n, k, V)).view(n, k * V)
    expected = everything.topk(min(width, k * V), dim=1).values
    assert torch.equal(top[:, : expected.size(1)], expected)
    assert ((token >= 0) & (token < V)).all() and ((parent >= 0) & (parent < k)).all()
    finite = top.isfinite()  # each finite candidate is the extension it names
    named = scores.gather(1, parent) + logprobs.view(n, k, V)[torch.arange(n)[:, None], parent, token]
    assert torch.equal(named[finite], top[finite])
    assert block_size(max(V, width), width) == block  # blocks where V has a divisor that fits
