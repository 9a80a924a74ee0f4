"""`python -m scripts.bench_decode --against ctranslate2`: our decoder and the C++ engine on the
same weights (the run exported with `seq2seq export`), the same sentences, batch size and thread
count, two modes:

- forced: every output exactly --forced-len pieces (ours: that many pieces, then the EOS step; the
  engine: the same number of decoder steps, since its length limit counts no EOS step; lines are
  compared on their first --forced-len pieces);
- free: real decoding of the sentences, each side ending when it emits EOS.

and each precision both sides have: fp32 (ours on packed GEMMs where they are measured faster,
as the CLI decodes; --no-pack for the plain path); int8 (ours `--quantize int8`, PyTorch's dynamic int8;
the engine's compute_type int8); bf16 where the CPU computes it natively (ours autocast, the
engine's bfloat16). Each row: sentences/s for both (median of --repeats), their ratio, the share
of output lines that are identical token for token, and in free mode, when the split's references
are at hand, each side's BLEU, so that int8's cost in quality stands next to its speed.
Ours is timed in this process, the engine in a process of its own (scripts/engine_worker.py),
one after the other, so neither shares its cores with the other's threads.
Beam search agrees less often than greedy: the engine divides scores by length^alpha, we by
((5 + length) / 6)^alpha. Hugging Face `generate()` on the same weights follows
(scripts/against_hf.py).
"""

import contextlib
import tempfile
import time
from pathlib import Path

import torch

from scripts.against_hf import generate, hf_model
from scripts.common import time_ctranslate2
from seq2seq.decoding.search import DecodeOptions
from seq2seq.device import use_bf16
from seq2seq.evaluate import score
from seq2seq.export.ctranslate2 import export_ctranslate2
from seq2seq.models.packed import packed_if_faster
from seq2seq.models.quantize import quantize

HEADER = (
    "| mode | search | precision | seq2seq sent/s | {peer} sent/s | ratio | identical lines "
    "| BLEU seq2seq | BLEU {peer} |"
)


def compare(model, tokenizer, run: str, sources, references, args, measure) -> tuple[list, list[str]]:
    """`measure` is bench_decode's: (median seconds, tokens, outputs in input order);
    `references`: the target side of the sentences, or None (no BLEU column). Returns the rows
    against the engine (as the table prints them) and the notes printed above them."""
    import ctranslate2

    fp32, packing_ms = _timed(lambda: model if args.no_pack else packed_if_faster(model))
    int8, quantizing_ms = _timed(lambda: quantize(model, "int8"))
    precisions = {  # name: (our model, the context it decodes in, the engine's compute_type)
        "fp32": (fp32, contextlib.nullcontext, "float32"),
        "int8": (int8, contextlib.nullcontext, "int8"),
    }
    if use_bf16(torch.device("cpu"), True):
        # the engine has no bf16 on most CPUs: then our best mode meets its best mode, int8
        native = "bfloat16" in ctranslate2.get_supported_compute_types("cpu")
        name, peer = ("bf16", "bfloat16") if native else ("bf16 vs its int8", "int8")
        precisions[name] = (model, lambda: torch.autocast("cpu", torch.bfloat16), peer)
        bf16_note = "" if native else "the engine has no bfloat16 on this CPU: our bf16 against its int8"
    else:
        bf16_note = (
            "bf16 rows skipped: bf16 is not faster than fp32 on this CPU (seq2seq.device.use_bf16 "
            "measures it)"
        )
    bleu = _bleu(tokenizer, references)
    modes = {f"forced {args.forced_len}": (args.forced_len, args.forced_len + 1), "free": (None, None)}
    rows, notes = [], []
    with tempfile.TemporaryDirectory() as tmp:
        engine_dir = export_ctranslate2(run, Path(tmp) / "model")
        pieces = [tokenizer.id_pieces(ids[:-1]) for ids in sources]  # the engine adds </s>
        print(f"\nagainst CTranslate2 {ctranslate2.__version__}, same weights, {len(sources)} sentences")
        packing = (
            "off (--no-pack)" if fp32 is model else f"on ({packing_ms:.0f} ms to pack the weights at load)"
        )
        if fp32 is model and not args.no_pack:
            packing = "off: packed GEMMs are not measured faster on this CPU"
        notes = [f"CTranslate2 {ctranslate2.__version__}", f"our fp32 on packed GEMMs: {packing}"]
        notes += [bf16_note] if bf16_note else []
        print(f"our fp32 on packed GEMMs: {packing}; int8: {quantizing_ms:.0f} ms to quantize at load")
        if bf16_note:
            print(bf16_note)
        print(HEADER.format(peer="CTranslate2"))
        print("|---" * 9 + "|")
        ours_fp32 = {}
        for name, (ours, context, compute_type) in precisions.items():
            jobs, timed = [], []
            for mode, (ours_len, engine_len) in modes.items():
                for beam in args.beams:
                    options = DecodeOptions(
                        beam=beam, min_len=ours_len or 0, max_len=ours_len, batch_size=args.batch_size
                    )
                    with context():
                        ours_s, _, ours_out = measure(ours, sources, options, args.repeats)
                    if name == "fp32":
                        ours_fp32[mode, beam] = ours_s, ours_out
                    timed.append((mode, beam, ours_len, ours_s, ours_out))
                    jobs.append(
                        {
                            "beam": beam,
                            "min_decoding_length": engine_len or 1,
                            "max_decoding_length": engine_len or 256,
                        }
                    )
            engine = time_ctranslate2(engine_dir, compute_type, pieces, jobs, args)
            for (mode, beam, ours_len, ours_s, ours_out), (engine_s, engine_pieces) in zip(
                timed, engine, strict=True
            ):
                engine_out = [[tokenizer.sp.PieceToId(p) for p in out] for out in engine_pieces]
                if ours_len:  # the engine's extra step is the one we spend on EOS
                    engine_out = [out[:ours_len] for out in engine_out]
                scores = (bleu(ours_out), bleu(engine_out)) if not ours_len else ("", "")
                rows.append(
                    _row(mode, beam, name, len(sources), ours_s, engine_s, ours_out, engine_out, scores)
                )
    _against_hf(model, sources, modes, ours_fp32, bleu, args)
    return rows, notes


def _against_hf(model, sources, modes, ours_fp32, bleu, args) -> None:
    """The second peer, fp32 only: our fp32 rows (already timed) against HF generate()."""
    hf, note = hf_model(model)
    print(f"\n{note}")
    if hf is None:
        return
    print(HEADER.format(peer="HF generate"))
    print("|---" * 9 + "|")
    for mode, (ours_len, steps) in modes.items():
        for beam in args.beams:
            ours_s, ours_out = ours_fp32[mode, beam]
            hf_s, hf_out = generate(hf, sources, beam, args, steps)
            if ours_len:
                hf_out = [out[:ours_len] for out in hf_out]
            scores = (bleu(ours_out), bleu(hf_out)) if not ours_len else ("", "")
            _row(mode, beam, "fp32", len(sources), ours_s, hf_s, ours_out, hf_out, scores)


def _row(mode, beam, precision, n, ours_s, peer_s, ours_out, peer_out, scores) -> list[str]:
    """Print a table row; its cells."""
    same = sum(a == b for a, b in zip(ours_out, peer_out, strict=True)) / n
    search = "greedy" if beam == 1 else f"beam {beam}"
    cells = [mode, search, precision, f"{n / ours_s:.1f}", f"{n / peer_s:.1f}", f"{peer_s / ours_s:.2f}"]
    cells += [f"{same:.1%}", str(scores[0]), str(scores[1])]
    print("| " + " | ".join(cells) + " |", flush=True)
    return cells


def _timed(build):
    """What `build()` returns, and the milliseconds it took."""
    start = time.perf_counter()
    result = build()
    return result, 1000 * (time.perf_counter() - start)


def _bleu(tokenizer, references):
    """outputs (id lists) -> their sacreBLEU score as text, or "" when there are no references."""
    if references is None:
        return lambda outputs: ""
    return lambda outputs: f"{score(tokenizer.decode(outputs), references).bleu:.2f}"
