"""CTranslate2 timed in a process of its own, with no PyTorch in it: two OpenMP runtimes in one
process compete for the same cores (measured on an AVX512 machine, running the engine beside
PyTorch halved its speed), and a user runs the engine alone.

against_ctranslate2.py starts it with a JSON request on stdin:
    {"model": dir, "compute_type": ..., "threads": n, "batch_size": n, "repeats": n,
     "jobs": [{"beam": k, "min_decoding_length": a, "max_decoding_length": b}, ...],
     "pieces": [[piece, ...], ...]}
and reads one JSON line per job from stdout: {"seconds": median, "outputs": [[piece, ...], ...]}.
"""

import json
import statistics
import sys
import time


def main() -> None:
    import ctranslate2  # here, not at import time: this file is also read by tests for its doc

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
        engine.translate_batch(pieces[:2], beam_size=job["beam"], **limits)  # warm-up
        times = []
        for _ in range(request["repeats"]):
            start = time.perf_counter()
            results = engine.translate_batch(
                pieces, beam_size=job["beam"], max_batch_size=request["batch_size"], **limits
            )
            times.append(time.perf_counter() - start)
        outputs = [r.hypotheses[0] for r in results]
        print(json.dumps({"seconds": statistics.median(times), "outputs": outputs}), flush=True)


if __name__ == "__main__":
    main()
