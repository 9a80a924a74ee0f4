"""scripts.experiments.decoding_levers: its ensemble decodes through the package's search for every
architecture (two copies of one model are that model), its coverage penalty counts only the
positions a hypothesis decoded, and the whole measurement runs on a run directory."""

import json

import numpy as np
import pytest
import torch

from scripts.experiments import decoding_levers
from seq2seq.data.special import BOS_ID
from seq2seq.decoding.forced import score_pairs
from seq2seq.decoding.search import DecodeOptions, Hypothesis, beam_search
from tests.conftest import tiny_model, write_multi30k, write_run
from tests.helpers import VARIANTS, lens, make, sources, tokens_and_scores


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_an_ensemble_of_one_model_twice_is_that_model_and_another_member_counts(variant):
    model, other = make(variant, seed=5), make(variant, seed=6)
    alone = tokens_and_scores(beam_search(model, sources(), lens(), DecodeOptions(beam=3, nbest=3)))
    twice = tokens_and_scores(
        beam_search(
            decoding_levers.Ensemble([model, model]), sources(), lens(), DecodeOptions(beam=3, nbest=3)
        )
    )
    assert twice[0] == alone[0]
    assert twice[1] == pytest.approx(alone[1], abs=1e-4)
    mixed = tokens_and_scores(
        beam_search(
            decoding_levers.Ensemble([model, other]), sources(), lens(), DecodeOptions(beam=3, nbest=3)
        )
    )
    assert mixed[1] != pytest.approx(alone[1], abs=1e-4)


def test_an_ensemble_step_is_the_log_of_its_members_mean_probability():
    """Members of two architectures, each on its own memory and cache: only the vocabulary is shared."""
    members = [make("transformer", seed=5), make("rnn", seed=6)]
    ensemble, src = decoding_levers.Ensemble(members), sources()
    bos = torch.full((src.size(0),), BOS_ID)
    with torch.inference_mode():
        memories, src_mask = ensemble.encode(src)
        got = ensemble.decode_step(bos, ensemble.init_cache(memories, src_mask, 10))
        alone = [m.decode_step(bos, m.init_cache(*m.encode(src), 10)).softmax(-1) for m in members]
    torch.testing.assert_close(got, torch.stack(alone).mean(0).log())


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


def test_the_measurement_runs_on_a_run_and_refuses_another_tokenizer(tmp_path, capsys):
    data = write_multi30k(tmp_path / "corpus", {"val": 8})
    run = write_run(tmp_path / "run", lambda v: tiny_model(v, seed=1))
    decoding_levers.main(["--run", str(run), "--data-dir", str(data), "--beam", "2", "--ensemble", str(run)])
    out = capsys.readouterr().out
    for row in ("beam search", "coverage penalty, beta 0.2", "minimum Bayes risk", "oracle", "ensemble of 2"):
        assert row in out
    stranger = write_run(tmp_path / "stranger", lambda v: tiny_model(v, seed=3))
    (stranger / "tokenizer.model").write_bytes(b"another")
    with pytest.raises(SystemExit, match="another tokenizer"):
        decoding_levers.main(["--run", str(run), "--data-dir", str(data), "--ensemble", str(stranger)])


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
