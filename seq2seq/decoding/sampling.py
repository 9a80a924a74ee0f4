"""Sampling: each next piece drawn from the model's distribution, reshaped by a temperature and cut
by epsilon (Hewitt et al. 2022: leave out pieces below a probability), top-k (the k most likely)
and top-p (nucleus, Holtzman et al. 2020: the fewest pieces holding p of the probability), in that
order, as Hugging Face's warpers apply them; the most likely piece always stays.

Reproducible batched and alone: each drawn row has its own seed, from the seed, the sentence's
source pieces and the sample's number, and the noise of its draw at output position t is seeded
from that seed and t, so a line's samples never depend on which lines share its batch, on how far
their prefixes reach, nor on its place in the input (the same line twice gives the same samples).
A row draws with the Gumbel-max trick: the argmax of log p - log E, E ~ Exp(1), is a draw from p.

Shapes: n rows (sentences x samples), V vocabulary.
"""

import hashlib
import math
import secrets

import torch
from torch import Tensor


def warp(logprobs: Tensor, temperature: float, top_k: int | None, top_p: float, epsilon: float) -> Tensor:
    """(n, V) log-probabilities -> (n, V) the log-probabilities to draw from, -inf where cut."""
    if temperature != 1.0:
        # the best piece at 0 before dividing: a tiny temperature sends the others to -inf, never
        # the best (where logprobs / T alone would overflow every piece to -inf)
        x = ((logprobs - logprobs.amax(-1, keepdim=True)) / temperature).log_softmax(-1)
    else:
        x = logprobs
    best = x.amax(-1, keepdim=True)  # (n, 1)
    if epsilon > 0:
        x = x.masked_fill((x < math.log(epsilon)) & (x < best), float("-inf"))
    if top_k is not None and top_k < x.size(-1):
        kth = x.topk(top_k, dim=-1).values[:, -1:]  # (n, 1)
        x = x.masked_fill(x < kth, float("-inf"))
    if top_p < 1.0:
        ordered, order = x.sort(-1, descending=True)
        before = ordered.softmax(-1).cumsum(-1) - ordered.softmax(-1)  # the mass of the pieces above
        cut = before >= top_p  # the first piece is never cut: nothing is above it
        x = x.masked_fill(cut.scatter(-1, order, cut), float("-inf"))
    return x


def row_seeds(seed: int | None, sentences: list[list[int]], samples: int) -> list[int]:
    """One seed per drawn row, sentence by sentence, `samples` each: from the seed (None: a fresh
    one, so each run differs), the sentence's pieces and the sample's number."""
    base = secrets.randbits(63) if seed is None else seed
    out = []
    for ids in sentences:
        for j in range(samples):
            digest = hashlib.blake2b(repr((base, ids, j)).encode(), digest_size=8).digest()
            out.append(int.from_bytes(digest, "little") >> 1)
    return out


STRIDE = 0x9E3779B97F4A7C15  # odd: distinct positions of one row get distinct seeds


class Sampler:
    """The draws of a batch's rows; `keep` follows the rows when finished ones leave the batch."""

    def __init__(self, options, seeds: list[int]):
        self.options, self.seeds = options, seeds
        self.generator = torch.Generator()

    def choose(self, logprobs: Tensor, t: int = 0) -> Tensor:
        """(n, V) at output position `t` -> (n,) the drawn pieces."""
        o = self.options
        x = warp(logprobs, o.temperature, o.top_k, o.top_p, o.epsilon)
        noise = torch.empty(x.shape)
        for row, seed in zip(noise, self.seeds, strict=True):
            row.exponential_(generator=self.generator.manual_seed((seed + t * STRIDE) % 2**63))
        return (x - noise.to(x.device).log()).argmax(-1)

    def keep(self, rows: list[int]) -> None:
        self.seeds = [self.seeds[i] for i in rows]
