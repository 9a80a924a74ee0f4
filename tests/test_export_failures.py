"""An export that cannot be written says so in one line (exit 2), leaves nothing half-written, and
writes its files with the usual modes."""

import math
import os
import shutil
import subprocess

import pytest

RUN_SEED = 2  # the `run` fixture's weights (conftest.py)


@pytest.fixture
def full_disk(tmp_path):
    """A folder on a 64 KiB file system, too small for any model: a real full disk (needs root)."""
    folder = tmp_path / "small"
    folder.mkdir()
    if subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", folder], capture_output=True
    ).returncode:
        pytest.skip("cannot mount a small file system here")
    yield folder
    subprocess.run(["umount", folder], check=True)


@pytest.mark.parametrize("to", ["huggingface", "ctranslate2"])
def test_an_export_onto_a_full_disk_is_one_line(run, cli, full_disk, to):
    result = cli("export", "--run", run, "--to", to, full_disk / "model")
    assert result.code == 2 and "No space left on device" in result.err, result.err
    assert len(result.err.strip().splitlines()) == 1 and "Traceback" not in result.err
    assert os.listdir(full_disk) == []  # nothing half-written


def test_a_tokenizer_with_a_nan_score_is_refused_in_one_line(run, cli, tmp_path):
    from sentencepiece import sentencepiece_model_pb2

    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString((copy / "tokenizer.model").read_bytes())
    proto.pieces[7].score = math.nan
    (copy / "tokenizer.model").write_bytes(proto.SerializeToString())
    result = cli("export", "--run", copy, "--to", "huggingface", tmp_path / "hf")
    assert result.code == 2 and "piece 7" in result.err and "has a score of nan" in result.err, result.err
    assert len(result.err.strip().splitlines()) == 1 and not (tmp_path / "hf").exists()


@pytest.mark.parametrize("umask", [0o022, 0o002])
def test_every_exported_file_follows_the_umask(run, cli, tmp_path, umask):
    old = os.umask(umask)
    try:
        result = cli("export", "--run", run, "--to", "huggingface", tmp_path / "hf")
    finally:
        os.umask(old)
    assert result.code == 0, result.err
    modes = {p.name: p.stat().st_mode & 0o777 for p in (tmp_path / "hf").iterdir()}
    assert "model.safetensors" in modes
    assert set(modes.values()) == {0o666 & ~umask}, modes
    assert (tmp_path / "hf").stat().st_mode & 0o777 == 0o777 & ~umask
