"""Can I trust this translation? What the model says of a pair (source, translation), whoever
translated it, from one teacher-forced pass over it and one over the translation alone:

- word log-probability: each target word's, the sum of its pieces' where they stand; the sentence
  score is the mean log-probability a piece, the end of sentence included (Seq-Logprob, which
  Guerreiro et al. 2023 found the best single detector of hallucinations);
- coverage (after Tu et al. 2016): the cross-attention each source word receives over the output,
  the mean of every layer and head summed over the output pieces (the end of sentence's row left
  out); a word the translation left out receives little;
- repetition: the share of the translation's word trigrams that repeat an earlier one (loops);
- length ratio: target pieces over source pieces;
- source dependence, when asked (attribution by ablation, after Dale et al. 2022, who measure the
  source's contribution): the mean log-probability a piece given the source less given an empty
  one, from a second pass; an output the model would say whatever the source owes it little.
  calibration.py's detectors do without it: measured, they catch hallucinations as well from the
  first pass alone (docs/scoring.md), so the second pass is not paid by default.

Words are whitespace tokens, their pieces merged as `seq2seq align` merges them. No search runs:
the signals are the same for a translation of this model's, another system's or a person's.

Shapes: B pairs, S source pieces + EOS, T target pieces + EOS, L layers, H heads.
"""

from dataclasses import dataclass

import torch

from seq2seq.alignment.words import piece_words
from seq2seq.data.batch import pad
from seq2seq.data.special import BOS_ID, EOS_ID, PAD_ID
from seq2seq.decoding.search import output_limit, source_ids
from seq2seq.errors import Seq2SeqError
from seq2seq.models.protocol import AttentionRecord, Seq2SeqModel

WORD_START = "\u2581"


@dataclass
class Signals:
    """One pair's signals (the target words' and source words' in their order)."""

    source_words: list[str]
    target_words: list[str]
    word_logprobs: list[float]  # each target word's log-probability: the sum of its pieces'
    coverage: list[float]  # each source word's cross-attention mass over the output
    score: float  # mean log-probability a piece, EOS included: higher is likelier
    repetition: float  # share of word trigrams that repeat an earlier one
    length_ratio: float  # target pieces / source pieces
    dependence: float | None = None  # score given the source less given an empty one (when asked)

    @property
    def coverage_lack(self) -> float:
        """Higher where a source word is likelier left out: the mean over source words of the
        attention each lacks below one output piece's worth (0 for a fully covered source)."""
        return sum(max(0.0, 1.0 - c) for c in self.coverage) / max(len(self.coverage), 1)


def check_pairs(
    model: Seq2SeqModel,
    tokenizer,
    sources: list[str],
    targets: list[str],
    batch_size: int = 32,
    dependence: bool = False,
) -> list[Signals]:
    """The signals of each pair, in input order; with `dependence` the source dependence too (a
    second pass). Sources are cut to the model's longest source as `translate` does; a target
    longer than the model's longest output is an error naming it. Pairs are checked in batches of
    like length."""
    if len(sources) != len(targets):
        raise Seq2SeqError(f"{len(sources)} sources but {len(targets)} translations; they must pair up")
    src_ids, _ = source_ids(model, tokenizer, sources)
    tgt_ids = tokenizer.encode(targets, "target")
    limit = output_limit(model)
    for number, ids in enumerate(tgt_ids, start=1):
        if len(ids) > limit:
            raise Seq2SeqError(f"translation {number} has {len(ids)} pieces; the model's limit is {limit}")
    order = sorted(range(len(sources)), key=lambda i: (len(tgt_ids[i]), len(src_ids[i])))  # less padding
    found: dict[int, Signals] = {}
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        batch = _signals(
            model, tokenizer, [src_ids[i] for i in chunk], [tgt_ids[i] for i in chunk], dependence
        )
        found.update(zip(chunk, batch, strict=True))
    out = [found[i] for i in range(len(sources))]
    for s, source, target in zip(out, sources, targets, strict=True):  # the words as written
        s.source_words, s.target_words = (
            _as_written(s.source_words, source),
            _as_written(s.target_words, target),
        )
    return out


def _as_written(words: list[str], text: str) -> list[str]:
    """The text's own whitespace tokens where the pieces' words are as many (a piece the
    tokenizer has no piece for shows as `<unk>`); else the pieces' (a source cut to the limit)."""
    written = text.split()
    return written if len(written) == len(words) else words


@torch.inference_mode()
def _signals(
    model: Seq2SeqModel, tokenizer, src_ids: list[list[int]], tgt_ids: list[list[int]], dependence: bool
) -> list[Signals]:
    device = next(model.parameters()).device
    tgt_in = pad([[BOS_ID, *t] for t in tgt_ids]).to(device)
    tgt_out = pad([[*t, EOS_ID] for t in tgt_ids]).to(device)  # (B, T)
    # the cross-attention alone is kept: the self-attention, unrecorded, runs its fused kernel
    record = AttentionRecord(encoder=None, decoder=None)
    given = _picked(model(pad(src_ids).to(device), tgt_in, record=record), tgt_out)  # (B, T)
    cross = torch.stack(record.cross, 1).float().mean((1, 2)).cpu()  # (B, L, H, T, S) -> (B, T, S)
    alone = None
    if dependence:  # the same outputs read with an empty source: EOS alone
        alone = _picked(model(torch.full((len(src_ids), 1), EOS_ID, device=device), tgt_in), tgt_out).cpu()
    given = given.cpu()
    out = []
    for i, (s, t) in enumerate(zip(src_ids, tgt_ids, strict=True)):
        n = len(t) + 1  # the predictions: the pieces and EOS
        source_pieces, target_pieces = tokenizer.id_pieces(s[:-1]), tokenizer.id_pieces(t)
        piece_mass = cross[i, : n - 1, : len(s) - 1].sum(0)  # (S - 1,) over the output's pieces
        source_words, coverage = _by_word(source_pieces, piece_mass)
        target_words, word_logprobs = _by_word(target_pieces, given[i, : n - 1])
        out.append(
            Signals(
                source_words=source_words,
                target_words=target_words,
                word_logprobs=word_logprobs,
                coverage=coverage,
                score=given[i, :n].mean().item(),
                repetition=_repetition(target_words),
                length_ratio=len(t) / max(len(s) - 1, 1),
                dependence=None if alone is None else (given[i, :n] - alone[i, :n]).mean().item(),
            )
        )
    return out


def _picked(logits: torch.Tensor, tgt_out: torch.Tensor) -> torch.Tensor:
    """(B, T, V) logits -> (B, T) the log-probability of each target piece (0 at padding)."""
    logprobs = logits.float().log_softmax(-1)
    return logprobs.gather(-1, tgt_out[..., None])[..., 0].masked_fill(tgt_out == PAD_ID, 0.0)


def _by_word(pieces: list[str], values: torch.Tensor) -> tuple[list[str], list[float]]:
    """The words of `pieces` (merged as `align` merges them) and (pieces,) values summed over
    each word's pieces."""
    if not pieces:
        return [], []
    index = piece_words(pieces)
    words = [""] * (int(index[-1]) + 1)
    for piece, w in zip(pieces, index.tolist(), strict=True):
        words[w] += piece.replace(WORD_START, "")
    sums = torch.zeros(len(words)).index_add_(0, torch.as_tensor(index), values.float()).tolist()
    return words, sums


def _repetition(words: list[str], n: int = 3) -> float:
    grams = [tuple(words[i : i + n]) for i in range(len(words) - n + 1)]
    return 1.0 - len(set(grams)) / len(grams) if grams else 0.0
