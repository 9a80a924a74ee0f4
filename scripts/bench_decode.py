"""Decoding speed: sentences/s and tokens/s for greedy and beam search, cached and uncached.

    python -m scripts.bench_decode --preset small --sentences 1000 --min-len 20 --max-len 20
    python -m scripts.bench_decode --run runs/multi30k-en-fr --data-dir ../shared/corpora/multi30k
    python -m scripts.bench_decode --run runs/multi30k-en-fr --data-dir ../shared/corpora/multi30k \
        --against ctranslate2     # + int8 (and bf16 where native) rows, BLEU, and HF generate()
    ... --against ctranslate2 --figure    # and keep its rows as the pages' figure

With --lengths 10 20 50 100 it adds a table of time per sentence against output length.
The model is a run's trained model (--run) or a freshly initialised one of a preset's shape
(--preset; random weights decode as fast as trained ones when the output length is forced with
--min-len/--max-len). Sources are a split's English side encoded with the run's tokenizer
(--data-dir/--split, or --input FILE), or random ids of --src-len pieces when there is no tokenizer.
Times are medians over --repeats runs, tokenization excluded; all rows come from one process.
"""

import argparse
import resource
import statistics

import torch

from scripts.common import cpu, length_sorted_batches, median_time
from seq2seq.allocator import keep_freed_memory
from seq2seq.data.batch import pad
from seq2seq.data.corpus import load_pairs
from seq2seq.data.special import EOS_ID
from seq2seq.decoding.search import DecodeOptions, search
from seq2seq.models.packed import packed_if_faster
from seq2seq.models.registry import build_model, preset_config
from seq2seq.models.transformer import PRESETS
from seq2seq.runs.load import load_run


def main() -> None:
    args = parse_args()
    if args.isa and not limited(args.isa):  # the limits are read at load: start again under them
        import os
        import sys

        from scripts.isa import LIMITS

        os.execve(sys.executable, [sys.executable, "-m", "scripts.bench_decode", *sys.argv[1:]],
                  {**os.environ, **LIMITS[args.isa]})  # fmt: skip
    if args.figure:  # before anything is measured: the stamp names the code that runs
        from scripts import figures

        if not args.against or args.run is None:
            raise SystemExit("--figure writes the comparison against CTranslate2: give --against and --run")
        args.commit = figures.clean_commit(figures.DEPENDS[figure_name(args)])
    keep_freed_memory()  # as `seq2seq` does at startup
    torch.set_num_threads(args.threads)
    model, tokenizer, sources, references = model_and_sources(args)
    print(f"CPU: {cpu()}, torch {torch.__version__}")
    print(
        f"{len(sources)} sentences, mean source length "
        f"{statistics.mean(map(len, sources)):.1f} pieces (EOS included), batch {args.batch_size}, "
        f"{args.threads} threads, output length {args.min_len}..{args.max_len or 'auto'}"
    )
    if args.against:
        if tokenizer is None:
            raise SystemExit("--against needs --run (the weights to export and the tokenizer)")
        from scripts.against_ctranslate2 import compare

        rows, notes = compare(model, tokenizer, args.run, sources, references, args, measure)
        if args.figure:
            write_figure(rows, notes, args)
        return
    decoder = model if args.no_pack else packed_if_faster(model)
    print(f"fp32 on packed GEMMs: {'yes' if decoder is not model else 'no'}")
    rows = []
    for beam in args.beams:
        for use_cache in (True, False) if not args.cached_only else (True,):
            n = len(sources) if use_cache else min(len(sources), args.uncached_sentences)
            options = DecodeOptions(
                beam=beam,
                min_len=args.min_len,
                max_len=args.max_len,
                use_cache=use_cache,
                batch_size=args.batch_size,
            )
            seconds, tokens, _ = measure(decoder, sources[:n], options, args.repeats)
            rows.append((beam, use_cache, n, n / seconds, tokens / seconds))
    print_table(rows)
    if args.lengths:
        length_table(decoder, sources[: args.batch_size], args)
    if args.profile:
        for beam in args.beams:
            profile(decoder, sources, DecodeOptions(beam=beam, min_len=args.min_len, max_len=args.max_len))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\npeak resident memory of this process: {peak:.0f} MiB")


def write_figure(rows: list[list[str]], notes: list[str], args) -> None:
    """The figure `decode-vs-ctranslate2` (scripts/figures.py) from the rows against the engine."""
    from scripts import figures

    columns = ["mode", "search", "precision", "ours sent/s", "CTranslate2 sent/s", "ratio"]
    columns += ["identical lines", "BLEU ours", "BLEU CTranslate2"]
    note = (
        f"{args.sentences} sentences of {args.split}, batch {args.batch_size}, {args.threads} threads, "
        f"the median of {args.repeats} runs; ratio: ours / the engine's speed. " + "; ".join(notes) + "."
    )
    if args.isa:
        held = f"`python -m scripts.isa {args.isa} --check`"
        note += f" Both engines held to {args.isa.upper()} (scripts/isa.py; {held} shows the kernels obey)."
    figures.record(figure_name(args), columns, rows, note, args.commit)


def figure_name(args) -> str:
    return "decode-vs-ctranslate2" + (f"-{args.isa}" if args.isa else "")


def limited(isa: str) -> bool:
    import os

    from scripts.isa import LIMITS

    return all(os.environ.get(k) == v for k, v in LIMITS[isa].items())


def length_table(model, sources: list[list[int]], args) -> None:
    """Milliseconds per sentence against forced output length: cached cost grows linearly with the
    length (each step attends over the prefix only), uncached quadratically (each step recomputes
    the whole prefix)."""
    print(f"\nms per sentence, one batch of {len(sources)}, output length forced")
    header = [f"{'search':<8}", f"{'cache':<5}", *(f"{n:>7}" for n in args.lengths)]
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("-" * (len(h) + 2) for h in header) + "|")
    for beam in args.beams:
        for use_cache in (True, False):
            cells = []
            for n in args.lengths:
                options = DecodeOptions(
                    beam=beam, min_len=n, max_len=n, use_cache=use_cache, batch_size=len(sources)
                )
                seconds, _, _ = measure(model, sources, options, 1)
                cells.append(f"{1000 * seconds / len(sources):>7.1f}")
            cache = "on" if use_cache else "off"
            print(f"| {search_name(beam):<8} | {cache:<5} | " + " | ".join(cells) + " |")


def profile(model, sources: list[list[int]], options: DecodeOptions) -> None:
    """Where the time goes: the operators that took the most time over one cached pass."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
        measure(model, sources, options, 1)
    print(f"\nprofile, {search_name(options.beam)}, cached, {len(sources)} sentences")
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=12))


def measure(model, sources: list[list[int]], options: DecodeOptions, repeats: int):
    """Median wall time of decoding every batch, the output tokens produced (EOS excluded), and
    each sentence's best output, in input order."""
    groups = length_sorted_batches(sources, options.batch_size)
    batches = [pad([sources[i] for i in rows]) for rows in groups]
    with torch.inference_mode():
        search(model, batches[0][:2], options)  # warm-up: allocator, kernels
        seconds, best = median_time(
            lambda: [h[0].tokens for batch in batches for h in search(model, batch, options)], repeats
        )
    outputs = [[] for _ in sources]
    for i, tokens in zip((i for rows in groups for i in rows), best, strict=True):
        outputs[i] = tokens
    return seconds, sum(map(len, best)), outputs


def model_and_sources(args):
    """The model, its tokenizer (None without --run), the sources as ids, and their references
    (the split's target side; None for --input or random sources)."""
    references = None
    if args.run:
        model, tokenizer = load_run(args.run)
    else:
        tokenizer = None
        model = build_model(preset_config("transformer", args.preset, vocab_size=args.vocab_size)).eval()
    if tokenizer is not None and (args.input or args.data_dir):
        if args.input:
            with open(args.input, encoding="utf-8") as f:
                lines = f.read().splitlines()
        else:
            pairs = load_pairs("multi30k", args.split, "en", "fr", args.data_dir)[: args.sentences]
            lines, references = [src for src, _ in pairs], [tgt for _, tgt in pairs]
        sources = [[*ids, EOS_ID] for ids in tokenizer.encode(lines[: args.sentences])]
    else:
        g = torch.Generator().manual_seed(0)
        vocab = model.cfg.vocab_size
        sources = [
            [*torch.randint(4, vocab, (args.src_len - 1,), generator=g).tolist(), EOS_ID]
            for _ in range(args.sentences)
        ]
    return model, tokenizer, sources, references


def print_table(rows) -> None:
    cached = {beam: sps for beam, use_cache, _, sps, _ in rows if use_cache}
    print(
        f"| {'search':<8} | {'cache':<5} | {'sentences':>9} | {'sent/s':>8} | {'tokens/s':>9} | "
        f"{'cached speed-up':>15} |"
    )
    print(f"|{'-' * 10}|{'-' * 7}|{'-' * 11}|{'-' * 10}|{'-' * 11}|{'-' * 17}|")
    for beam, use_cache, n, sps, tps in rows:
        name = search_name(beam)
        speedup = "" if use_cache else f"{cached[beam] / sps:.1f}x"
        print(
            f"| {name:<8} | {'on' if use_cache else 'off':<5} | {n:>9} | {sps:>8.1f} | {tps:>9.0f} | "
            f"{speedup:>15} |"
        )


def search_name(beam: int) -> str:
    return "greedy" if beam == 1 else f"beam {beam}"


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--run", help="run directory with a trained model and tokenizer")
    p.add_argument("--preset", default="small", choices=list(PRESETS), help="shape without --run")
    p.add_argument("--vocab-size", type=int, default=8000, help="vocabulary without --run")
    p.add_argument("--input", help="text file of source sentences (needs --run for the tokenizer)")
    p.add_argument("--data-dir", help="Multi30k folder (needs --run for the tokenizer)")
    p.add_argument("--split", default="test_2016_flickr")
    p.add_argument("--sentences", type=int, default=1000)
    p.add_argument("--src-len", type=int, default=16, help="random source length without text")
    p.add_argument("--uncached-sentences", type=int, default=200, help="the uncached path is slow")
    p.add_argument("--beams", type=int, nargs="+", default=[1, 5])
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--min-len", type=int, default=0)
    p.add_argument("--max-len", type=int, default=None)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--cached-only", action="store_true")
    p.add_argument("--no-pack", action="store_true", help="fp32 on F.linear, not packed GEMMs (the CLI's)")
    p.add_argument("--profile", action="store_true", help="also print the top operators (cached)")
    p.add_argument("--against", choices=["ctranslate2"], help="the C++ engine on the same weights")
    p.add_argument("--isa", choices=["avx2"], help="both engines held to this ISA (scripts/isa.py)")
    p.add_argument("--forced-len", type=int, default=20, help="output length of --against's forced mode")
    p.add_argument(
        "--figure",
        action="store_true",
        help="with --against: write docs/figures/decode-vs-ctranslate2.json (scripts/figures.py)",
    )
    p.add_argument(
        "--lengths",
        type=int,
        nargs="*",
        default=[],
        help="also time one batch at these forced output lengths, e.g. 10 20 50 100",
    )
    return p.parse_args()


if __name__ == "__main__":
    main()
