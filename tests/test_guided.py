"""Guided alignment training: its targets from word links, its loss, and that it makes a head align."""

import gzip
import json
import re
from importlib.util import find_spec

import numpy as np
import pytest
import torch

from seq2seq.alignment.api import align
from seq2seq.alignment.methods import Method
from seq2seq.alignment.pharaoh import Links
from seq2seq.alignment.score import score
from seq2seq.errors import Seq2SeqError
from seq2seq.runs.load import load_run
from seq2seq.runs.recipe import trained_head
from seq2seq.training.config import TrainConfig
from seq2seq.training.guided import Guide
from seq2seq.training.train import train
from tests.conftest import write_multi30k
from tests.helpers import REVERSE_MODEL, train_args, write_reversal_task


def test_targets_spread_each_link_over_the_pieces_of_its_words():
    # ids 0-3 are specials; 4 "▁a" 5 "b" 6 "▁c" 7 "▁d": source "ab c" is pieces 4 5 6, words 0 0 1
    starts = np.array([False] * 4 + [True, False, True, True])
    guide = Guide([Links.of({(0, 1), (1, 0), (1, 1)})], starts, layer=None, weight=1.0)
    q = guide.targets([[4, 5, 6]], [[7, 4, 5]], [0], max_len=10)[0]  # target "d ab": words 0 1 1
    assert q.shape == (4, 4)  # (3 target pieces + EOS, 3 source pieces + EOS)
    expected = torch.tensor(
        [
            [0.0, 0.0, 1.0, 0.0],  # "d" (word 0) <- source word 1, "c"
            [1 / 3, 1 / 3, 1 / 3, 0.0],  # "▁a" (word 1) <- words 0 ("ab": two pieces) and 1
            [1 / 3, 1 / 3, 1 / 3, 0.0],  # "b", the same word
            [0.0, 0.0, 0.0, 0.0],  # EOS: not supervised
        ]
    )
    torch.testing.assert_close(q, expected)
    shifted = Guide(guide.links, starts, layer=None, weight=1.0, position="input")
    q_input = shifted.targets([[4, 5, 6]], [[7, 4, 5]], [0], max_len=10)[0]  # row t + 1 for piece t
    torch.testing.assert_close(q_input, torch.cat([torch.zeros(1, 4), expected[:-1]]))


def test_the_loss_is_the_cross_entropy_of_the_first_head_of_the_penultimate_layer():
    starts = np.array([False] * 4 + [True] * 4)
    guide = Guide([Links.of({(0, 0)})], starts, layer=None, weight=0.5)
    q = guide.targets([[4, 5]], [[6]], [0], max_len=10)  # (1, 2, 3)
    cross = [torch.full((1, 2, 2, 3), 1 / 3) for _ in range(3)]
    cross[1][0, 0, 0] = torch.tensor([0.5, 0.25, 0.25])  # layer 2 of 3, head 1, row of piece 0
    assert guide.loss(cross, q).item() == pytest.approx(-0.5 * np.log(0.5))
    with pytest.raises(Seq2SeqError, match="--guided-layer 4: the model has 3"):
        Guide(guide.links, starts, layer=4, weight=0.5).loss(cross, q)


def test_the_trained_head_is_read_where_it_was_supervised():
    assert trained_head(3) is None  # a run without guidance
    assert trained_head(3, "links") == ("attention", 2, 1)  # the penultimate, where it predicts
    assert trained_head(1, "links") == ("attention", 1, 1)  # a one-layer decoder's (the RNN's)
    assert trained_head(3, "links", 1, "input") == ("shift", 1, 1)


def reversal_links(path, n_words: list[int]) -> None:
    path.write_text("".join(" ".join(f"{i}-{n - 1 - i}" for i in range(n)) + "\n" for n in n_words))


def _trained(tmp_path, name, guided, position="output"):
    data = tmp_path / "data"
    corpus = write_reversal_task(data, n_train=500, n_val=60)
    links = tmp_path / "train.align"
    lines = (data / "train.tsv").read_text().splitlines()
    reversal_links(links, [len(line.split("\t")[0].split()) for line in lines])
    config = TrainConfig(
        corpus=corpus,
        src="src",
        tgt="tgt",
        vocab_size=32,
        max_tokens=256,
        lr=3e-3,
        warmup=10,
        label_smoothing=0.0,
        subword_alpha=0.0,
        epochs=5,
        device="cpu",
        bf16=False,
        guided_alignment=str(links) if guided else None,
        guided_weight=1.0,
        guided_position=position,
    )
    train(tmp_path / name, config, REVERSE_MODEL)
    return load_run(tmp_path / name), data


def _aer(run, data, method="attention") -> float:
    (model, tokenizer), data = run, data
    val = [line.split("\t") for line in (data / "val.tsv").read_text().splitlines()]
    sources, targets = [s for s, _ in val], [t for _, t in val]
    found = align(model, tokenizer, sources, targets, Method(method, layer=1, head=1))
    gold = [Links.of({(i, len(s.split()) - 1 - i) for i in range(len(s.split()))}) for s in sources]
    return score([a.links for a in found], gold).aer


def test_guided_training_makes_the_guided_head_align(tmp_path):
    unguided = _trained(tmp_path, "unguided", False)
    guided = _aer(*_trained(tmp_path, "guided", True))
    assert guided < 0.5 and guided < _aer(*unguided) - 0.3, (guided, _aer(*unguided))
    # supervised where each piece is the decoder's input, the head aligns one step later
    at_input = _aer(*_trained(tmp_path, "input", True, "input"), method="shift")
    assert at_input < 0.5 and at_input < _aer(*unguided, method="shift") - 0.3


@pytest.mark.parametrize(
    "links, message",
    [
        ("0-0\n", r"train.align has 1 lines, but the training corpus has 40 pairs"),
        ("0-0\n" * 39 + "0-99\n", r"train.align line 40: link 0-99 is out of range"),
        ("0-0\n" * 39 + "0:0\n", r"train.align line 40: '0:0' is not a link"),
    ],
)
def test_bad_links_stop_training_before_a_step_in_one_line(cli, tmp_path, links, message):
    data = write_multi30k(tmp_path / "corpus", {"train": 40, "val": 4})
    (tmp_path / "train.align").write_text(links)
    result = cli(*train_args(data, tmp_path / "run"), "--guided-alignment", tmp_path / "train.align")
    assert result.code == 2 and re.search(message, result.err), result.err
    assert len(result.err.strip().splitlines()) == 1 and not (tmp_path / "run" / "last.safetensors").exists()


def test_a_guided_run_resumes_with_its_links(cli, tmp_path):
    data = write_multi30k(tmp_path / "corpus", {"train": 40, "val": 4})
    lines = gzip.decompress((data / "train.en.gz").read_bytes()).decode().splitlines()
    (tmp_path / "train.align").write_text("".join(f"0-0 {len(s.split()) - 1}-1\n" for s in lines))
    run = tmp_path / "run"
    first = cli(*train_args(data, run, steps=2), "--guided-alignment", tmp_path / "train.align")
    assert first.code == 0, first.err
    again = cli(*train_args(data, run, steps=4))  # the recipe, the links included, is the run's
    assert again.code == 0, again.err
    assert json.loads((run / "config.json").read_text())["train"]["guided_alignment"] == str(
        tmp_path / "train.align"
    )


def test_eflomal_guidance_computes_the_links_once_and_align_reads_the_head(cli, tmp_path):
    pytest.importorskip("eflomal", reason="guided alignment's teacher: pip install -e '.[align]'")
    data = write_multi30k(tmp_path / "corpus", {"train": 40, "val": 4})
    run = tmp_path / "run"
    first = cli(*train_args(data, run, steps=2), "--guided-alignment", "eflomal")
    assert first.code == 0 and "alignment: guided by eflomal's links of the corpus's 40 pairs" in first.out
    links = (run / "guided.align").read_text()
    sources = gzip.decompress((data / "train.en.gz").read_bytes()).decode().splitlines()
    targets = gzip.decompress((data / "train.fr.gz").read_bytes()).decode().splitlines()
    assert len(links.splitlines()) == 40 and any(links.splitlines())
    for line, s, t in zip(links.splitlines(), sources, targets, strict=True):
        pairs = [tuple(map(int, link.split("-"))) for link in line.split()]
        assert all(i < len(s.split()) and j < len(t.split()) for i, j in pairs)
    assert json.loads((run / "config.json").read_text())["train"]["guided_alignment"] == "eflomal"
    again = cli(*train_args(data, run, steps=4))  # resumed: the links kept, not computed again
    assert again.code == 0 and "eflomal's links" not in again.out, again.err
    assert (run / "guided.align").read_text() == links
    (tmp_path / "s").write_text("a dog runs\n")
    said = cli("align", "--run", run, "--source", tmp_path / "s")
    assert said.code == 0 and "aligning with the head --guided-alignment trained" in said.err


def test_auto_guides_a_corpus_eflomal_can_learn_from_and_says_why_not_otherwise(cli, tmp_path):
    from seq2seq.training.guided import AUTO_PAIRS, guidance

    data = write_multi30k(tmp_path / "corpus", {"train": 40, "val": 4})
    result = cli(*train_args(data, tmp_path / "run"))  # the default: auto
    assert result.code == 0, result.err
    if find_spec("eflomal") is not None:
        assert "alignment: unguided: a corpus of 40 pairs is too small for eflomal's links" in result.out
    assert json.loads((tmp_path / "run" / "config.json").read_text())["train"]["guided_alignment"] is None
    assert not (tmp_path / "run" / "guided.align").exists()
    pytest.importorskip("eflomal", reason="guided alignment's teacher: pip install -e '.[align]'")
    # "a red dog" is "un chien rouge": each adjective with each noun, so eflomal can tell them apart
    adjectives = [("red", "rouge"), ("big", "grand"), ("small", "petit"), ("blue", "bleu"), ("old", "vieux")]
    nouns = [("dog", "chien"), ("cat", "chat"), ("car", "camion"), ("boat", "bateau"), ("bird", "oiseau")]
    pairs = [
        (
            f"a {adjectives[i % 5][0]} {nouns[i // 5 % 5][0]}",
            f"un {nouns[i // 5 % 5][1]} {adjectives[i % 5][1]}",
        )
        for i in range(AUTO_PAIRS)
    ]
    config, told = guidance(TrainConfig(), tmp_path / "big", lambda: pairs)
    assert config.guided_alignment == "eflomal" and f"links of the corpus's {AUTO_PAIRS:,} pairs" in told
    lines = [set(line.split()) for line in (tmp_path / "big" / "guided.align").read_text().splitlines()]
    assert len(lines) == AUTO_PAIRS and lines[0] == lines[7] == {"0-0", "1-2", "2-1"}


def test_without_eflomal_auto_trains_unguided_and_eflomal_is_refused_in_one_line(cli, tmp_path, monkeypatch):
    from seq2seq.training import guided

    monkeypatch.setattr(guided, "find_spec", lambda name: None)
    config, told = guided.guidance(TrainConfig(), tmp_path, lambda: [])
    assert config.guided_alignment is None and told.startswith(
        "unguided: eflomal is not installed (pip install"
    )
    data = write_multi30k(tmp_path / "corpus", {"train": 40, "val": 4})
    result = cli(*train_args(data, tmp_path / "run"), "--guided-alignment", "eflomal")
    assert result.code == 2 and result.err.strip().count("\n") == 0, result.err
    assert "--guided-alignment eflomal needs eflomal: pip install 'seq2seq[align]'" in result.err
    assert not any(
        (tmp_path / "run" / name).exists() for name in ("config.json", "tokenizer.model", "guided.align")
    )
    none = TrainConfig(guided_alignment="none")
    assert (
        none.guided_alignment is None
        and TrainConfig(guided_alignment="eflomal").guided_alignment == "eflomal"
    )
