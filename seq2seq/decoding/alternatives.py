"""Alternatives at every output position: the k pieces the model found most likely next, with
their probabilities, the probability of the piece that was put out and the entropy of the
distribution, all from one teacher-forced pass over the output (the model's own or a given one),
so they are exactly the distributions the decoder computed for that output.

Each alternative carries the text that re-decodes through it: the output before its position plus
that piece, as a prefix (`translate(..., prefixes=...)`): the interactive-predictive loop, where a
user picks another piece and the model carries on from there.

Shapes: B sentences, T output pieces + EOS, V vocabulary.
"""

from dataclasses import dataclass

import torch

from seq2seq.data.batch import pad
from seq2seq.data.special import BOS_ID, EOS_ID, PAD_ID, UNK_ID
from seq2seq.models.protocol import Seq2SeqModel

MAX_ALTERNATIVES = 20  # a page lists this many at most


@dataclass
class Choice:
    piece: str
    p: float  # the model's probability of this piece at this position
    prefix: str | None  # the text that forces the output so far plus this piece; None for EOS, UNK


@dataclass
class Position:
    piece: str  # the piece put out here (EOS last)
    p: float  # its probability
    entropy: float  # of the model's distribution here, in nats
    top: list[Choice]  # the k most likely pieces here, most likely first


@torch.inference_mode()
def alternatives_of(
    model: Seq2SeqModel,
    tokenizer,
    src_ids: list[list[int]],
    targets: list[list[int]],
    k: int = 5,
    batch_size: int = 64,
) -> list[list[Position]]:
    """Per sentence one `Position` per output piece and EOS: sources as `source_ids` gives them,
    targets the output ids (EOS excluded). PAD and BOS, which search never puts out, are never
    alternatives."""
    device = next(model.parameters()).device
    out = []
    for start in range(0, len(src_ids), batch_size):
        chunk = targets[start : start + batch_size]
        src = pad(src_ids[start : start + batch_size]).to(device)
        logprobs = model(src, pad([[BOS_ID, *t] for t in chunk]).to(device)).float().log_softmax(-1)
        entropy = -(logprobs.exp() * logprobs.nan_to_num(neginf=0.0)).sum(-1)  # (B, T)
        logprobs[..., [PAD_ID, BOS_ID]] = float("-inf")
        top_lp, top_ids = logprobs.topk(min(k, logprobs.size(-1)), dim=-1)  # (B, T, k)
        for b, t in enumerate(chunk):
            out.append(_positions(tokenizer, t, logprobs[b], entropy[b], top_lp[b], top_ids[b]))
    return out


def _positions(tokenizer, t: list[int], logprobs, entropy, top_lp, top_ids) -> list[Position]:
    """One sentence's positions: logprobs (T', V) and the rest per row, T' >= len(t) + 1 (padding)."""
    output = [*t, EOS_ID]
    n = len(output)
    chosen = logprobs[torch.arange(n), torch.tensor(output)].exp().tolist()
    ids, probs = top_ids[:n].tolist(), top_lp[:n].exp().tolist()
    ends = (EOS_ID, UNK_ID)  # no text forces these
    texts = iter(tokenizer.decode([[*t[:i], a] for i in range(n) for a in ids[i] if a not in ends]))
    pieces = tokenizer.id_pieces
    return [
        Position(
            piece,
            chosen[i],
            float(entropy[i]),
            [
                Choice(p, q, None if a in ends else next(texts))
                for a, p, q in zip(ids[i], pieces(ids[i]), probs[i], strict=True)
            ],
        )
        for i, piece in enumerate(pieces(output))
    ]
