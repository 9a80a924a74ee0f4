"""Lexical constraints: phrases each output must hold (positive) or never hold (negative), with
dynamic beam allocation (Post & Vilar 2018; fairseq's `--constraints`, after Hu et al. 2019).

Each hypothesis keeps a `State`: which positive phrases it has met, and how far into one it is.
A step of beam search then (1) bans the pieces that would complete a negative phrase and, for a
hypothesis with a phrase still unmet, the end of sentence (`mask`); (2) adds to the ranked
candidates the pieces that start or continue an unmet phrase from every hypothesis (the end of
sentence from one that met them all), and each hypothesis' own best piece (`widen`), so that the
search always has a way to meet the constraints and to end; (3) fills the beam bank by bank
(`rank`): the bank of a candidate is the number of constraint pieces it has met, and the beam
takes the best candidate of each bank in turn, the fullest bank first, so that hypotheses which
spent steps on a constraint are not crowded out by the freer ones that have not. Every output
holds every phrase, unless its length limit leaves no room: then it ends unmet, ranked last.
A phrase is met once its pieces appear in a row; a phrase abandoned midway counts for nothing,
and is met again from its first piece.

A sentence without constraints has one bank, and its candidates are the plain search's: a
constrained beam with none is the plain beam, piece for piece (tested). Only a batch with a
constrained sentence takes this path; the others run the plain search unchanged.

Shapes: n sentences, k hypotheses each (rows n*k), W ranked candidates, V vocabulary.
"""

import itertools
from dataclasses import dataclass, field

import torch
from torch import Tensor

from seq2seq.data.special import EOS_ID

Phrase = tuple[int, ...]


@dataclass(frozen=True)
class LineConstraints:
    """One line's constraints as piece ids: phrases to include (each met once, as whole words) and
    to avoid; `joins` (V,), the pieces that would carry on the word before them (no word start,
    a letter or digit first), which may not follow a phrase just met."""

    include: tuple[Phrase, ...] = ()
    avoid: tuple[Phrase, ...] = ()
    joins: Tensor | None = field(default=None, compare=False, repr=False)

    @property
    def pieces(self) -> int:
        """The pieces the included phrases take: the least output that meets them all."""
        return sum(map(len, self.include))


@dataclass(frozen=True)
class State:
    """What a hypothesis has met: `met`, a bit per included phrase; `active`, the phrase it is
    inside (-1: none) and `progress`, how many of its pieces it has put out so far; `closed`,
    whether its last piece met a phrase (its word must end there)."""

    met: int = 0
    active: int = -1
    progress: int = 0
    closed: bool = False

    def advance(self, token: int, include: tuple[Phrase, ...]) -> "State":
        """The state after putting out `token`."""
        met = self.met
        if self.active >= 0:
            phrase = include[self.active]
            if phrase[self.progress] == token:
                if self.progress + 1 == len(phrase):
                    return State(met | 1 << self.active, closed=True)
                return State(met, self.active, self.progress + 1)
        for i, phrase in enumerate(include):  # abandoned (or none begun): does `token` start one?
            if not met >> i & 1 and phrase[0] == token:
                return State(met | 1 << i, closed=True) if len(phrase) == 1 else State(met, i, 1)
        return State(met)

    def bank(self, include: tuple[Phrase, ...]) -> int:
        """The constraint pieces met so far: the phrases met whole and the progress in one."""
        return sum(len(p) for i, p in enumerate(include) if self.met >> i & 1) + self.progress

    def unmet(self, include: tuple[Phrase, ...]) -> int:
        return len(include) - self.met.bit_count()

    def wanted(self, include: tuple[Phrase, ...]) -> list[int]:
        """The pieces that take this hypothesis further into its constraints: once all are met,
        the end of sentence (so that a hypothesis in the fullest bank can always finish)."""
        if self.active >= 0:
            return [include[self.active][self.progress]]
        starts = [p[0] for i, p in enumerate(include) if not self.met >> i & 1]
        return list(dict.fromkeys(starts)) if starts else [EOS_ID]


class Banks:
    """The constraints of a batch's sentences and the state of each of their hypotheses."""

    def __init__(self, lines: list[LineConstraints], device):
        self.lines, self.device = lines, device
        self.sent = list(range(len(lines)))  # the sentence of each active row of the batch
        self.states: list[list[State]] = [[State()] for _ in lines]  # (n, k)
        joins = next((c.joins for c in lines if c.joins is not None), None)
        self.joins = None if joins is None else joins.to(device)

    @classmethod
    def of(cls, lines: list[LineConstraints | None], device) -> "Banks | None":
        """None when no line of the batch has a constraint: the plain search runs."""
        if not any(c is not None and (c.include or c.avoid) for c in lines):
            return None
        return cls([c or LineConstraints() for c in lines], device)

    @property
    def pieces(self) -> Tensor:
        """(B,) the least output each sentence's constraints need."""
        return torch.tensor([c.pieces for c in self.lines], device=self.device)

    def start(self, history: Tensor) -> None:
        """Advance each sentence's state over the pieces forced before the search, (B, m)."""
        for b, tokens in enumerate(history.tolist()):
            state = State()
            for token in tokens:
                state = state.advance(token, self.lines[b].include)
            self.states[b] = [state]

    def mask(self, logprobs: Tensor, history: Tensor, at_max: Tensor) -> None:
        """In place, logprobs (n*k, V): no piece that completes a phrase to avoid, no piece that
        carries on the word of a phrase just met (`voiture` is not met by `voitures`), and no end
        of sentence while a phrase is unmet, except for a row at its length limit (it must end:
        `finish` ranks it below every hypothesis that met them all). history (n, k, t)."""
        k = len(self.states[0])
        tails = None
        for r, (b, state) in enumerate(self._rows()):
            line = self.lines[b]
            if state.unmet(line.include) and not at_max[r]:
                logprobs[r, EOS_ID] = float("-inf")
            if state.closed and self.joins is not None:
                logprobs[r].masked_fill_(self.joins, float("-inf"))
            for phrase in line.avoid:
                if len(phrase) > 1:
                    if tails is None:  # the history crosses to Python only when a phrase needs it
                        tails = history.view(len(self.sent) * k, -1).tolist()
                    if tails[r][len(tails[r]) - len(phrase) + 1 :] != list(phrase[:-1]):
                        continue
                logprobs[r, phrase[-1]] = float("-inf")

    def widen(
        self, scores: Tensor, logprobs: Tensor, top: tuple[Tensor, Tensor, Tensor]
    ) -> tuple[Tensor, Tensor, Tensor]:
        """The ranked candidates (top_scores, parent, token: (n, W)) with, after them, the pieces
        that advance a constraint and each hypothesis' best piece, where not ranked already, best
        first: (n, W') each, padded with impossible candidates."""
        top_scores, parent, token = top
        n, k = scores.shape
        best = logprobs.argmax(-1).view(n, k).tolist()
        ranked = {
            (i, p, t)
            for i, (ps, ts) in enumerate(zip(parent.tolist(), token.tolist(), strict=True))
            for p, t in zip(ps, ts, strict=True)
        }
        extra: list[list[tuple[int, int]]] = []
        for i in range(n):
            line = self.lines[self.sent[i]]
            wanted = []
            for j, state in enumerate(self.states[i]):
                for t in [*state.wanted(line.include), best[i][j]]:
                    if (i, j, t) not in ranked:
                        ranked.add((i, j, t))
                        wanted.append((j, t))
            extra.append(wanted)
        width = max(map(len, extra))
        if width == 0:
            return top_scores, parent, token
        more_parent = torch.zeros(n, width, dtype=torch.long)
        more_token = torch.full((n, width), EOS_ID, dtype=torch.long)
        real = torch.zeros(n, width, dtype=torch.bool)
        for i, wanted in enumerate(extra):
            for c, (j, t) in enumerate(wanted):
                more_parent[i, c], more_token[i, c], real[i, c] = j, t, True
        more_parent, more_token, real = (x.to(self.device) for x in (more_parent, more_token, real))
        rows = torch.arange(n, device=self.device)[:, None] * k + more_parent
        more_scores = scores.gather(1, more_parent) + logprobs[rows, more_token]
        more_scores = more_scores.masked_fill(~real, float("-inf"))
        more_scores, order = more_scores.sort(dim=1, descending=True, stable=True)
        return (
            torch.cat([top_scores, more_scores], 1),
            torch.cat([parent, more_parent.gather(1, order)], 1),
            torch.cat([token, more_token.gather(1, order)], 1),
        )

    def rank(self, top_scores: Tensor, parent: Tensor, token: Tensor) -> Tensor:
        """(n, W) the candidates in the order the beam takes them: in turn from each bank (the
        fullest first), best first within a bank, then the impossible ones. The plain rules then
        apply to this order: an end of sentence within the first K finishes, the first K
        candidates that do not end carry on. A sentence with one bank keeps its order."""
        banks, scores = self.banks(parent, token), top_scores.tolist()
        order = []
        for i, row in enumerate(scores):
            by_bank: dict[int, list[int]] = {}
            for c, (bank, score) in enumerate(zip(banks[i], row, strict=True)):
                if score != float("-inf"):
                    by_bank.setdefault(bank, []).append(c)  # in rank order: best first
            queues = [by_bank[bank] for bank in sorted(by_bank, reverse=True)]
            ranked = [c for turn in itertools.zip_longest(*queues) for c in turn if c is not None]
            order.append(ranked + [c for c in range(len(row)) if row[c] == float("-inf")])
        return torch.tensor(order, device=top_scores.device)

    def banks(self, parent: Tensor, token: Tensor) -> list[list[int]]:
        """(n, W) the bank of each candidate: its parent's state advanced by its piece."""
        out = []
        for i, (parents, tokens) in enumerate(zip(parent.tolist(), token.tolist(), strict=True)):
            include = self.lines[self.sent[i]].include
            states = self.states[i]
            out.append(
                [states[p].advance(t, include).bank(include) for p, t in zip(parents, tokens, strict=True)]
            )
        return out

    def unmet(self, parent: Tensor) -> list[list[int]]:
        """(n, W) how many phrases the hypothesis a candidate ends would leave unmet."""
        return [
            [self.states[i][p].unmet(self.lines[self.sent[i]].include) for p in parents]
            for i, parents in enumerate(parent.tolist())
        ]

    def met(self, parent: Tensor, token: Tensor) -> list[list[int]]:
        """(n, W) how many phrases each candidate has met: what the beam trace records."""
        return [
            [
                self.states[i][p].advance(t, self.lines[self.sent[i]].include).met.bit_count()
                for p, t in zip(ps, ts, strict=True)
            ]
            for i, (ps, ts) in enumerate(zip(parent.tolist(), token.tolist(), strict=True))
        ]

    def carry(self, parent: Tensor, token: Tensor) -> None:
        """The beam's new hypotheses, (n, K) parents and pieces: their states."""
        self.states = [
            [
                self.states[i][p].advance(t, self.lines[self.sent[i]].include)
                for p, t in zip(ps, ts, strict=True)
            ]
            for i, (ps, ts) in enumerate(zip(parent.tolist(), token.tolist(), strict=True))
        ]

    def keep(self, rows: list[int]) -> None:
        """Only these sentence rows stay in the batch."""
        self.sent = [self.sent[i] for i in rows]
        self.states = [self.states[i] for i in rows]

    def _rows(self):
        """(sentence, state) of each row of logprobs, in order."""
        for i, b in enumerate(self.sent):
            for state in self.states[i]:
                yield b, state
