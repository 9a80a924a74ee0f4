"""Where a decode step's time goes, ours and CTranslate2's, on the same weights and sentences:
GEMMs (the linear layers and the output projection) against everything else, per decode step,
for greedy and beam 5, fp32 and int8. Run it under `scripts.isa` to see it as on an AVX2 CPU:

    python -m scripts.isa avx2 -- python -m scripts.profile_decode --run runs/multi30k-en-fr \
        --data-dir ../shared/corpora/multi30k

Every output is forced to a length, so both sides take the same number of steps; a step's time is
the slope of wall time against length (forced to --forced-len and to twice that, the median of
--repeats each), so the encoder and the set-up are not in it. Ours also goes through PyTorch's
profiler (one pass at --forced-len, the self time of each operator, grouped: GEMMs against the
rest). The engine runs in a process of its own (scripts/engine_worker.py, as bench_decode runs
it); its wheel is built without its profiler, so its step is timed whole.
"""

import argparse
import tempfile
from pathlib import Path

import torch

from scripts.common import cpu, length_sorted_batches, median_time, time_ctranslate2
from seq2seq.data.batch import pad
from seq2seq.data.corpus import load_pairs
from seq2seq.data.special import EOS_ID
from seq2seq.decoding.search import DecodeOptions, search
from seq2seq.export.ctranslate2 import export_ctranslate2
from seq2seq.models.packed import packed_if_faster
from seq2seq.models.quantize import quantize
from seq2seq.runs.load import load_run

OURS_GEMM = ("linear", "addmm", "aten::mm", "mkldnn", "quantized::", "fbgemm")
ENGINE_GEMM = ("Gemm", "gemm", "Dense")


def group(rows: list[tuple[str, float]], gemm: tuple[str, ...]) -> dict[str, float]:
    """Self time (s) of the GEMM operators and of everything else."""
    out = {"GEMM": 0.0, "other": 0.0}
    for name, seconds in rows:
        out["GEMM" if any(g in name for g in gemm) else "other"] += seconds
    return out


def ours(model, sources, beam: int, steps: int, args) -> tuple[float, float, list]:
    """Seconds a step (the slope), the GEMMs' share of the profiled self time, the top operators."""
    from torch.profiler import ProfilerActivity, profile

    batches = [pad([sources[i] for i in rows]) for rows in length_sorted_batches(sources, args.batch_size)]
    times = []
    with torch.inference_mode():
        for length in (steps, 2 * steps):
            options = DecodeOptions(beam=beam, min_len=length, max_len=length, batch_size=args.batch_size)
            search(model, batches[0][:2], options)
            times.append(
                median_time(lambda o=options: [search(model, b, o) for b in batches], args.repeats)[0]
            )
        options = DecodeOptions(beam=beam, min_len=steps, max_len=steps, batch_size=args.batch_size)
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            for b in batches:
                search(model, b, options)
    rows = [(e.key, e.self_cpu_time_total / 1e6) for e in prof.key_averages()]
    groups = group(rows, OURS_GEMM)
    top = sorted(rows, key=lambda r: -r[1])[:4]
    return (times[1] - times[0]) / (len(batches) * steps), groups["GEMM"] / sum(groups.values()), top


def engine(folder: Path, compute_type: str, pieces, beam: int, steps: int, args) -> float:
    """Seconds a step of the engine (the slope), timed by scripts/engine_worker.py."""
    jobs = [{"beam": beam, "min_decoding_length": n, "max_decoding_length": n} for n in (steps, 2 * steps)]
    (short, _), (long, _) = time_ctranslate2(folder, compute_type, pieces, jobs, args)
    return (long - short) / (-(-len(pieces) // args.batch_size) * steps)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--run", required=True)
    p.add_argument("--data-dir", required=True)
    p.add_argument("--sentences", type=int, default=256)
    p.add_argument("--forced-len", type=int, default=20)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    model, tokenizer = load_run(args.run)
    lines = [s for s, _ in load_pairs("multi30k", "test_2016_flickr", "en", "fr", args.data_dir)][
        : args.sentences
    ]
    sources = [[*ids, EOS_ID] for ids in tokenizer.encode(lines)]
    pieces = [tokenizer.id_pieces(ids[:-1]) for ids in sources]
    print(f"CPU: {cpu()}; torch {torch.__version__}, capability {torch.backends.cpu.get_cpu_capability()}")
    print(
        f"{len(sources)} sentences, batch {args.batch_size}, {args.threads} threads, {args.forced_len} steps"
    )
    print("| precision | search | ours ms a step | engine ms a step | ours / engine time | our GEMM share | "
          "our top operators (self s) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    decoders = {"fp32": packed_if_faster(model), "int8": quantize(model, "int8")}
    with tempfile.TemporaryDirectory() as folder:
        export_ctranslate2(Path(args.run), Path(folder) / "ct2")
        for precision, decoder in decoders.items():
            for beam in (1, 5):
                name = "greedy" if beam == 1 else f"beam {beam}"
                step, share, top = ours(decoder, sources, beam, args.forced_len, args)
                theirs = engine(Path(folder) / "ct2", {"fp32": "float32", "int8": "int8"}[precision], pieces,
                                beam, args.forced_len, args)  # fmt: skip
                names = ", ".join(f"{n} {s:.2f}" for n, s in top)
                cells = [precision, name, f"{step * 1e3:.2f}", f"{theirs * 1e3:.2f}", f"{step / theirs:.2f}"]
                print("| " + " | ".join([*cells, f"{share:.0%}", names]) + " |")


if __name__ == "__main__":
    main()
