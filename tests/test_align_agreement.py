"""Two alignment layers fitted together (seq2seq/alignment/agreement.py): the agreement term reads
word scores as extract.py merges them, pulls two layers taught different links towards the same
ones, and `align-train --reverse-run` keeps a layer in each run; bad input is one line."""

import json

import numpy as np
import pytest
import torch

from seq2seq.alignment.agreement import disagreement, train_together, word_matrix
from seq2seq.alignment.aligner import examples_of
from seq2seq.alignment.extract import word_scores
from seq2seq.cli.align_train import AGREEMENT
from seq2seq.runs.load import load_run
from tests.conftest import EN
from tests.helpers import turned_round


def test_the_word_matrix_is_the_merge_extract_reads():
    generator = torch.Generator().manual_seed(0)
    log_probs = torch.randn(5, 5, generator=generator).log_softmax(-1)  # 5 target pieces, 4 source + NULL
    source_words, target_words = np.array([0, 0, 1, 2]), np.array([0, 1, 1, 2, 3])
    expected = word_scores(log_probs.exp()[:, :-1].numpy(), source_words, target_words)
    assert word_matrix(log_probs, source_words, target_words).numpy() == pytest.approx(expected, abs=1e-6)
    agreeing = torch.tensor([[0.9, 0.1], [0.0, 1.0], [0.5, 0.5]])
    assert disagreement(agreeing, agreeing.T).item() == 0.0
    assert disagreement(agreeing, torch.zeros(2, 3)).item() == pytest.approx(2.32 / 5)


def test_the_agreement_term_pulls_two_layers_towards_the_same_links(run):
    """The forward teacher links each word of a sentence's mirror; the reverse one leaves the
    sentence's last word unlinked. Fitted apart, the reverse layer gives that word to NULL where
    the forward one links it; fitted together, their two readings of the pairs come close."""
    model, tokenizer = load_run(run)
    sentences = [f"{e} {e.split()[0]}" for e in EN] * 12
    mirrors = [" ".join(reversed(s.split())) for s in sentences]
    links = [{(i, len(s.split()) - 1 - i) for i in range(len(s.split()))} for s in sentences]
    forward = examples_of(model, tokenizer, sentences, mirrors, links)
    partial = [{(j, i) for i, j in x if i != max(i for i, _ in x)} for x in links]  # the last word: none
    reverse = examples_of(model, tokenizer, mirrors, sentences, partial)
    examples = list(zip(forward, reverse, strict=True))
    d = (model.cfg.d_model,) * 2

    def apart_by(layers) -> float:  # the mean disagreement of the two layers' readings of the pairs
        with torch.no_grad():
            return float(np.mean([disagreement(*read(layers, pair)) for pair in examples[: len(EN)]]))

    apart, together = (apart_by(train_together(d, examples, 25, weight)) for weight in (0.0, 4.0))
    assert together < 0.5 * apart, (together, apart)


def test_align_train_fits_two_runs_together_and_keeps_a_layer_in_each(tiny_run, cli, tmp_path):
    pytest.importorskip("eflomal", reason="align-train's teacher: pip install -e '.[align]'")
    run, data = tiny_run
    back = turned_round(tiny_run, tmp_path)
    said = cli("align-train", "--run", run, "--reverse-run", run, "--data-dir", data)
    assert said.code == 2 and "translates en->fr, not fr->en" in said.err and said.err.count("\n") == 1
    said = cli("align-train", "--run", run, "--agreement", "2", "--data-dir", data)
    assert said.code == 2 and "--reverse-run" in said.err, said.err
    assert not (run / "aligner.json").exists() and not (back / "aligner.json").exists()
    said = cli("align-train", "--run", run, "--reverse-run", back, "--data-dir", data, "--epochs", "1")
    assert said.code == 0 and said.err.count("wrote the alignment layer") == 2, said.err
    kept = [json.loads((where / "aligner.json").read_text()) for where in (run, back)]
    assert [k["agreement"] for k in kept] == [AGREEMENT] * 2 and kept[0]["pairs"] == kept[1]["pairs"] > 0
    (tmp_path / "s").write_text("a dog runs\n")
    (tmp_path / "t").write_text("un chien court\n")
    pair = ["--source", tmp_path / "s", "--target", tmp_path / "t", "--reverse-run", back]
    both = cli("align", "--run", run, *pair, "--method", "layer", "--combine", "product", "--json")
    assert both.code == 0 and len(both.out.splitlines()) == 1, both.err


def read(layers, pair) -> list[torch.Tensor]:
    """Each layer's word scores of its direction's example of one pair."""
    return [word_matrix(layer(*e[:3]), *e[3]) for layer, e in zip(layers, pair, strict=True)]
