"""Attention maps: distributions, masks, batching, agreement with cached decoding, and the views."""

import pytest
import torch

from seq2seq.data.batch import pad
from seq2seq.data.special import BOS_ID, EOS_ID
from seq2seq.decoding.attention import attention, attention_batch
from seq2seq.decoding.search import DecodeOptions, greedy, source_ids
from seq2seq.errors import Seq2SeqError
from seq2seq.models.protocol import AttentionRecord
from seq2seq.views.heatmap import heatmap_lines
from tests.conftest import caption_tokenizer, tiny_model, write_run

SENTENCES = ["a dog runs", "two men sit on the red car 12", "the sun"]
OPTIONS = DecodeOptions(beam=1, max_len=7)


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    return caption_tokenizer(tmp_path_factory.mktemp("tok") / "tokenizer.model")


@pytest.fixture(scope="module")
def model(tokenizer):
    return tiny_model(vocab_size=tokenizer.vocab_size, seed=5)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, tokenizer, model):
    """A run directory holding the tiny model, as `seq2seq train` would leave it."""
    return write_run(tmp_path_factory.mktemp("attention-run"), lambda v: model, tokenizer)


def test_every_row_is_a_distribution_and_the_future_gets_exactly_zero(model, tokenizer):
    for m in attention_batch(model, tokenizer, SENTENCES, options=OPTIONS):
        assert set(m.weights) == {"encoder", "decoder", "cross"}
        for kind, w in m.weights.items():
            rows, cols = m.labels(kind)
            assert w.shape == (2, 4, len(rows), len(cols))
            torch.testing.assert_close(w.sum(-1), torch.ones(w.shape[:-1]))
        decoder = m.weights["decoder"]
        assert (decoder.triu(1) == 0).all()  # a position never looks ahead
        seen = torch.ones(decoder.shape[-2:], dtype=torch.bool).tril()
        assert (decoder[..., seen] > 0).all()  # and sees everything before it


def test_source_padding_gets_exactly_zero(model):
    src = torch.tensor([[5, 9, 12, EOS_ID], [7, EOS_ID, 0, 0]])
    tgt_in = torch.tensor([[BOS_ID, 6, 8], [BOS_ID, 4, 0]])
    weights = model.attention(src, tgt_in)
    assert weights["cross"].shape == (2, 2, 4, 3, 4)  # (B, L, H, T, S)
    assert (weights["cross"][1, ..., 2:] == 0).all()
    assert (weights["encoder"][1, ..., 2:] == 0).all()
    assert (weights["cross"][0] > 0).all()


def test_a_batch_gives_the_maps_of_each_sentence_alone(model, tokenizer):
    batch = attention_batch(model, tokenizer, SENTENCES, options=OPTIONS)
    assert len({len(m.source) for m in batch}) > 1  # the batch is padded
    for sentence, m in zip(SENTENCES, batch, strict=True):
        alone = attention(model, tokenizer, sentence, options=OPTIONS)
        assert (alone.source, alone.target, alone.translation) == (m.source, m.target, m.translation)
        for kind in m.weights:
            torch.testing.assert_close(alone.weights[kind], m.weights[kind], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("sentence", SENTENCES)
def test_teacher_forced_maps_equal_what_cached_decoding_used(model, tokenizer, sentence):
    maps = attention(model, tokenizer, sentence, options=OPTIONS)
    src = pad(source_ids(model, tokenizer, [sentence])[0])
    output = greedy(model, src, torch.tensor([7]))[0].tokens
    assert maps.target == tokenizer.id_pieces([*output, EOS_ID])
    with torch.inference_mode():
        memory, src_mask = model.encode(src)
        cache = model.init_cache(memory, src_mask, len(output) + 1)
        for t, token in enumerate([BOS_ID, *output]):
            step = AttentionRecord()
            model.decode_step(torch.tensor([token]), cache, step)
            for layer in range(2):  # each step's single query row == that row of the map
                torch.testing.assert_close(step.cross[layer][0, :, 0], maps.weights["cross"][layer, :, t])
                torch.testing.assert_close(
                    step.decoder[layer][0, :, 0], maps.weights["decoder"][layer, :, t, : t + 1]
                )


def test_a_given_translation_is_forced(model, tokenizer):
    m = attention(model, tokenizer, "a dog runs", "un chien court")
    assert m.translation == "un chien court"
    assert tokenizer.sp.Decode(tokenizer.sp.PieceToId(m.target[:-1])) == "un chien court"
    assert (m.source[-1], m.target[-1], m.target_inputs[0]) == ("</s>", "</s>", "<s>")
    assert m.target_inputs[1:] == m.target[:-1]


def test_layer_and_head_choice(model, tokenizer):
    m = attention(model, tokenizer, "a dog runs", options=OPTIONS)
    torch.testing.assert_close(m.map("cross"), m.weights["cross"][-1].mean(0))
    torch.testing.assert_close(m.map("encoder", layer=1, head=3), m.weights["encoder"][0, 2])
    assert m.describe("cross") == "cross-attention, layer 2 of 2, mean of 4 heads"
    with pytest.raises(Seq2SeqError, match=r"--layer must be between 1 and 2 \(the .*layers\)"):
        m.map("cross", layer=3)
    with pytest.raises(Seq2SeqError, match=r"--head must be between 1 and 4"):
        m.map("cross", head=0)


def test_terminal_view_has_one_row_per_output_piece_and_wraps_long_sources(model, tokenizer):
    m = attention(model, tokenizer, SENTENCES[1], options=OPTIONS)
    assert len(m.source) > 12
    for width in (400, 100, 40):
        lines = [line.plain for line in heatmap_lines(m, "cross", None, None, width)]
        assert all(len(line) <= width for line in lines[2:])  # the grid fits; the titles may wrap
        headers = [line for line in lines[2:] if line.startswith(" ")]  # one per block of columns
        rows = [line for line in lines[2:] if not line.startswith(" ")]
        assert (len(headers) == 1) == (width == 400)
        assert len(rows) == len(headers) * len(m.target)
        assert [r.split()[0] for r in rows[: len(m.target)]] == m.target
        assert sum(len(h.split()) for h in headers) == len(m.source)  # every column, once


def test_show_attention_from_the_cli(run_dir, cli):
    result = cli("translate", "--run", run_dir, "--greedy", "--max-len", "5", "--show-attention", "a dog", "")
    assert result.code == 0, result.err
    assert len(result.out.splitlines()) == 2  # stdout keeps one line per input line
    assert "cross-attention, layer 2 of 2, mean of 4 heads" in result.err
    assert result.err.count("cross-attention") == 1  # no map for the blank line


@pytest.mark.parametrize(
    "args,message",
    [
        (["--show-attention", "--layer", "3"], "--layer must be between 1 and 2"),
        (["--show-attention", "--head", "9"], "--head must be between 1 and 4"),
        (["--layer", "1"], "--layer.*goes with a map drawn"),
    ],
)
def test_bad_layer_or_head_is_one_line_and_writes_nothing(run_dir, cli, args, message):
    result = cli("translate", "--run", run_dir, "--max-len", "5", *args, "a dog")
    assert result.code == 2 and result.out == ""
    assert len(result.err.strip().splitlines()) == 1
    assert __import__("re").search(message, result.err)


def test_attention_png_one_picture_per_sentence(run_dir, cli, tmp_path):
    pytest.importorskip("matplotlib")
    from matplotlib.image import imread

    result = cli("translate", "--run", run_dir, "--beam", "3", "--max-len", "5", "--attention-png",
                 tmp_path / "one.png", "a dog runs")  # fmt: skip
    assert result.code == 0, result.err
    assert imread(tmp_path / "one.png").shape[2] in (3, 4)
    many = tmp_path / "many.png"
    result = cli(
        "translate", "--run", run_dir, "--max-len", "5", "--attention-png", many, stdin=b"a dog\n\nthe sun\n"
    )
    assert result.code == 0, result.err
    assert sorted(p.name for p in tmp_path.glob("many*")) == ["many-1.png", "many-3.png"]
    assert not list(tmp_path.glob(".*.tmp"))


def test_without_matplotlib_a_one_line_hint_before_any_work(run_dir, cli, tmp_path, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name, *a)
    )
    result = cli("translate", "--run", run_dir, "--attention-png", tmp_path / "a.png", "a dog")
    assert result.code == 2 and result.out == ""
    assert 'pip install -e ".[plot]"' in result.err and len(result.err.strip().splitlines()) == 1
    assert not (tmp_path / "a.png").exists()
