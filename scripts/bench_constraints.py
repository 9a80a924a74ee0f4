"""The terminology test with its controls, built from Multi30k's test sets and a dictionary made
from the training pairs alone: does the output hold its terms, does the sentence around them keep
up, and what do they cost?

    python -m scripts.bench_constraints --run runs/multi30k-en-fr --data-dir "$SEQ2SEQ_DATA_DIR" --figure

- The dictionary (`dictionary`): eflomal's links of the run's training pairs (RUN/guided.align,
  written when the run was guided; `--links FILE` for another), counted over lowercased words;
  an English word of four letters or more, not a function word, gets the French word it is linked
  to most often, where that is half its links or more, seen ten times or more, and is no French
  function word.
- Terms, fixed before anything was translated: a test sentence's source words (in reading order)
  whose dictionary translation its reference holds as a word, at most two; both sides matched, as
  Dinu et al. (2019) matched theirs. Sentences with none are left out (counts printed).
- Three systems on those sentences: the plain beam; "append", the plain beam's output with each
  term it lacks added before its last full stop (the control a forced term must beat); the beam
  constrained to hold the terms.
- Measures (scripts/term_metrics.py): the WMT 2021 terminology task's exact match, window overlap
  and 1 - TERm; BLEU and chrF; and BLEU and chrF with the terms' words masked out of output and
  reference (what the rest of the sentence earns).

Speed: sentences a second with 0, 1, 2 and 4 constraints (the first words of each reference of
four letters or more that are no function word) over the same sentences, the settings alternated
over `--rounds` (the median taken), and each a ratio of the plain beam's speed.
"""

import argparse
import gzip
import re
import statistics
import time
from pathlib import Path

import torch

from scripts import term_metrics as tm
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
COLUMNS = ["test set", "system", "sentences (terms)", "exact match", "window overlap", "1 - TERm"]
COLUMNS += ["BLEU", "BLEU, terms masked", "chrF", "chrF, terms masked"]
ENGLISH_FUNCTION_WORDS = {  # English words of four letters or more that are no term
    *("with", "while", "from", "that", "this", "their", "they", "there", "into", "onto", "over"),
    *("some", "other", "each", "near", "under", "about", "behind", "front", "another", "what"),
    *("where", "which", "have", "being", "through", "next", "down", "around", "outside", "inside"),
}


def words(text: str) -> list[str]:
    return [w for w in WORD.findall(text) if w.lower() not in FUNCTION_WORDS]


def terms_of(reference: str, output: str, most: int, missing: bool = True) -> tuple[str, ...]:
    """The first `most` content words of a reference (those the output lacks, with `missing`):
    the speed test's terms."""
    seen = {w.lower() for w in WORD.findall(output)} if missing else set()
    found = [w for w in dict.fromkeys(words(reference)) if w.lower() not in seen]
    return tuple(found[:most])


def dictionary(pairs: list[tuple[str, str]], links: list[str]) -> dict[str, str]:
    """English word -> its French translation, from word links of the training pairs."""
    from collections import Counter, defaultdict

    counts: dict[str, Counter] = defaultdict(Counter)
    for (en, fr), line in zip(pairs, links, strict=True):
        e, f = en.split(), fr.split()
        for link in line.split():
            i, j = map(int, link.split("-"))
            a, b = e[i].lower().strip(tm.PUNCTUATION), f[j].lower().strip(tm.PUNCTUATION)
            if WORD.fullmatch(a) and WORD.fullmatch(b) and a not in ENGLISH_FUNCTION_WORDS:
                counts[a][b] += 1
    out = {}
    for en, seen in counts.items():
        (fr, n), total = seen.most_common(1)[0], sum(seen.values())
        if n >= 10 and n >= total / 2 and fr not in FUNCTION_WORDS:
            out[en] = fr
    return out


def matched(source: str, reference: str, lexicon: dict[str, str], most: int = 2) -> tuple[str, ...]:
    """The dictionary translations of the source's words that the reference holds, at most `most`."""
    found = []
    for w in source.split():
        fr = lexicon.get(w.lower().strip(tm.PUNCTUATION))
        if fr and fr not in found and fr in tm.words(reference):
            found.append(fr)
    return tuple(found[:most])


def appended(output: str, terms: tuple[str, ...]) -> str:
    """The output with each term it lacks added before its last full stop."""
    lacking = [t for t in terms if not tm.holds(output, t)]
    if not lacking:
        return output
    body, stop = (output[:-1].rstrip(), ".") if output.endswith(".") else (output, "")
    return " ".join([body, *lacking]) + stop


def measured(outputs: list[str], references: list[str], terms: list[tuple[str, ...]]) -> list[str]:
    s = score(outputs, references)
    masked = tm.masked_scores(outputs, references, terms)
    return [f"{tm.exact_match(outputs, terms):.1%}", f"{tm.window_overlap(outputs, references, terms):.3f}",
            f"{tm.one_minus_term(outputs, references, terms):.3f}", f"{s.bleu:.1f}", f"{masked[0]:.1f}",
            f"{s.chrf:.1f}", f"{masked[1]:.1f}"]  # fmt: skip


def main() -> None:
    args = parse_args()
    if args.figure:  # before anything is measured: the stamp names the code that runs
        from scripts import figures

        args.commit = figures.clean_commit(figures.DEPENDS["terminology"])
    torch.set_num_threads(args.threads)
    model, tokenizer = load_run(args.run)
    options = DecodeOptions(beam=args.beam, batch_size=args.batch_size)
    print(f"CPU: {cpu()}; {args.threads} threads; beam {args.beam}; run {args.run}")
    links = (args.links or Path(args.run) / "guided.align").read_text(encoding="utf-8").splitlines()
    train = list(zip(read(args.data_dir, "train", "en"), read(args.data_dir, "train", "fr"), strict=True))
    lexicon = dictionary(train, links)
    print(f"dictionary: {len(lexicon)} English words")
    rows, hard = [], []  # hard: the sentences whose plain output lacks a term
    for split in SPLITS:
        sources, references = (read(args.data_dir, split, side)[: args.sentences] for side in ("en", "fr"))
        chosen = [i for i in range(len(sources)) if matched(sources[i], references[i], lexicon)]
        terms = [matched(sources[i], references[i], lexicon) for i in chosen]
        lines, refs = [sources[i] for i in chosen], [references[i] for i in chosen]
        plain = translate(model, tokenizer, lines, options).best
        forced = translate(model, tokenizer, lines, options, constraints=[Terms(t) for t in terms]).best
        systems = {"plain beam": plain, "append": [appended(o, t) for o, t in zip(plain, terms, strict=True)],
                   "constrained": forced}  # fmt: skip
        counted = f"{len(chosen)} of {len(sources)} ({sum(map(len, terms))})"
        for name, outputs in systems.items():
            rows.append([split, name, counted, *measured(outputs, refs, terms)])
            print("| " + " | ".join(rows[-1]) + " |")
        lacking = [
            k for k, (o, t) in enumerate(zip(plain, terms, strict=True)) if tm.exact_match([o], [t]) < 1
        ]
        subset = {name: [outputs[k] for k in lacking] for name, outputs in systems.items()}
        at = [[refs[k] for k in lacking], [terms[k] for k in lacking]]
        said = ", ".join(f"{name} {tm.masked_scores(o, *at)[0]:.1f}" for name, o in subset.items())
        hard.append(f"{split}: {len(lacking)} sentences, BLEU with the terms masked: {said}")
        print(hard[-1])
    speed = speed_rows(model, tokenizer, options, args)
    for row in speed:
        print("| " + " | ".join(row) + " |")
    if args.figure:
        note = (
            f"Beam {args.beam}, batch {args.batch_size}, {args.threads} threads. Terms: a dictionary of "
            f"{len(lexicon)} English words made from eflomal's links of the training pairs; a sentence's "
            "terms are its source words' dictionary translations that its reference holds (at most two); "
            "the three systems are scored on the same sentences. Where the plain beam's output lacks a "
            f"term: {'; '.join(hard)}. Speed, over the first "
            f"{args.speed_sentences} sentences of {SPLITS[0]}: "
            + "; ".join(f"{r[0]} constraints {r[1]} sentences/s ({r[2]} of the plain beam)" for r in speed)
            + f", the median of {args.rounds} alternated rounds."
        )
        figures.record("terminology", COLUMNS, rows, note, args.commit)


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
    p.add_argument("--links", type=Path, help="word links of the training pairs [default: RUN/guided.align]")
    p.add_argument("--speed-sentences", type=int, default=300)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--figure", action="store_true", help="write docs/figures/terminology.json")
    return p.parse_args()


if __name__ == "__main__":
    main()
