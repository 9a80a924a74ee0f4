"""Forced decoding: what the model thinks of given translations. The same pieces, EOS included, and
the same length normalisation as search, so `score` agrees with what `translate --nbest` prints.

Shapes: B pairs, S source length, T target length + 1 (BOS in, EOS out), V vocabulary.
"""

from dataclasses import dataclass

import torch

from seq2seq.data.batch import pad
from seq2seq.data.special import BOS_ID, EOS_ID, PAD_ID
from seq2seq.decoding.penalty import check_length_penalty, penalty
from seq2seq.decoding.search import source_ids
from seq2seq.errors import Seq2SeqError
from seq2seq.models.protocol import Seq2SeqModel


@dataclass
class ForcedScore:
    total: float  # sum of log-probabilities of the target pieces and EOS
    pieces: int  # target pieces + EOS: the number of predictions summed
    score: float  # total / length penalty: what search ranks by and `translate --nbest` prints

    @property
    def mean(self) -> float:
        return self.total / self.pieces


@torch.inference_mode()
def score_pairs(
    model: Seq2SeqModel,
    tokenizer,
    sources: list[str],
    targets: list[str],
    length_penalty: float = 1.0,
    batch_size: int = 64,
) -> list[ForcedScore]:
    """Score each target given its source, in input order. Sources are cut to the model's longest
    source as `translate` does; a target that does not fit is an error naming its line."""
    if len(sources) != len(targets):
        raise Seq2SeqError(f"{len(sources)} sources but {len(targets)} targets; they must pair up")
    src_ids, _ = source_ids(model, tokenizer, sources)
    tgt_ids = tokenizer.encode(targets, "target")
    return score_ids(model, src_ids, tgt_ids, length_penalty, batch_size)


@torch.inference_mode()
def score_ids(
    model: Seq2SeqModel,
    src_ids: list[list[int]],
    tgt_ids: list[list[int]],
    length_penalty: float = 1.0,
    batch_size: int = 64,
) -> list[ForcedScore]:
    """`score_pairs` on ids: sources end with EOS, targets have neither BOS nor EOS."""
    check_length_penalty(length_penalty)
    limit = model.cfg.max_positions - 1
    for number, ids in enumerate(tgt_ids, start=1):
        if len(ids) > limit:
            raise Seq2SeqError(f"target line {number} has {len(ids)} pieces; the model's limit is {limit}")
    device = next(model.parameters()).device
    scores = []
    for start in range(0, len(src_ids), batch_size):
        targets = tgt_ids[start : start + batch_size]
        src = pad(src_ids[start : start + batch_size]).to(device)
        tgt_out = pad([[*t, EOS_ID] for t in targets]).to(device)  # (B, T)
        logprobs = model(src, pad([[BOS_ID, *t] for t in targets]).to(device)).float().log_softmax(-1)
        picked = logprobs.gather(-1, tgt_out[..., None])[..., 0].masked_fill(tgt_out == PAD_ID, 0.0)
        for t, total in zip(targets, picked.sum(1).tolist(), strict=True):
            scores.append(ForcedScore(total, len(t) + 1, total / penalty(len(t) + 1, length_penalty)))
    return scores
