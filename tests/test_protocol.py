"""The protocol's specification: what every registered architecture (and its variants, and their
int8 forms) must satisfy for search, scoring, training and the attention views to work without
asking which one they hold. A new architecture gets all of this from its line in the registry.

int8 quantizes activations with one scale per call over the whole batch, so there the equivalences
that are exact in fp32 hold within a tolerance (same tokens, scores within 0.1 nats), and only
those that keep the batch as it is (greedy search, not beams; not batched == alone). The packed
forms (fp32 on oneDNN's packed GEMMs, what the CLI decodes with where it is faster) must satisfy
all of it, within fp32 rounding.
"""

from dataclasses import asdict, fields

import pytest
import torch
import torch.nn.functional as F

from seq2seq.data.batch import Batch, pad
from seq2seq.data.special import PAD_ID
from seq2seq.decoding.search import DecodeOptions, beam_search, greedy
from seq2seq.models.protocol import AttentionRecord, Seq2SeqModel
from seq2seq.models.registry import ARCHITECTURES, build_model, config_from_dict, preset_config
from seq2seq.runs import files as ckpt
from seq2seq.runs.load import load_run
from seq2seq.training.config import TrainConfig
from seq2seq.training.step import summed_loss
from tests.conftest import caption_tokenizer
from tests.helpers import SMALL, SOURCES, VARIANTS, lens, make, sources, tokens_and_scores

INT8 = ["transformer-int8", "rnn-int8"]
PACKED = [f"{name}-packed" for name in VARIANTS]


def with_beams(*beams: int) -> list[tuple[str, int]]:
    """(variant, beam) pairs: every beam for fp32; greedy alone for int8, whose per-call scales make
    a beam's changing batch decode differently."""
    return [(name, beam) for name in [*VARIANTS, *PACKED] for beam in beams] + [(name, 1) for name in INT8]


def tolerance(name: str) -> float:
    return 0.1 if name.endswith("-int8") else 1e-5


def targets(seed: int, T: int = 7):
    return torch.randint(4, 40, (len(SOURCES), T), generator=torch.Generator().manual_seed(seed))


@pytest.fixture(params=[*VARIANTS, *INT8, *PACKED])
def name(request):
    return request.param


def test_every_registered_architecture_is_a_seq2seq_model_and_is_tested():
    assert set(VARIANTS) >= set(ARCHITECTURES)
    for arch in ARCHITECTURES:
        model = make(arch)
        assert isinstance(model, Seq2SeqModel) and model.cfg.arch == arch
        assert config_from_dict(asdict(model.cfg)) == model.cfg  # config.json round-trips
        settable = {f.name for f in fields(model.cfg) if f.init}
        assert set(ARCHITECTURES[arch].options.values()) <= settable  # what `train --heads` etc. set


@pytest.mark.parametrize("variant", VARIANTS)
def test_set_dropout_reaches_every_dropout_of_the_model(variant):
    """What late dropout relies on: at rate 0 a training-mode pass is the evaluation pass, which
    it is not while any dropout (attention weights, residuals, between recurrent layers) is left."""
    arch, options = VARIANTS[variant]
    torch.manual_seed(0)
    model = build_model(preset_config(arch, "small", **(SMALL | dict(dropout=0.5)), **options))
    src, tgt = sources(), targets(2)
    with torch.no_grad():
        plain = model.eval()(src, tgt)
        assert not torch.allclose(model.train()(src, tgt), plain)
        model.set_dropout(0.0)
        torch.testing.assert_close(model(src, tgt), plain)
        model.set_dropout(0.5)
        assert not torch.allclose(model(src, tgt), plain)


@pytest.mark.parametrize("use_cache", [True, False])
def test_steps_reproduce_the_teacher_forced_pass(name, use_cache):
    model, src, tgt = make(name), sources(), targets(1)
    with torch.inference_mode():
        full = model(src, tgt)
        cache = model.init_cache(*model.encode(src), tgt.size(1), use_cache)
        steps = torch.stack([model.decode_step(tgt[:, t], cache) for t in range(tgt.size(1))], 1)
    torch.testing.assert_close(steps, full, atol=tolerance(name), rtol=tolerance(name))


@pytest.mark.parametrize("use_cache", [True, False])
def test_positions_at_once_are_steps_one_by_one(name, use_cache):
    """What a forced prefix fills the cache with: `decode_steps` over P positions gives each
    position's logits as P `decode_step`s would, from an empty cache and after steps, and leaves
    the cache where the steps leave it (the next step agrees)."""
    model, src, tgt = make(name), sources(), targets(3)
    with torch.inference_mode():
        memory, src_mask = model.encode(src)
        one, many = (model.init_cache(memory, src_mask, tgt.size(1), use_cache) for _ in range(2))
        by_step = torch.stack([model.decode_step(tgt[:, t], one) for t in range(tgt.size(1))], 1)
        at_once = torch.cat([model.decode_steps(tgt[:, :4], many), model.decode_steps(tgt[:, 4:6], many)], 1)
        last = model.decode_step(tgt[:, 6], many)
    torch.testing.assert_close(at_once, by_step[:, :6], atol=tolerance(name), rtol=tolerance(name))
    torch.testing.assert_close(last, by_step[:, 6], atol=tolerance(name), rtol=tolerance(name))


def test_kept_positions_are_the_full_passes_rows(name):
    """What training asks for: the logits of the real target positions alone, and their loss."""
    model, src, tgt = make(name), sources(), targets(4)
    keep = torch.arange(tgt.size(1)) < torch.tensor([7, 2, 5, 1])[:, None]  # (B, T) ragged rows
    with torch.inference_mode():
        full, kept = model(src, tgt), model(src, tgt, keep)
    assert kept.shape == (int(keep.sum()), full.size(-1))
    torch.testing.assert_close(kept, full[keep], atol=tolerance(name), rtol=tolerance(name))
    tgt_out = tgt.masked_fill(~keep, PAD_ID)
    with torch.inference_mode():
        ours = summed_loss(model, Batch(src, tgt, tgt_out, int(keep.sum())), label_smoothing=0.1)
        plain = F.cross_entropy(
            full.flatten(0, 1), tgt_out.flatten(), ignore_index=PAD_ID, label_smoothing=0.1, reduction="sum"
        )
    torch.testing.assert_close(ours, plain, atol=tolerance(name) * 100, rtol=tolerance(name))


def test_later_target_tokens_never_change_earlier_logits(name):
    model, src, tgt = make(name), sources(), targets(2)
    changed = tgt.clone()
    changed[:, 4:] = targets(3)[:, 4:]
    with torch.inference_mode():
        a, b = model(src, tgt), model(src, changed)
    torch.testing.assert_close(a[:, :4], b[:, :4], atol=tolerance(name), rtol=tolerance(name))


@pytest.mark.parametrize("name,beam", with_beams(1, 4))
def test_cached_search_equals_uncached(name, beam):
    model = make(name, seed=2)
    cached = beam_search(model, sources(), lens(), DecodeOptions(beam=beam, nbest=beam, use_cache=True))
    uncached = beam_search(model, sources(), lens(), DecodeOptions(beam=beam, nbest=beam, use_cache=False))
    (a, a_scores), (b, b_scores) = tokens_and_scores(cached), tokens_and_scores(uncached)
    assert a == b
    assert a_scores == pytest.approx(b_scores, abs=max(tolerance(name), 1e-4))


@pytest.mark.parametrize("alpha", [0.0, 1.0])
def test_beam_one_equals_greedy(name, alpha):
    model = make(name, seed=3)
    g = greedy(model, sources(), lens(), DecodeOptions(beam=1, length_penalty=alpha))
    b = beam_search(model, sources(), lens(), DecodeOptions(beam=1, length_penalty=alpha))
    assert [h.tokens for h in g] == [x[0].tokens for x in b]
    assert [h.score for h in g] == pytest.approx([x[0].score for x in b])


@pytest.mark.parametrize("name,beam", [(name, beam) for name in [*VARIANTS, *PACKED] for beam in (1, 3)])
def test_a_batch_equals_each_sentence_alone(name, beam):
    """fp32 only: int8's activation scale is computed over the whole batch, so a sentence's int8
    output may depend on its batch (the RNN's does, here)."""
    model = make(name, seed=4)
    batched = beam_search(model, sources(), lens(), DecodeOptions(beam=beam, nbest=beam))
    for i, ids in enumerate(SOURCES):
        alone = beam_search(model, pad([ids]), lens()[:1], DecodeOptions(beam=beam, nbest=beam))[0]
        assert [h.tokens for h in alone] == [h.tokens for h in batched[i]]
        assert [h.score for h in alone] == pytest.approx([h.score for h in batched[i]], abs=tolerance(name))


@pytest.mark.parametrize("beam_idx", [[0, 0, 2, 3, 5, 5], [1, 2, 0, 5, 3, 4]], ids=["forks", "shuffle"])
def test_a_reorder_makes_each_row_continue_its_parent(name, beam_idx):
    """After `reorder(beam_idx)`, row i steps as if it had decoded row beam_idx[i]'s tokens all
    along: once where only forked rows move (copied in place from parents that stay), once where
    every row moves."""
    model, src, beam_idx = make(name, seed=9), sources()[:2], torch.tensor(beam_idx)
    rows = torch.tensor([0, 0, 0, 1, 1, 1])  # two sentences, three beams each
    past = torch.randint(4, 40, (3, 6), generator=torch.Generator().manual_seed(9))  # 3 steps x 6 rows
    with torch.inference_mode():
        reordered, replayed = (model.init_cache(*model.encode(src), 5) for _ in range(2))
        for cache in (reordered, replayed):
            cache.select(rows, beams=3)
        for tokens in past:
            model.decode_step(tokens, reordered)
        reordered.reorder(beam_idx)
        for tokens in past[:, beam_idx]:
            model.decode_step(tokens, replayed)
        nxt = torch.arange(10, 16)
        torch.testing.assert_close(
            model.decode_step(nxt, reordered),
            model.decode_step(nxt, replayed),
            atol=tolerance(name),
            rtol=tolerance(name),
        )


def test_extra_source_padding_changes_nothing(name):
    model, tgt = make(name, seed=5), targets(4)
    wider = torch.nn.functional.pad(sources(), (0, 3))
    with torch.inference_mode():
        torch.testing.assert_close(
            model(wider, tgt), model(sources(), tgt), atol=tolerance(name), rtol=tolerance(name)
        )


@pytest.mark.parametrize("name", list(VARIANTS))
def test_attention_rows_are_distributions_that_ignore_padding_and_the_future(name):
    model, src, tgt = make(name, seed=6), sources(), targets(5, T=5)
    with torch.inference_mode():
        weights = model.attention(src, tgt)
    assert "cross" in weights and set(weights) <= {"encoder", "decoder", "cross"}
    padding = src == 0
    for kind, w in weights.items():  # (B, L, H, rows, cols)
        assert w.dim() == 5 and w.size(0) == len(SOURCES)
        torch.testing.assert_close(w.sum(-1), torch.ones(w.shape[:-1]))
        if kind in ("cross", "encoder"):
            assert (w.transpose(1, -1)[padding] == 0).all()  # padded source columns get nothing
        if kind == "decoder":
            assert (w.triu(1) == 0).all()  # a position never looks ahead


@pytest.mark.parametrize("name", list(VARIANTS))
def test_teacher_forced_weights_are_those_the_cached_steps_used(name):
    model, src, tgt = make(name, seed=7), sources(), targets(6, T=5)
    with torch.inference_mode():
        weights = model.attention(src, tgt)
        cache = model.init_cache(*model.encode(src), tgt.size(1))
        for t in range(tgt.size(1)):
            step = AttentionRecord()
            model.decode_step(tgt[:, t], cache, step)
            for kind in ("cross", "decoder"):
                if getattr(step, kind):  # each layer's (B, H, 1, cols): this step's query row
                    recorded = torch.stack(getattr(step, kind), dim=1)[:, :, :, 0]
                    torch.testing.assert_close(recorded, weights[kind][:, :, :, t, : recorded.size(-1)])


@pytest.mark.parametrize("name", list(VARIANTS))
def test_a_training_pass_records_the_cross_attention_with_its_gradient(name):
    """What guided alignment trains on: the weights `forward` records are the ones `attention`
    returns, and a loss on them reaches the parameters."""
    model, src, tgt = make(name, seed=3), sources(), targets(2, T=5)
    record = AttentionRecord()
    model.train()
    model.set_dropout(0.0)  # the same pass as the eval one, so the weights can be compared
    logits = model(src, tgt, None, record)
    with torch.inference_mode():
        expected = model.eval().attention(src, tgt)["cross"]
    torch.testing.assert_close(torch.stack(record.cross, dim=1).detach(), expected)
    pull = torch.rand(record.cross[-1][:, 0].shape, generator=torch.Generator().manual_seed(0))
    (record.cross[-1][:, 0] * pull).sum().backward()  # rows sum to 1: a plain sum has no gradient
    assert logits.shape[:2] == tgt.shape
    assert all(p.grad is None or p.grad.isfinite().all() for p in model.parameters())
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in model.parameters())


@pytest.mark.parametrize("name", list(VARIANTS))
def test_runs_under_bf16_autocast(name):
    model = make(name)
    with torch.inference_mode(), torch.autocast("cpu", torch.bfloat16):
        assert model(sources(), targets(7, T=3)).float().isfinite().all()


@pytest.mark.parametrize("name", list(VARIANTS))
def test_a_run_directory_round_trips_the_model(name, tmp_path):
    tokenizer = caption_tokenizer(tmp_path / ckpt.TOKENIZER)
    arch, options = VARIANTS[name]
    torch.manual_seed(0)
    sizes = {"vocab_size": tokenizer.vocab_size}
    if "source_vocab_size" in options:  # the source reads every id of the tokenizer, the target fewer
        sizes = {"vocab_size": tokenizer.vocab_size - 8, "source_vocab_size": tokenizer.vocab_size}
    cfg = preset_config(arch, "tiny", **SMALL | options | sizes)
    model = build_model(cfg).eval()
    ckpt.save_config(tmp_path, ckpt.config_sections(cfg, TrainConfig(), tokenizer))
    ckpt.save_weights(model, tmp_path / ckpt.BEST)
    loaded, _ = load_run(tmp_path)
    assert loaded.cfg == cfg
    src, tgt = sources(), targets(8)
    with torch.inference_mode():
        assert torch.equal(loaded(src, tgt), model(src, tgt))
