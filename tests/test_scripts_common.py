"""scripts.common: what the scripts share. CTranslate2 is timed in a process of its own
(`python -m scripts.engine_worker`), which answers each job with the engine's own outputs."""

import argparse
import subprocess
import sys

import pytest

from scripts import common
from tests.conftest import tiny_model, write_run


def test_importing_the_helpers_imports_no_torch():
    """The engine's worker imports them, and must hold the engine's OpenMP runtime alone."""
    pytest.importorskip("ctranslate2")
    code = "import sys, scripts.engine_worker; print('torch' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=common.REPO, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_ctranslate2_is_timed_in_its_own_process_with_the_engine_s_outputs(tmp_path):
    ctranslate2 = pytest.importorskip("ctranslate2")
    from seq2seq.export.ctranslate2 import export_ctranslate2
    from seq2seq.runs.load import load_run

    run = write_run(tmp_path / "run", lambda v: tiny_model(vocab_size=v))
    engine_dir = export_ctranslate2(run, tmp_path / "ct2")
    _, tokenizer = load_run(run)
    pieces = [
        tokenizer.id_pieces(ids) for ids in tokenizer.encode(["a dog runs", "two men sit", "a red car"])
    ]
    jobs = [{"beam": beam, "min_decoding_length": 1, "max_decoding_length": 6} for beam in (1, 2)]
    args = argparse.Namespace(threads=1, batch_size=2, repeats=2)
    answers = common.time_ctranslate2(engine_dir, "float32", pieces, jobs, args)
    engine = ctranslate2.Translator(str(engine_dir), device="cpu", intra_threads=1)
    for job, (seconds, outputs) in zip(jobs, answers, strict=True):
        expected = engine.translate_batch(pieces, beam_size=job["beam"], max_decoding_length=6)
        assert seconds > 0
        assert outputs == [r.hypotheses[0] for r in expected]
