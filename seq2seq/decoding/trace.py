"""The beam as a tree: what beam search considered at each step, recorded on request only.

Each step of a sentence adds the candidates the search ranked (its 2 x beam best extensions of the
hypotheses in the beam): `kept` (they are the next step's beam), `finished` (an EOS ranked within
the beam: an n-best candidate) or `pruned` (ranked, but not kept). Every node names its parent,
the node it extends; node 0 is the root (BOS, and the forced prefix if there is one). A node's
`score` is the sum of log-probabilities of its pieces (EOS included for a finished one); a
finished node also has `final`, the score divided by the length penalty, which is what the n-best
is ranked by. `replay` rebuilds the n-best from the nodes alone, which tests hold equal to the
search's own result.

Shapes: n sentences in the batch, K beams, W = 2K candidates each.
"""

from torch import Tensor

from seq2seq.decoding.penalty import penalty


class BeamTrace:
    """The nodes of each sentence of a batch (in batch order), filled by `beam_search`."""

    def __init__(self):
        self.nodes: list[list[dict]] = []
        self.rows: list[list[int | None]] = []  # each sentence's beam rows: the node each row holds

    def root(self, history: Tensor, scores: Tensor) -> None:
        """Each sentence's root: the pieces forced in one pass before the search, (B, m), and
        their log-probability (B,)."""
        for tokens, score in zip(history.tolist(), scores.tolist(), strict=True):
            self.nodes.append([{"id": 0, "parent": None, "step": len(tokens), "tokens": tokens}])
            self.nodes[-1][0] |= {"score": score, "state": "root"}
            self.rows.append([0])

    def step(
        self, t: int, sent, alive, top_scores, parent, token, ends, kept, alpha: float, met=None, unmet=None
    ) -> None:
        """Record step `t`: of each active sentence row (sent, alive: (n,)), the W ranked candidates
        (top_scores, parent, token: (n, W)), which of the first K end (ends (n, K)) and which the
        beam keeps, in row order (kept (n, K): candidate indices); with constraints, how many
        each candidate has met and (if it ends) leaves unmet (met, unmet: (n, W) lists)."""
        W, K = top_scores.size(1), kept.size(1)
        n = len(kept)
        rows = zip(
            sent.tolist(),
            alive.tolist(),
            top_scores.tolist(),
            parent.tolist(),
            token.tolist(),
            ends.tolist(),
            kept.tolist(),
            met or [None] * n,
            unmet or [None] * n,
            strict=True,
        )
        for b, active, scores, parents, tokens, ended, keep, row_met, row_unmet in rows:
            if not active:
                continue
            nodes, row_nodes, made = self.nodes[b], self.rows[b], {}
            for c in range(W):
                if scores[c] == float("-inf") or row_nodes[parents[c]] is None:
                    continue  # no hypothesis: a forced step leaves the other rows empty
                state = "finished" if c < K and ended[c] else "kept" if c in keep else "pruned"
                node = {"id": len(nodes), "parent": row_nodes[parents[c]], "step": t + 1}
                node |= {"token": tokens[c], "score": scores[c], "state": state}
                if state == "finished":
                    node["final"] = scores[c] / penalty(t + 1, alpha)
                if row_met is not None:
                    node["met"] = row_met[c]
                    if state == "finished":
                        node["unmet"] = row_unmet[c]
                nodes.append(node)
                made[c] = node["id"]
            self.rows[b] = [made.get(c) for c in keep]


def best_nodes(nodes: list[dict], nbest: int) -> list[int]:
    """The ids of the finished nodes that make the n-best, best first."""
    finished = [n for n in nodes if n["state"] == "finished"]
    return [n["id"] for n in sorted(finished, key=lambda n: (n.get("unmet", 0), -n["final"]))[:nbest]]


def with_pieces(tokenizer, nodes: list[dict]) -> list[dict]:
    """The nodes, each given its piece (the root: its forced pieces), in place."""
    for node in nodes:
        if "token" in node:
            node["piece"] = tokenizer.id_pieces([node["token"]])[0]
        else:
            node["pieces"] = tokenizer.id_pieces(node["tokens"])
    return nodes


def replay(nodes: list[dict], nbest: int) -> list[tuple[list[int], float]]:
    """The n-best (output ids, EOS excluded; final score), best first, from a sentence's nodes."""
    by_id = {node["id"]: node for node in nodes}

    def tokens(node: dict) -> list[int]:
        out = []
        while node["parent"] is not None:
            out.append(node["token"])
            node = by_id[node["parent"]]
        return node["tokens"] + out[::-1]

    ranked = [by_id[i] for i in best_nodes(nodes, nbest)]
    return [(tokens(n)[:-1], n["final"]) for n in ranked]  # the last token is EOS
