"""scripts.experiments.decoding_levers: its coverage penalty counts only the positions a hypothesis
decoded, and the whole measurement (and noisy-channel reranking) runs on a run directory."""

import json

import numpy as np
import pytest

from scripts.experiments import decoding_levers
from seq2seq.decoding.forced import score_pairs
from seq2seq.decoding.search import Hypothesis
from tests.conftest import tiny_model, write_multi30k, write_run


def test_a_longer_hypothesis_covers_at_least_what_its_prefix_covers():
    """The prefix is padded to the longer one's length in the same batch: the padded positions'
    attention must not count as coverage, or the prefix would look as covered as the whole."""
    model = tiny_model(seed=7)
    full = Hypothesis([5, 9, 12, 7, 8, 11], 0.0)
    prefix = Hypothesis(full.tokens[:2], 0.0)
    penalties = decoding_levers.coverage_penalties(model, [5, 9, 12, 3], [full, prefix])
    assert all(p <= 0 for p in penalties)
    assert penalties[0] > penalties[1]
    alone = decoding_levers.coverage_penalties(model, [5, 9, 12, 3], [prefix])
    assert alone[0] == pytest.approx(penalties[1], abs=1e-5)


def test_the_measurement_runs_on_a_run(tmp_path, capsys):
    data = write_multi30k(tmp_path / "corpus", {"val": 8})
    run = write_run(tmp_path / "run", lambda v: tiny_model(v, seed=1))
    decoding_levers.main(["--run", str(run), "--data-dir", str(data), "--beam", "2"])
    out = capsys.readouterr().out
    for row in ("beam search", "coverage penalty, beta 0.2", "minimum Bayes risk", "oracle"):
        assert row in out


def test_noisy_channel_reranking_runs_with_a_reverse_run_and_refuses_a_forward_one(tmp_path, capsys):
    data = write_multi30k(tmp_path / "corpus", {"val": 8})
    run = write_run(tmp_path / "run", lambda v: tiny_model(v, seed=1))
    reverse = write_run(tmp_path / "reverse", lambda v: tiny_model(v, seed=2))
    config = json.loads((reverse / "config.json").read_text())
    config["train"]["src"], config["train"]["tgt"] = config["train"]["tgt"], config["train"]["src"]
    (reverse / "config.json").write_text(json.dumps(config))
    decoding_levers.main(
        ["--run", str(run), "--data-dir", str(data), "--beam", "3", "--channel", str(reverse)]
    )
    rows = dict(line.rsplit(" BLEU ", 1) for line in capsys.readouterr().out.splitlines() if " BLEU " in line)
    assert rows["noisy channel, lambda 0".ljust(45)] == rows["beam search (its best)".ljust(45)]
    assert any(name.startswith("noisy channel, lambda from the other half") for name in rows)
    with pytest.raises(SystemExit, match="no reverse model"):
        decoding_levers.main(["--run", str(run), "--data-dir", str(data), "--channel", str(run)])


def test_the_noisy_channel_adds_the_reverse_score_before_search_s_length_normalisation():
    """lambda 0 keeps search's order; otherwise (forward total + lambda backward) / penalty(length),
    with the forward total recovered from search's normalised score."""
    short, long = Hypothesis([5], -2.0), Hypothesis([5, 6, 7, 8], -2.5)  # scores as search divides them
    assert decoding_levers.channel_choice([[short, long]], [np.array([-9.0, -1.0])], 0.0, [0]) == [0]
    assert decoding_levers.channel_choice([[short, long]], [np.array([-9.0, -1.0])], 0.5, [0]) == [1]
    # penalties 7/6 and 10/6: (-2.0 * 7/6 - 0.55) / (7/6) = -2.47 against -2.5. Without undoing
    # search's division it would be -2.55 against -2.5, and dividing the channel term alone -2.19
    # against -1.5: either picks the long one
    assert decoding_levers.channel_choice([[short, long]], [np.array([-0.55, 0.0])], 1.0, [0]) == [0]
    longer = Hypothesis([5, 6, 7, 8], -1.9)  # better normalised (search's choice), worse in total
    assert decoding_levers.channel_choice([[short, longer]], [np.array([0.0, 0.0])], 0.0, [0]) == [1]


def test_the_reverse_model_scores_each_source_given_each_of_its_own_candidates(tmp_path):
    """Lines with n-best lists of different sizes: every score must land on its own candidate."""
    run = write_run(tmp_path / "reverse", lambda v: tiny_model(v, seed=2))
    model, tokenizer = decoding_levers.load_run(run)
    sources = ["a dog runs", "two men sit on a bench"]
    texts = [["un chien court", "un chien", "chien"], ["deux hommes sont assis sur un banc"]]
    got = decoding_levers.channel_totals(model, tokenizer, sources, texts)
    for source, candidates, totals in zip(sources, texts, got, strict=True):
        alone = [score_pairs(model, tokenizer, [c], [source])[0].total for c in candidates]
        assert totals == pytest.approx(alone, abs=1e-4)
