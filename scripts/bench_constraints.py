"""The terminology test (after Dinu et al. 2019), built from Multi30k's test sets: does every
output hold its terms, what do they do to BLEU and chrF, and what do they cost?

Construction, fixed before anything was measured: translate each test sentence with the plain
beam; its terms are the first one (or two) words of its reference, in reading order, of at least
four letters, not on a short list of French function words, and missing from the plain output
(compared as lowercase words). A sentence with no such word is left out; the counts are printed.
The constrained beam then translates the same sentences with those words as `--constraint`s, and
both are scored against the references on exactly those sentences.

Speed: sentences a second with 0, 1, 2 and 4 constraints (the first words of each reference that
pass the same filter, present in the plain output or not) over the same sentences, the settings
alternated over `--rounds` (the median taken), and each a ratio of the plain beam's speed.

    python -m scripts.bench_constraints --run runs/multi30k-en-fr --data-dir "$SEQ2SEQ_DATA_DIR" --figure
"""

import argparse
import gzip
import re
import statistics
import time
from pathlib import Path

import torch

from scripts.common import cpu
from seq2seq.decoding.search import DecodeOptions, translate
from seq2seq.decoding.terms import Terms
from seq2seq.evaluate import score
from seq2seq.runs.load import load_run

SPLITS = ("test_2016_flickr", "test_2017_flickr")
WORD = re.compile(r"[^\W\d_]{4,}")  # letters only, four or more
FUNCTION_WORDS = {  # French words of four letters or more that are no term
    *("dans", "avec", "pour", "sont", "elle", "elles", "leur", "leurs", "deux", "trois", "quatre"),
    *("devant", "derrière", "pendant", "tandis", "tout", "tous", "toute", "toutes", "cette"),
    *("celui", "celle", "entre", "autre", "autres", "sous", "vers", "chez", "très", "plus", "comme"),
    *("quelque", "quelques", "être", "fait", "font", "avoir", "près", "contre", "ceux"),
}
COLUMNS = [
    "test set",
    "sentences",
    "terms",
    "in the output (pieces / words)",
    "BLEU plain",
    "BLEU with terms",
]
COLUMNS += ["chrF plain", "chrF with terms"]


def words(text: str) -> list[str]:
    return [w for w in WORD.findall(text) if w.lower() not in FUNCTION_WORDS]


def terms_of(reference: str, output: str, most: int, missing: bool = True) -> tuple[str, ...]:
    seen = {w.lower() for w in WORD.findall(output)} if missing else set()
    found = [w for w in dict.fromkeys(words(reference)) if w.lower() not in seen]
    return tuple(found[:most])


def holds(text: str, term: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(term)}(?!\w)", text) is not None


def main() -> None:
    args = parse_args()
    if args.figure:  # before anything is measured: the stamp names the code that runs
        from scripts import figures

        args.commit = figures.clean_commit(figures.DEPENDS["terminology"])
    torch.set_num_threads(args.threads)
    model, tokenizer = load_run(args.run)
    options = DecodeOptions(beam=args.beam, batch_size=args.batch_size)
    print(f"CPU: {cpu()}; {args.threads} threads; beam {args.beam}; run {args.run}")
    rows = []
    for split in SPLITS:
        sources, references = (read(args.data_dir, split, side)[: args.sentences] for side in ("en", "fr"))
        plain = translate(model, tokenizer, sources, options).best
        for most in (1, 2):
            chosen = [i for i in range(len(sources)) if len(terms_of(references[i], plain[i], most)) == most]
            terms = [Terms(terms_of(references[i], plain[i], most)) for i in chosen]
            lines = [sources[i] for i in chosen]
            result = translate(model, tokenizer, lines, options, constraints=terms)
            pieces = sum(
                all(met(tokenizer, tokens, t) for t in ts.include)
                for tokens, ts in zip(result.tokens, terms, strict=True)
            )
            as_words = sum(
                all(holds(out, t) for t in ts.include) for out, ts in zip(result.best, terms, strict=True)
            )
            before = score([plain[i] for i in chosen], [references[i] for i in chosen])
            after = score(result.best, [references[i] for i in chosen])
            n = len(chosen)
            met_share = f"{pieces / n:.1%} / {as_words / n:.1%}"
            scores = [f"{x:.1f}" for x in (before.bleu, after.bleu, before.chrf, after.chrf)]
            rows.append([split, f"{n} of {len(sources)}", str(most), met_share, *scores])
            print("| " + " | ".join(rows[-1]) + " |")
    speed = speed_rows(model, tokenizer, options, args)
    for row in speed:
        print("| " + " | ".join(row) + " |")
    if args.figure:
        note = (
            f"Beam {args.beam}, batch {args.batch_size}, {args.threads} threads. Terms: the first (or first "
            "two) words of four letters or more of each reference that the plain beam's output lacks; "
            "sentences without such words are left out, and both searches are scored on the same "
            "sentences (sacreBLEU). Speed, over the first "
            f"{args.speed_sentences} sentences of {SPLITS[0]}: "
            + "; ".join(f"{r[0]} constraints {r[1]} sentences/s ({r[2]} of the plain beam)" for r in speed)
            + f", the median of {args.rounds} alternated rounds."
        )
        figures.record("terminology", COLUMNS, rows, note, args.commit)


def met(tokenizer, tokens: list[int], term: str) -> bool:
    phrase = tokenizer.encode([term], "target")[0]
    return any(tokens[i : i + len(phrase)] == phrase for i in range(len(tokens)))


def speed_rows(model, tokenizer, options, args) -> list[list[str]]:
    """Sentences a second with 0, 1, 2, 4 constraints on the same sentences (those whose reference
    has four content words), the settings alternated, the median of the rounds."""
    sources, references = (read(args.data_dir, SPLITS[0], side) for side in ("en", "fr"))
    chosen = [i for i in range(len(sources)) if len(terms_of(references[i], "", 4, False)) == 4]
    chosen = chosen[: args.speed_sentences]
    lines = [sources[i] for i in chosen]
    counts = (0, 1, 2, 4)
    timings: dict[int, list[float]] = {c: [] for c in counts}
    for round_ in range(args.rounds):
        for c in counts if round_ % 2 == 0 else counts[::-1]:
            terms = None if c == 0 else [Terms(terms_of(references[i], "", c, False)) for i in chosen]
            start = time.perf_counter()
            translate(model, tokenizer, lines, options, constraints=terms)
            timings[c].append(time.perf_counter() - start)
    plain = statistics.median(timings[0])
    return [
        [
            str(c),
            f"{len(lines) / statistics.median(timings[c]):.1f}",
            f"{plain / statistics.median(timings[c]):.0%}",
        ]
        for c in counts
    ]


def read(data_dir: str, split: str, side: str) -> list[str]:
    with gzip.open(Path(data_dir) / f"{split}.{side}.gz", "rt", encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--run", required=True, help="an en->fr run")
    p.add_argument("--data-dir", required=True, help="the Multi30k folder")
    p.add_argument("--beam", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--sentences", type=int, default=None, help="of each test set [default: all]")
    p.add_argument("--speed-sentences", type=int, default=300)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--figure", action="store_true", help="write docs/figures/terminology.json")
    return p.parse_args()


if __name__ == "__main__":
    main()
