"""Measurements behind one decision each, kept so that the decision can be checked again on
another machine or torch: what was measured and not built (compiled decode steps, decoding levers
beyond beam search), or the evidence for a choice the code makes (the fused loss on CPUs only,
attention without cuDNN's kernel under dropout, batches ordered by the sides). Each runs from the
repository root, `python -m scripts.experiments.bench_loss`; the benchmarks of standing speed and
memory targets are in scripts/."""
