"""CTranslate2 timed in a process of its own, with no PyTorch in it: two OpenMP runtimes in one
process compete for the same cores (measured on an AVX512 machine, running the engine beside
PyTorch halved its speed), and a user runs the engine alone.

scripts.common.time_ctranslate2 starts it (`python -m scripts.engine_worker`) with a JSON request
on stdin:
    {"model": dir, "compute_type": ..., "threads": n, "batch_size": n, "repeats": n,
     "jobs": [{"beam": k, "min_decoding_length": a, "max_decoding_length": b}, ...],
     "pieces": [[piece, ...], ...]}
and reads one JSON line per job from stdout: {"seconds": median, "outputs": [[piece, ...], ...]}.
"""

import json
import sys

import ctranslate2

from scripts.common import median_time


def main() -> None:
    request = json.load(sys.stdin)
    engine = ctranslate2.Translator(
        request["model"],
        device="cpu",
        intra_threads=request["threads"],
        inter_threads=1,
        compute_type=request["compute_type"],
    )
    pieces = request["pieces"]
    for job in request["jobs"]:
        limits = {k: job[k] for k in ("min_decoding_length", "max_decoding_length")}
        options = {"beam_size": job["beam"], **limits}
        engine.translate_batch(pieces[:2], **options)  # warm-up
        seconds, results = median_time(
            lambda options=options: engine.translate_batch(
                pieces, max_batch_size=request["batch_size"], **options
            ),
            request["repeats"],
        )
        outputs = [r.hypotheses[0] for r in results]
        print(json.dumps({"seconds": seconds, "outputs": outputs}), flush=True)


if __name__ == "__main__":
    main()
