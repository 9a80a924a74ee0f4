"""Decoding levers that need no training, on one run and one split (the validation set: levers are
chosen there, never on a test set): the beam's n-best reranked by a coverage penalty (Wu et al.
2016, the omissions lever) or by minimum Bayes risk, the n-best's oracle (how much any reranker of
it could gain), and noisy-channel reranking
with a run of the reverse direction (after Yee et al. 2019, without their language model): each
candidate y of source x ranked by (log p(y|x) + lambda log p(x|y)) / length penalty(y), so a
translation that leaves part of the source out, and so explains it badly, ranks lower.

    python -m scripts.experiments.decoding_levers --run runs/multi30k-en-fr-late \
        --data-dir ../shared/corpora/multi30k
    python -m scripts.experiments.decoding_levers --run runs/multi30k-en-fr-late \
        --data-dir ../shared/corpora/multi30k --channel runs/multi30k-fr-en-25

lambda is chosen on the split itself, so its best row flatters; the row "lambda from the other half"
is the honest one: each half of the lines reranked with the lambda that did best on the other half.

A penalty applied only to finished hypotheses leaves the search itself unchanged, so reranking the
n-best at nbest = beam is what a coverage penalty inside search would choose among (up to the
finished hypotheses past the beam's width). Coverage is read from a teacher-forced pass over each
hypothesis: the cross-attention, averaged over layers and heads, summed over the target positions
(EOS included), per source piece.
"""

import argparse
import platform
import time
from pathlib import Path

import numpy as np
import sacrebleu
import torch
from sacrebleu.metrics import BLEU

from scripts import common
from seq2seq.data.batch import pad
from seq2seq.data.corpus import load_pairs
from seq2seq.data.special import BOS_ID
from seq2seq.decoding.forced import score_pairs
from seq2seq.decoding.penalty import penalty
from seq2seq.decoding.search import DecodeOptions, Hypothesis, search_in_batches, source_ids
from seq2seq.runs.files import load_config
from seq2seq.runs.load import load_run

BETAS = (0.1, 0.2, 0.4, 1.0)  # coverage penalty weights (GNMT used 0.2)
ALPHA = 1.0  # the length penalty search ranks the n-best with, undone and reapplied by the channel
LAMBDAS = (0.0, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5)  # weights of the reverse model's log-probability
SENTENCE_BLEU = BLEU(effective_order=True)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    cfg = load_config(args.run)["train"]
    pairs = load_pairs("multi30k", args.split, cfg["src"], cfg["tgt"], args.data_dir)
    sources, refs = [s for s, _ in pairs], [t for _, t in pairs]
    model, tokenizer = load_run(args.run)
    channel = load_channel(args.channel, cfg) if args.channel else None
    print(f"{args.run}, {args.split} ({len(pairs)} pairs), beam {args.beam}, bf16 {args.bf16}")
    print(f"{common.cpu()}, torch {torch.__version__}, Python {platform.python_version()}")
    start = time.perf_counter()
    ids, nbest = n_best(model, tokenizer, sources, args.beam, args.bf16)
    texts = [tokenizer.decode([h.tokens for h in hyps]) for hyps in nbest]
    coverage = [coverage_penalties(model, ids[i], hyps) for i, hyps in enumerate(nbest)]
    scores = [np.array([h.score for h in hyps]) for hyps in nbest]
    report("beam search (its best)", [t[0] for t in texts], refs)
    for beta in BETAS:
        picks = [int(np.argmax(s + beta * c)) for s, c in zip(scores, coverage, strict=True)]
        report(f"+ coverage penalty, beta {beta:g}", [t[i] for t, i in zip(texts, picks, strict=True)], refs)
    report(
        "minimum Bayes risk (sentence BLEU)", [mbr(t, s) for t, s in zip(texts, scores, strict=True)], refs
    )
    report("oracle (best sentence BLEU of the n-best)", oracle(texts, refs), refs)
    if channel:
        backward = channel_totals(*channel, sources, texts)
        noisy_channel(texts, nbest, backward, refs)
    print(f"({time.perf_counter() - start:.0f} s)")


def n_best(model, tokenizer, sources: list[str], beam: int, bf16: bool):
    """Each source's piece ids and its beam's n-best (nbest = beam), best first."""
    ids, _ = source_ids(model, tokenizer, sources)
    options = DecodeOptions(beam=beam, nbest=beam, length_penalty=ALPHA, bf16=bf16)
    nbest: list[list[Hypothesis]] = [[] for _ in ids]
    for i, hyps in search_in_batches(model, ids, list(range(len(ids))), options):
        nbest[i] = hyps
    return ids, nbest


@torch.inference_mode()
def coverage_penalties(model, src_ids: list[int], hyps: list[Hypothesis]) -> np.ndarray:
    """GNMT's coverage penalty of each hypothesis, sum over source pieces of log(min(coverage, 1)):
    0 when every piece got at least one unit of attention, negative for what was left unread."""
    src = torch.tensor([src_ids] * len(hyps))  # (n, S)
    tgt_in = pad([[BOS_ID, *h.tokens] for h in hyps])  # (n, T)
    cross = model.attention(src, tgt_in)["cross"].float().mean((1, 2))  # (n, L, H, T, S) -> (n, T, S)
    lengths = torch.tensor([len(h.tokens) + 1 for h in hyps])  # decoded positions, EOS included
    real = torch.arange(tgt_in.size(1))[None, :] < lengths[:, None]  # (n, T)
    received = (cross * real[:, :, None]).sum(1)  # (n, S): attention each source piece received
    return received.clamp(max=1.0).clamp(min=1e-9).log().sum(1).numpy()


def mbr(texts: list[str], scores: np.ndarray) -> str:
    """The candidate with the highest expected sentence BLEU against the others, each weighted by
    the model's (length-normalized) probability."""
    weights = np.exp(scores - scores.max())
    weights /= weights.sum()
    gains = [
        sum(
            w * (100.0 if i == j else SENTENCE_BLEU.sentence_score(a, [b]).score)
            for j, (b, w) in enumerate(zip(texts, weights, strict=True))
        )
        for i, a in enumerate(texts)
    ]
    return texts[int(np.argmax(gains))]


def oracle(texts: list[list[str]], refs: list[str]) -> list[str]:
    """Each n-best's candidate nearest its reference: the most any reranker of these lists could do."""
    return [
        max(t, key=lambda c: SENTENCE_BLEU.sentence_score(c, [r]).score)
        for t, r in zip(texts, refs, strict=True)
    ]


def load_channel(run: Path, cfg: dict):
    """The reverse direction's model and tokenizer: its source must be our target and vice versa."""
    reverse = load_config(run)["train"]
    if (reverse["src"], reverse["tgt"]) != (cfg["tgt"], cfg["src"]):
        direction = f"{reverse['src']}->{reverse['tgt']}"
        raise SystemExit(f"{run} translates {direction}, not {cfg['tgt']}->{cfg['src']}: no reverse model")
    return load_run(run)


def channel_totals(model, tokenizer, sources: list[str], texts: list[list[str]]) -> list[np.ndarray]:
    """log p(x|y) of each source x given each of its candidates y, by the reverse model."""
    candidates = [c for t in texts for c in t]
    explained = [s for s, t in zip(sources, texts, strict=True) for _ in t]
    totals = iter([f.total for f in score_pairs(model, tokenizer, candidates, explained)])
    return [np.array([next(totals) for _ in t]) for t in texts]


def noisy_channel(texts: list[list[str]], nbest: list[list[Hypothesis]], backward, refs: list[str]) -> None:
    """Rerank for every lambda, then each half of the lines with the lambda the other half preferred."""

    def picks(lam: float, lines) -> list[str]:
        return [texts[i][j] for i, j in zip(lines, channel_choice(nbest, backward, lam, lines), strict=True)]

    everything = range(len(texts))
    for lam in LAMBDAS:
        report(f"noisy channel, lambda {lam:g}", picks(lam, everything), refs)
    halves = [range(0, len(texts), 2), range(1, len(texts), 2)]
    chosen = [max(LAMBDAS, key=lambda lam, h=half: bleu_of(picks(lam, h), h, refs)) for half in halves]
    reranked = dict(zip(halves[0], picks(chosen[1], halves[0]), strict=True))
    reranked.update(zip(halves[1], picks(chosen[0], halves[1]), strict=True))
    name = f"noisy channel, lambda from the other half ({chosen[1]:g}, {chosen[0]:g})"
    report(name, [reranked[i] for i in everything], refs)


def channel_choice(nbest: list[list[Hypothesis]], backward: list[np.ndarray], lam: float, lines) -> list[int]:
    """Each line's pick by (log p(y|x) + lambda log p(x|y)) / length penalty(y): search's own
    normalisation applied to the sum (Yee et al. divide the channel term by the source's length
    instead, a constant within a line), so lambda 0 is search's choice and a longer candidate's
    channel term weighs less per piece, as its forward term does."""
    chosen = []
    for i in lines:
        lengths = np.array([penalty(len(h.tokens) + 1, ALPHA) for h in nbest[i]])
        forward = np.array([h.score for h in nbest[i]]) * lengths  # undo search's normalisation
        chosen.append(int(np.argmax((forward + lam * backward[i]) / lengths)))
    return chosen


def bleu_of(hypotheses: list[str], lines, refs: list[str]) -> float:
    return sacrebleu.corpus_bleu(hypotheses, [[refs[i] for i in lines]]).score


def report(name: str, hypotheses: list[str], refs: list[str]) -> None:
    bleu = sacrebleu.corpus_bleu(hypotheses, [refs])
    print(f"{name:45s} BLEU {bleu.score:6.2f}  length ratio {bleu.sys_len / bleu.ref_len:.3f}")


def parse_args(argv: list[str] | None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--run", type=Path, required=True)
    p.add_argument("--data-dir", required=True)
    p.add_argument("--split", default="val")
    p.add_argument("--beam", type=int, default=5)
    p.add_argument("--bf16", action="store_true", help="bf16 autocast (evaluate's default is fp32)")
    p.add_argument("--channel", type=Path, help="a run of the reverse direction, for noisy-channel reranking")
    return p.parse_args(argv)


if __name__ == "__main__":
    main()
