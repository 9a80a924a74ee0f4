"""`bench_decode.py --against ctranslate2`: our decoder and the C++ engine on the same weights (the
run exported with `seq2seq export`), the same sentences, batch size and thread count, in one
process, two modes:

- forced: every output exactly --forced-len pieces (ours: that many pieces, then the EOS step; the
  engine: the same number of decoder steps, since its length limit counts no EOS step; lines are
  compared on their first --forced-len pieces);
- free: real decoding of the sentences, each side ending when it emits EOS.

Each row: sentences/s for both (median of --repeats), their ratio, and the share of output lines
that are identical token for token. Beam search agrees less often than greedy: the engine
divides scores by length^alpha, we by ((5 + length) / 6)^alpha.
"""

import statistics
import tempfile
import time
from pathlib import Path

from seq2seq.decode import DecodeOptions
from seq2seq.export import export_ctranslate2


def compare(model, tokenizer, run: str, sources: list[list[int]], args, measure) -> None:
    """`measure` is bench_decode's: (median seconds, tokens, outputs in input order)."""
    import ctranslate2

    with tempfile.TemporaryDirectory() as tmp:
        engine_dir = export_ctranslate2(run, Path(tmp) / "model")
        engine = ctranslate2.Translator(
            str(engine_dir), device="cpu", intra_threads=args.threads, inter_threads=1
        )
        pieces = [tokenizer.id_pieces(ids[:-1]) for ids in sources]  # the engine adds </s>
        print(
            f"\nagainst CTranslate2 {ctranslate2.__version__}, fp32, same weights, {len(sources)} sentences"
        )
        print("| mode | search | seq2seq sent/s | CTranslate2 sent/s | ratio | identical lines |")
        print("|---|---|---|---|---|---|")
        for mode, (ours_len, engine_len) in {
            f"forced {args.forced_len}": (args.forced_len, args.forced_len + 1),
            "free": (None, None),
        }.items():
            for beam in args.beams:
                options = DecodeOptions(
                    beam=beam, min_len=ours_len or 0, max_len=ours_len, batch_size=args.batch_size
                )
                ours_s, _, ours_out = measure(model, sources, options, args.repeats)
                limits = {"min_decoding_length": engine_len or 1, "max_decoding_length": engine_len or 256}
                engine_s, engine_out = _engine(engine, tokenizer, pieces, beam, args, limits)
                if ours_len:  # the engine's extra step is the one we spend on EOS
                    engine_out = [out[:ours_len] for out in engine_out]
                same = sum(a == b for a, b in zip(ours_out, engine_out, strict=True)) / len(sources)
                n = len(sources)
                print(
                    f"| {mode} | {'greedy' if beam == 1 else f'beam {beam}'} | {n / ours_s:.1f} | "
                    f"{n / engine_s:.1f} | {engine_s / ours_s:.2f} | {same:.1%} |",
                    flush=True,
                )


def _engine(engine, tokenizer, pieces, beam: int, args, limits: dict):
    """Median seconds of translating everything, and the outputs as id lists (in input order)."""
    times, outputs = [], []
    engine.translate_batch(pieces[:2], beam_size=beam, **limits)  # warm-up
    for _ in range(args.repeats):
        start = time.perf_counter()
        results = engine.translate_batch(pieces, beam_size=beam, max_batch_size=args.batch_size, **limits)
        times.append(time.perf_counter() - start)
        outputs = [[tokenizer.sp.PieceToId(p) for p in r.hypotheses[0]] for r in results]
    return statistics.median(times), outputs
