"""Data-parallel training: real 2-process gloo jobs on CPU, started with torchrun."""

import json
import os
import signal
import subprocess
import sys
import time
from contextlib import nullcontext
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from seq2seq.data.batch import collate
from seq2seq.decoding.search import DecodeOptions, translate
from seq2seq.runs.files import CONFIG, METRICS, read_metrics
from seq2seq.runs.load import load_run
from seq2seq.training.distributed import World, rank_batch
from seq2seq.training.step import TrainStep
from tests.cli_helpers import in_this_checkout, run_cli, torchrun
from tests.conftest import saved_step
from tests.ddp_step import fresh_model, step_batches

REPO = Path(__file__).resolve().parent.parent


def test_ranks_shares_of_an_epoch_are_disjoint_and_cover_it():
    for n_batches in (1, 2, 5, 8, 13):
        for size in (1, 2, 3, 4):
            taken = {rank: [] for rank in range(size)}
            start, steps = 0, 0
            while start < n_batches:  # the loop's walk: one batch per process per step
                for rank in range(size):
                    index, weight = rank_batch(list(range(n_batches)), start, World(rank=rank, size=size))
                    if weight:
                        taken[rank].append(index)
                start, steps = min(start + size, n_batches), steps + 1
            everything = sorted(i for share in taken.values() for i in share)
            assert everything == list(range(n_batches)), (n_batches, size)
            assert steps == -(-n_batches // size)


def test_a_two_process_step_equals_one_process_on_the_union_of_the_batches(tmp_path):
    out = tmp_path / "ddp.safetensors"
    result = torchrun(str(REPO / "tests" / "ddp_step.py"), str(out), cwd=tmp_path)
    result.stdout, result.stderr = result.communicate(timeout=240)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "agreed [3.0, 0.7]" in result.stdout  # rank 1's stop request reached rank 0, and rank 0's clock

    (src_a, tgt_a), (src_b, tgt_b) = step_batches()
    union = collate(src_a + src_b, tgt_a + tgt_b, max_len=64)
    model, optimizer = fresh_model()
    untouched = {k: v.clone() for k, v in model.state_dict().items()}
    loss, tokens = TrainStep(model, optimizer, World(), nullcontext(), 1.0, 0.1)(union, lr=0.5)
    assert f"tokens {tokens}" in result.stdout
    assert abs(float(result.stdout.split()[1]) - loss) < 1e-5
    ddp = load_file(str(out))
    moved = sum((value - untouched[name]).abs().sum() for name, value in model.state_dict().items())
    assert moved > 1.0  # the step did change the weights
    for name, value in model.state_dict().items():
        torch.testing.assert_close(ddp[name], value, rtol=1e-5, atol=1e-6, msg=name)


def test_two_processes_train_one_run_stop_together_and_it_translates_and_resumes_in_one(tmp_path, corpus_dir):
    """SIGTERM to rank 1 alone: both stop after the same step, rank 0 saves and validates; the run
    directory is one usable run, which a single process then resumes."""
    run = tmp_path / "run"
    args = ["-m", "seq2seq", "--", "train", "--data-dir", str(corpus_dir), "--preset", "tiny"]
    args += ["--max-tokens", "64", "--fp32", "--epochs", "1000", "--save-every-minutes", "0"]
    args += ["--device", "cpu"]  # gloo, also where a single GPU could not hold two NCCL ranks
    agent = torchrun(*args, "--run", str(run), cwd=tmp_path)
    try:
        deadline = time.monotonic() + 120
        while not (run / METRICS).is_file() and time.monotonic() < deadline:  # a first epoch done
            time.sleep(0.1)
        first = read_metrics(run)[0]["step"]
        while saved_step(run) <= first and time.monotonic() < deadline:  # and a step after it
            time.sleep(0.05)
        ranks = {rank_of(pid): pid for pid in children(agent.pid)}
        assert sorted(ranks) == [0, 1], ranks
        os.kill(ranks[1], signal.SIGTERM)  # rank 1 only: rank 0 must hear of it
        out, err = agent.communicate(timeout=120)
    finally:
        agent.kill()
    assert agent.returncode == 0, err[-3000:]
    assert out.count("training pairs") == 1  # rank 0 alone reports
    assert "x 2 processes (gloo)" in out and "interrupted at step" in out
    assert json.loads((run / CONFIG).read_text())["train"]["world_size"] == 2
    steps = [row["step"] for row in read_metrics(run)]
    assert steps == sorted(set(steps)) and len(steps) >= 1, (steps, out)  # each validation written once
    stopped = saved_step(run)  # saved where all of them stopped; the stop validates nothing
    assert stopped >= steps[-1] and f"interrupted at step {stopped}" in out

    translated = subprocess.run(
        [sys.executable, "-m", "seq2seq", "translate", "--run", str(run), "--beam", "2"],
        input="a dog runs\nthe cat\n",
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=in_this_checkout(),
        timeout=120,
    )
    assert translated.returncode == 0, translated.stderr
    assert len(translated.stdout.splitlines()) == 2

    from seq2seq.training.config import TrainConfig
    from seq2seq.training.train import train

    config = TrainConfig(max_steps=stopped + 2, max_tokens=64, bf16=False)
    final = train(run, config, None, data_dir=str(corpus_dir))  # the same run, now one process
    assert final["step"] == stopped + 2
    assert json.loads((run / CONFIG).read_text())["train"]["world_size"] == 1


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_training_and_decoding_on_cuda(tmp_path, corpus_dir):
    from seq2seq.models.registry import preset_config
    from seq2seq.training.config import TrainConfig
    from seq2seq.training.train import train

    run = tmp_path / "run"
    config = TrainConfig(max_steps=3, max_tokens=64, device="cuda")
    final = train(run, config, preset_config("transformer", "tiny"), data_dir=str(corpus_dir))
    assert final["step"] == 3
    gpu_model, tokenizer = load_run(run, device="cuda")
    cpu_model, _ = load_run(run, device="cpu")
    lines = ["a dog runs", "two men sit"]
    for options in (DecodeOptions(beam=1), DecodeOptions(beam=4, nbest=4)):
        on_gpu, on_cpu = (translate(m, tokenizer, lines, options) for m in (gpu_model, cpu_model))
        assert on_gpu.best == on_cpu.best and on_gpu.tokens == on_cpu.tokens  # the same words
        gpu_scores = [s for hyps in on_gpu.nbest for _, s in hyps]  # to float precision: other kernels
        assert gpu_scores == pytest.approx([s for hyps in on_cpu.nbest for _, s in hyps], abs=1e-4)
    with_bf16 = translate(gpu_model, tokenizer, lines, DecodeOptions(beam=4, bf16=True))
    assert len(with_bf16.best) == len(with_bf16.tokens) == len(lines)  # bf16 autocast decodes on CUDA


def children(pid: int) -> list[int]:
    """The processes whose parent is `pid` (field 4 of /proc/<pid>/stat, after the name)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def rank_of(pid: int) -> int:
    variables = Path(f"/proc/{pid}/environ").read_bytes().decode(errors="replace").split("\0")
    return int(dict(v.split("=", 1) for v in variables if "=" in v)["RANK"])


def test_a_lost_peer_is_one_line_on_the_other_ranks():
    from seq2seq.errors import Seq2SeqError
    from seq2seq.training.distributed import peers_watched

    lost = r"rank 1: another process of the job stopped \(Connection closed"
    with pytest.raises(Seq2SeqError, match=lost), peers_watched(World(rank=1, size=2)):
        raise RuntimeError("Connection closed by peer [127.0.0.1]:29500\nmore")
    with pytest.raises(RuntimeError), peers_watched(World(rank=0, size=2)):  # rank 0 keeps its own
        raise RuntimeError("disk full")


class Exited(Exception):
    """What `os._exit(code)` raises in these tests, so that pytest goes on."""


@pytest.fixture
def exit_raises(monkeypatch):
    def exit_now(code: int):
        raise Exited(code)

    monkeypatch.setattr(os, "_exit", exit_now)
    monkeypatch.delenv("WORLD_SIZE", raising=False)  # one process, until a test says otherwise


def test_a_torchrun_process_ends_without_the_interpreters_finalization(
    tmp_path, capsys, monkeypatch, exit_raises
):
    """Under DDP gloo's worker threads outlive destroy_process_group, and one that drops a tensor
    while the interpreter finalizes aborts the process: so a torchrun process ends by os._exit
    with the command's code, its output written; a lone process exits as always."""
    missing = ["translate", "--run", str(tmp_path / "missing")]
    assert run_cli(missing, capsys, monkeypatch).code == 2  # one process: sys.exit
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(Exited) as exited:
        run_cli(missing, capsys, monkeypatch)
    assert exited.value.args == (2,)
    assert "missing" in capsys.readouterr().err


def test_a_bug_on_a_torchrun_rank_prints_its_traceback_and_ends_the_same_way(
    capsys, monkeypatch, exit_raises
):
    """Not an abort at finalization that would hide it: the traceback, then os._exit(1)."""
    from seq2seq.cli import app

    def a_bug(**_):
        raise ValueError("a bug")

    monkeypatch.setattr(app, "app", a_bug)
    with pytest.raises(ValueError, match="a bug"):  # one process: Python reports it as always
        run_cli(["translate"], capsys, monkeypatch)
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(Exited) as exited:
        run_cli(["translate"], capsys, monkeypatch)
    assert exited.value.args == (1,)
    assert "ValueError: a bug" in capsys.readouterr().err
