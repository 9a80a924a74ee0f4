"""Benchmarks, experiments and the tools that regenerate the docs' figures. Each runs from the
repository root as a module, `python -m scripts.bench_decode ...`, and imports what the scripts
share from scripts.common."""
