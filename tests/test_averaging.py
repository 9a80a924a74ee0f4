"""Checkpoint averaging: the mean is the mean, the run keeps only the last N snapshots, and the
averaged weights are validated like any checkpoint without touching what training resumes from."""

from dataclasses import replace

import torch
from safetensors.torch import load_file

from seq2seq.decoding.search import DecodeOptions
from seq2seq.evaluate import evaluate
from seq2seq.runs.files import BEST, LAST, read_metrics, save_weights
from seq2seq.runs.load import load_run
from seq2seq.training import averaging
from seq2seq.training.config import TrainConfig
from seq2seq.training.train import train
from tests.conftest import tiny_model
from tests.helpers import REVERSE_MODEL, write_reversal_task

SMALL = replace(REVERSE_MODEL, d_model=32, d_ff=64)


def test_the_average_of_snapshots_is_their_elementwise_mean(tmp_path):
    models = [tiny_model(seed=s) for s in range(3)]
    paths = [tmp_path / f"{i}.safetensors" for i in range(3)]
    for model, path in zip(models, paths, strict=True):
        save_weights(model, path)
    target = tiny_model(seed=7)
    before = {k: v.clone() for k, v in target.state_dict().items()}
    mean = averaging.averaged_state(paths, target)
    for name, value in mean.items():
        expected = sum(m.state_dict()[name].double() for m in models) / 3
        torch.testing.assert_close(value, expected.float(), rtol=0, atol=1e-7)
        assert torch.equal(target.state_dict()[name], before[name]), "the model must be left as it was"


def test_a_run_keeps_only_its_last_snapshots(tmp_path):
    model = tiny_model()
    for step in (3, 10, 7, 12):
        averaging.save_snapshot(tmp_path, model, step, keep=2)
    assert [p.name for p in averaging.snapshot_paths(tmp_path)] == [
        "step-000000010.safetensors",
        "step-000000012.safetensors",
    ]


def reversal_config(tmp_path, **changes) -> TrainConfig:
    corpus = write_reversal_task(tmp_path / "data", n_train=400, n_val=20)
    base = TrainConfig(corpus=corpus, src="src", tgt="tgt", vocab_size=32, max_tokens=512, lr=3e-3, warmup=10)
    return replace(base, epochs=4, device="cpu", bf16=False, **changes)


def test_training_ends_by_validating_the_mean_of_the_last_checkpoints(tmp_path):
    run = tmp_path / "run"
    train(run, reversal_config(tmp_path, average=3), SMALL)
    rows = read_metrics(run)
    plain, averaged = [r for r in rows if not r.get("averaged")], [r for r in rows if r.get("averaged")]
    assert len(plain) == 4 and len(averaged) == 1 and averaged[0]["averaged"] == 3
    snapshots = averaging.snapshot_paths(run)
    assert [int(p.stem.split("-")[1]) for p in snapshots] == [r["step"] for r in plain[-3:]]

    resumed_from, last_snapshot = load_file(run / LAST), load_file(snapshots[-1])
    assert all(torch.equal(resumed_from[f"model.{k}"], v) for k, v in last_snapshot.items()), (
        "training resumes from the trained weights, not their mean"
    )
    model, tokenizer = load_run(run)
    model.load_state_dict(averaging.averaged_state(snapshots, model))
    val = [tuple(line.split("\t")) for line in (tmp_path / "data" / "val.tsv").read_text().splitlines()]
    rescored = evaluate(model, tokenizer, val, DecodeOptions(beam=1, bf16=False))
    assert rescored.scores.bleu == averaged[0]["val_bleu"]
    best_is_mean = averaged[0]["best"]
    best = load_file(run / BEST)
    assert all(torch.equal(best[k], v) for k, v in model.state_dict().items()) == best_is_mean


def test_average_zero_keeps_no_snapshots_and_adds_no_row(tmp_path):
    run = tmp_path / "run"
    train(run, reversal_config(tmp_path, average=0), SMALL)
    assert not (run / averaging.SNAPSHOTS).exists()
    assert not any(r.get("averaged") for r in read_metrics(run))
