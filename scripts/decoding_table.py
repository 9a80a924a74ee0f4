"""The tables of docs/decoding.md, from one run on one split, in one process: what each way of
decoding gives (BLEU, chrF, sentences a second) and what steering costs.

1. Quality: greedy, beam 5, sampling (plain, top-p 0.9, epsilon 0.02) and minimum Bayes risk
   (MBR: among N candidates, the one with the highest mean chrF against the others, Eikema &
   Aziz 2020; candidates drawn by epsilon sampling as Freitag et al. 2023 recommend, or the
   beam's n-best). Sampling settings are the literature's, fixed before this was run: nothing here
   is tuned on the split it reports.
2. Cost: a forced prefix (each line's reference's first --prefix-words words, as a user would type
   them) against free decoding, greedy and beam 5, seconds per line; and the beam's record on
   against off.

    python -m scripts.decoding_table --run runs/multi30k-en-fr --data-dir ../shared/corpora/multi30k
"""

import argparse
import statistics
import time
from pathlib import Path

import sacrebleu
import torch
from sacrebleu.metrics import CHRF

from scripts.common import cpu
from seq2seq.data.corpus import load_pairs
from seq2seq.decoding.search import DecodeOptions, translate
from seq2seq.runs.files import load_config
from seq2seq.runs.load import load_run

SENTENCE_CHRF = CHRF()


def mbr(candidates: list[str]) -> str:
    """The candidate with the highest mean sentence chrF against the other candidates."""
    if len(candidates) == 1:
        return candidates[0]
    best, best_utility = candidates[0], -1.0
    for i, hyp in enumerate(candidates):
        others = [c for j, c in enumerate(candidates) if j != i]
        utility = sum(SENTENCE_CHRF.sentence_score(hyp, [c]).score for c in others) / len(others)
        if utility > best_utility:
            best, best_utility = hyp, utility
    return best


def quality_rows(model, tokenizer, sources, refs, args) -> list[tuple[str, list[str], float]]:
    """(name, outputs, seconds) per way of decoding."""
    sampled = dict(sample=True, beam=1, seed=args.seed, batch_size=args.batch_size)
    ways = {
        "greedy": DecodeOptions(beam=1, batch_size=args.batch_size),
        "beam 5": DecodeOptions(beam=5, batch_size=args.batch_size),
        "sampling, temperature 1": DecodeOptions(**sampled),
        "sampling, top-p 0.9": DecodeOptions(**sampled, top_p=0.9),
        "sampling, epsilon 0.02": DecodeOptions(**sampled, epsilon=0.02),
    }
    rows = []
    for name, options in ways.items():
        start = time.perf_counter()
        rows.append((name, translate(model, tokenizer, sources, options).best, time.perf_counter() - start))
    for n in args.mbr:
        start = time.perf_counter()
        drawn = translate(model, tokenizer, sources, DecodeOptions(**sampled, epsilon=0.02, num_samples=n))
        outputs = [mbr([t for t, _ in hyps]) if hyps else "" for hyps in drawn.nbest]
        rows.append((f"MBR (chrF) over {n} epsilon-0.02 samples", outputs, time.perf_counter() - start))
    start = time.perf_counter()
    beam = translate(model, tokenizer, sources, DecodeOptions(beam=5, nbest=5, batch_size=args.batch_size))
    outputs = [mbr([t for t, _ in hyps]) if hyps else "" for hyps in beam.nbest]
    rows.append(("MBR (chrF) over the beam-5 n-best", outputs, time.perf_counter() - start))
    return rows


def cost_rows(model, tokenizer, sources, refs, args) -> list[tuple[str, float, float]]:
    """(name, seconds per line, BLEU): free against prefixed, and the beam's record off and on.
    The ways take turns, repeat after repeat, so that a slow spell of the machine falls on all of
    them alike; each row is its median."""
    prefixes = [" ".join(ref.split()[: args.prefix_words]) for ref in refs]
    ways = []
    for beam in (1, 5):
        search = "greedy" if beam == 1 else "beam 5"
        ways.append((f"{search}, free", beam, {}))
        ways.append((f"{search}, prefix ({args.prefix_words} words)", beam, {"prefixes": prefixes}))
        if beam > 1:
            ways.append((f"{search}, beam trace on", beam, {"trace": True}))
    times: dict[str, list[float]] = {name: [] for name, _, _ in ways}
    outputs = {}
    for _ in range(args.repeats + 1):  # the first round warms up
        for name, beam, kwargs in ways:
            options = DecodeOptions(beam=beam, batch_size=args.batch_size)
            start = time.perf_counter()
            outputs[name] = translate(model, tokenizer, sources, options, **kwargs).best
            times[name].append(time.perf_counter() - start)
    return [
        (
            name,
            statistics.median(times[name][1:]) / len(sources),
            sacrebleu.corpus_bleu(outputs[name], [refs]).score,
        )
        for name, _, _ in ways
    ]


def main() -> None:
    args = parse_args()
    torch.set_num_threads(args.threads)
    cfg = load_config(args.run)["train"]
    pairs = load_pairs("multi30k", args.split, cfg["src"], cfg["tgt"], args.data_dir)[: args.lines]
    sources, refs = [s for s, _ in pairs], [t for _, t in pairs]
    model, tokenizer = load_run(args.run, "cpu", packed=True)  # as `seq2seq translate` decodes
    print(f"CPU: {cpu()}, torch {torch.__version__}, {args.threads} threads")
    print(f"{args.run}, {args.split} ({len(pairs)} lines), batch {args.batch_size}, seed {args.seed}")
    if not args.cost_only:
        print(f"\n{'decoding':<44} {'BLEU':>6} {'chrF':>6} {'sent/s':>7}")
        for name, outputs, seconds in quality_rows(model, tokenizer, sources, refs, args):
            bleu = sacrebleu.corpus_bleu(outputs, [refs]).score
            chrf = sacrebleu.corpus_chrf(outputs, [refs]).score
            print(f"{name:<44} {bleu:6.2f} {chrf:6.2f} {len(sources) / seconds:7.1f}")
    print(f"\n{'cost (median of ' + str(args.repeats) + ', taking turns)':<44} {'ms/line':>8} {'BLEU':>6}")
    rows = cost_rows(model, tokenizer, sources, refs, args)
    for name, per_line, bleu in rows:
        print(f"{name:<44} {1000 * per_line:8.2f} {bleu:6.2f}")
    free = {name.split(",")[0]: t for name, t, _ in rows if name.endswith("free")}
    for name, per_line, _ in rows:
        if not name.endswith("free"):
            print(f"{name}: {per_line / free[name.split(',')[0]]:.2f}x the free decoding's time per line")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, required=True)
    parser.add_argument("--data-dir")
    parser.add_argument("--split", default="test_2016_flickr")
    parser.add_argument("--lines", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--mbr", type=int, nargs="*", default=[8, 16], help="candidates per line")
    parser.add_argument("--prefix-words", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--cost-only", action="store_true")
    return parser.parse_args()


if __name__ == "__main__":
    main()
