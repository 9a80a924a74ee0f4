"""ONNX Runtime through optimum, beside our decoder and CTranslate2, on the same weights: the run is
exported with `seq2seq export --to huggingface`, that directory is converted to ONNX by optimum
(`ORTModelForSeq2SeqLM.from_pretrained(..., export=True)`, what `optimum-cli export onnx` does),
and the three decode the same sentences in the same length-sorted batches, each output forced to
exactly --forced-len pieces (then EOS), so that every engine does the same work whatever the
model's quality. The engines take turns, one pass each per repeat; each figure is the median.
CTranslate2 runs in a process of its own (scripts/engine_worker.py, started for each pass), as
`python -m scripts.bench_decode --against ctranslate2` times it: no PyTorch shares its cores.

optimum-onnx pins transformers < 4.58, so this runs in an environment of its own, which sees the
installed seq2seq (and its ct2 and hf extras) through --system-site-packages; from the
repository root:

    python -m venv --system-site-packages /tmp/onnxenv
    /tmp/onnxenv/bin/pip install "optimum-onnx[onnxruntime]"
    /tmp/onnxenv/bin/python -m scripts.bench_onnx --run runs/multi30k-en-fr \\
        --data-dir ../shared/corpora/multi30k

A gated (SwiGLU) run, the `small` preset's default, is refused in one line: its
exported folder needs its shipped modeling_gated.py (trust_remote_code), and optimum's ONNX export
of that remote code has not been checked against ours here; benchmark a ReLU run (the tiny
preset, which docs/export.md's ONNX figures were measured on, or `--ffn relu`).
"""

import argparse
import os
import statistics
import tempfile
from pathlib import Path

import torch

from scripts.against_hf import generate
from scripts.bench_decode import measure
from scripts.common import cpu, time_ctranslate2
from seq2seq.data.batch import pad
from seq2seq.data.corpus import load_pairs
from seq2seq.data.special import BOS_ID, PAD_ID
from seq2seq.decoding.search import DecodeOptions, source_ids
from seq2seq.export.ctranslate2 import export_ctranslate2
from seq2seq.export.huggingface import export_huggingface
from seq2seq.runs.files import load_config, model_config
from seq2seq.runs.load import load_run


def refusal(run: Path) -> str | None:
    """Why this run is not benchmarked here, or None: a gated block's export is remote code that
    optimum would run unchecked (above)."""
    if getattr(model_config(load_config(run)), "ffn", "relu") != "relu":  # an RNN: the export refuses it
        return f"{run} has a gated (SwiGLU) feed-forward block; this benchmark covers ReLU runs (--ffn relu)"
    return None


def main() -> None:
    args = parse_args()
    if why := refusal(args.run):
        raise SystemExit(f"bench_onnx: {why}")
    torch.set_num_threads(args.threads)
    import ctranslate2
    import onnxruntime
    import optimum.onnxruntime
    import transformers

    model, tokenizer = load_run(args.run)
    pairs = load_pairs("multi30k", args.split, "en", "fr", args.data_dir)[: args.sentences]
    sources = source_ids(model, tokenizer, [src for src, _ in pairs])[0]
    print(f"CPU: {cpu()}, {args.threads} threads, torch {torch.__version__}")
    print(
        f"transformers {transformers.__version__}, optimum-onnx, onnxruntime {onnxruntime.__version__}, "
        f"CTranslate2 {ctranslate2.__version__}"
    )
    n, steps = len(sources), args.forced_len
    print(f"{n} sentences of {args.split}, batch {args.batch_size}, outputs forced to {steps} pieces")
    with tempfile.TemporaryDirectory() as tmp:
        hf_dir = export_huggingface(args.run, Path(tmp) / "hf")
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads, options.inter_op_num_threads = args.threads, 1
        ort = optimum.onnxruntime.ORTModelForSeq2SeqLM.from_pretrained(
            hf_dir, export=True, session_options=options, provider="CPUExecutionProvider"
        )
        gap = difference(ort, model, sources)
        print(f"ONNX model of the exported directory: teacher-forced logits within {gap:.1e} of ours")
        engine_dir = export_ctranslate2(args.run, Path(tmp) / "ct2")
        pieces = [tokenizer.id_pieces(ids[:-1]) for ids in sources]  # the engine adds </s>
        print(f"load average before: {os.getloadavg()[0]:.1f} (the machine's other work slows every engine)")
        print("| search | seq2seq sent/s | ONNX Runtime sent/s | CTranslate2 sent/s | identical: ORT | CT2 |")
        print("|---|---|---|---|---|---|")
        once = argparse.Namespace(**{**vars(args), "repeats": 1})
        for beam in args.beams:
            options = DecodeOptions(beam=beam, min_len=steps, max_len=steps, batch_size=args.batch_size)
            job = {"beam": beam, "min_decoding_length": steps + 1, "max_decoding_length": steps + 1}
            times = {"ours": [], "ort": [], "ct2": []}
            for _ in range(args.repeats):  # interleaved, so that a change of load hits all three alike
                seconds, _, ours = measure(model, sources, options, 1)
                times["ours"].append(seconds)
                seconds, ort_out = generate(ort, sources, beam, once, steps + 1)  # + the EOS step, as ours
                times["ort"].append(seconds)
                [(seconds, ct2_pieces)] = time_ctranslate2(engine_dir, "float32", pieces, [job], once)
                times["ct2"].append(seconds)
                ct2_out = [[tokenizer.sp.PieceToId(p) for p in out] for out in ct2_pieces]
            same = [
                sum(a[:steps] == b for a, b in zip(out, ours, strict=True)) / n for out in (ort_out, ct2_out)
            ]
            speeds = " | ".join(f"{n / statistics.median(t):.1f}" for t in times.values())
            search = "greedy" if beam == 1 else f"beam {beam}"
            print(f"| {search} | {speeds} | {same[0]:.0%} | {same[1]:.0%} |", flush=True)
        print(f"load average after: {os.getloadavg()[0]:.1f}")


def difference(ort, model, sources) -> float:
    """Largest |logit| difference between the ONNX model and ours, teacher forcing."""
    src = pad(sources[:8])
    tgt = torch.randint(4, model.cfg.vocab_size, (src.size(0), 9), generator=torch.Generator().manual_seed(0))
    tgt[:, 0] = BOS_ID
    with torch.inference_mode():
        theirs = ort(input_ids=src, attention_mask=(src != PAD_ID).long(), decoder_input_ids=tgt).logits
        return (theirs - model(src, tgt)).abs().max().item()


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--run", required=True, help="run directory (a pre-LN or post-LN Transformer)")
    p.add_argument("--data-dir", help="Multi30k folder")
    p.add_argument("--split", default="test_2016_flickr")
    p.add_argument("--sentences", type=int, default=500)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--beams", type=int, nargs="+", default=[1, 5])
    p.add_argument("--forced-len", type=int, default=20)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    return p.parse_args()


if __name__ == "__main__":
    main()
