"""Two nodes for real, on one machine: two agents (`python -m seq2seq.launch`, torchrun's
arguments) meeting at a c10d rendezvous on 127.0.0.1, one process each, train the same steps as
one torchrun agent with two processes; an agent whose other node never comes says so in one line."""

import socket
import subprocess
import sys

import torch

from tests.cli_helpers import in_this_checkout, torchrun
from tests.helpers import TORCHRUN_TRAIN as TRAIN
from tests.helpers import model_weights as weights


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def node(args: list[str], port: int, cwd, *options: str) -> subprocess.Popen:
    """One agent of a two-node job, as each machine of a real one starts it."""
    rendezvous = [
        "--nnodes=2",
        "--nproc-per-node=1",
        "--rdzv-backend=c10d",
        f"--rdzv-endpoint=127.0.0.1:{port}",
        *options,
    ]
    command = [
        sys.executable,
        "-m",
        "seq2seq.launch",
        *rendezvous,
        "--rdzv-id=two-nodes",
        "--max-restarts=0",
    ]
    env = {**in_this_checkout(), "OMP_NUM_THREADS": "1"}
    return subprocess.Popen(
        [*command, *args], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def test_two_nodes_train_the_steps_of_one_node_with_two_processes(tmp_path, corpus_dir):
    args = [*TRAIN, "--data-dir", str(corpus_dir)]
    port = free_port()
    nodes = [node([*args, "--run", str(tmp_path / "two-nodes")], port, tmp_path) for _ in range(2)]
    outputs = [n.communicate(timeout=240) for n in nodes]
    for n, (_, err) in zip(nodes, outputs, strict=True):
        assert n.returncode == 0, err[-3000:]
    assert sum(out.count("x 2 processes (gloo)") for out, _ in outputs) == 1  # rank 0 alone reports
    one = torchrun(*args, "--run", str(tmp_path / "one-node"), cwd=tmp_path)
    _, err = one.communicate(timeout=240)
    assert one.returncode == 0, err[-3000:]
    a, b = weights(tmp_path / "two-nodes"), weights(tmp_path / "one-node")
    assert a.keys() == b.keys()
    for name in a:
        torch.testing.assert_close(a[name], b[name], rtol=0, atol=1e-6, msg=name)


def test_a_node_that_never_comes_is_one_line_and_no_run(tmp_path, corpus_dir):
    run = tmp_path / "alone"
    args = [*TRAIN, "--data-dir", str(corpus_dir), "--run", str(run)]
    alone = node(args, free_port(), tmp_path, "--rdzv-conf=join_timeout=2")
    _, err = alone.communicate(timeout=120)
    assert alone.returncode == 2
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "did not gather its 2 nodes within its join timeout" in lines[0]
    assert "Traceback" not in err and not run.exists()
