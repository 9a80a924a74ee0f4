"""An alignment layer on a trained, frozen translation model (after Garg et al. 2019, Zenkel et al.
2020 and Chen et al. 2021): one attention from the target pieces over the source, trained on the
model's own states to reproduce a teacher's word links (eflomal's, symmetrized), with the whole
target visible and a learned NULL that a piece aligned to no source word attends to instead of
dumping its weight on the full stop or </s>.

For a target piece y_t the query reads the decoder's state where y_t is predicted (the output
position), where y_t is read (the input position, Shift-Att's) and y_t's embedding, then one
self-attention layer over the whole target (no causal mask); the keys are the encoder's states of
the source pieces, and a learned NULL key. Its output is, per target piece, a distribution over
the source pieces and NULL. It is trained against each target piece's word's teacher links (the
mass spread evenly over the pieces of the linked source words, or all on NULL for an unlinked
word); the translation model is never touched.

Links: a target word is linked to every source word holding at least `threshold` of its mass (the
mean over its pieces, NULL's share left out, not renormalised), the threshold chosen on a
development set.

Shapes: S source pieces (+ EOS), T target pieces, D the model's width, K the layer's.
"""

import torch
from torch import nn

from seq2seq.data.batch import pad
from seq2seq.data.special import BOS_ID, EOS_ID


class AlignLayer(nn.Module):
    def __init__(self, d_model: int, width: int = 256, heads: int = 4):
        super().__init__()
        self.config = {"d_model": d_model, "width": width, "heads": heads}
        self.query_in = nn.Linear(3 * d_model, width)
        self.context = nn.TransformerEncoderLayer(
            width, heads, 2 * width, dropout=0.1, batch_first=True, norm_first=True
        )
        self.query = nn.Linear(width, width)
        self.key = nn.Sequential(nn.Linear(d_model, width), nn.GELU(), nn.Linear(width, width))
        self.null = nn.Parameter(torch.zeros(width))

    def forward(self, memory: torch.Tensor, states: torch.Tensor, embedded: torch.Tensor) -> torch.Tensor:
        """memory (S + 1, D) with EOS, states (T + 1, D) at inputs <s> y_1 .. y_T, embedded (T, D)
        -> (T, S + 1) log-probabilities over the source pieces (EOS left out) and NULL (last)."""
        x = self.query_in(torch.cat([states[:-1], states[1:], embedded], -1))  # (T, K)
        q = self.query(self.context(x[None])[0])  # the whole target visible
        keys = torch.cat([self.key(memory[:-1]), self.null[None]], 0)  # (S + 1, K)
        return (q @ keys.T / keys.size(1) ** 0.5).log_softmax(-1)


@torch.no_grad()
def frozen_states(model, src_ids: list[list[int]], tgt_ids: list[list[int]], batch_size: int = 64) -> list:
    """Per pair (source ids without EOS, target ids): the model's encoder memory (S + 1, D), decoder
    states (T + 1, D) and target embeddings (T, D), computed once and kept."""
    device = next(model.parameters()).device
    out = []
    for start in range(0, len(src_ids), batch_size):
        src = [[*s, EOS_ID] for s in src_ids[start : start + batch_size]]
        tgt = tgt_ids[start : start + batch_size]
        memory, mask = model.encode(pad(src).to(device))
        states = model.decode_states(pad([[BOS_ID, *t] for t in tgt]).to(device), memory, mask)
        for i, (s, t) in enumerate(zip(src, tgt, strict=True)):
            embedded = model.embed.weight[torch.tensor(t, dtype=torch.long, device=device)]
            out.append((memory[i, : len(s)].float().cpu(), states[i, : len(t) + 1].float().cpu(),
                        embedded.float().cpu()))  # fmt: skip
    return out


def teacher_distribution(source_words, target_words, links: set) -> torch.Tensor:
    """(T, S + 1) what each target piece should attend to: the pieces of the source words its word
    is linked to, evenly, or NULL (the last column) for a word linked to none. `source_words`,
    `target_words`: (S,) and (T,) each piece's word."""
    S, T = len(source_words), len(target_words)
    linked: dict[int, set[int]] = {}
    for i, j in links:
        linked.setdefault(j, set()).add(i)
    dist = torch.zeros(T, S + 1)
    for t, word in enumerate(target_words.tolist()):
        columns = [s for s, w in enumerate(source_words.tolist()) if w in linked.get(word, ())]
        if columns:
            dist[t, columns] = 1.0 / len(columns)
        else:
            dist[t, S] = 1.0
    return dist


def train_layer(d_model: int, examples: list, epochs: int, seed: int = 0, log=None) -> AlignLayer:
    """An AlignLayer fitted to `examples` (frozen states, then the teacher distribution); `log(epoch,
    loss)` after each epoch."""
    torch.manual_seed(seed)
    layer = AlignLayer(d_model)

    def loss(batch: list) -> torch.Tensor:
        return sum(taught(layer(*example[:3]), example[3]) for example in batch) / len(batch)

    fit_batches(layer.parameters(), examples, epochs, loss, seed, log)
    return layer.eval()


def taught(log_probs: torch.Tensor, dist: torch.Tensor) -> torch.Tensor:
    """(T, S + 1) a layer's reading of one pair against its teacher distribution: the cross-entropy,
    the mean over the pieces."""
    return -(dist * log_probs).sum(-1).mean()


def fit_batches(parameters, examples: list, epochs: int, loss, seed: int, log=None) -> None:
    """AdamW on `parameters` over `examples` in a seeded order, a batch of 32 a step, `loss(batch)`
    the batch's mean loss; `log(epoch, loss)` after each epoch."""
    optimizer = torch.optim.AdamW(list(parameters), lr=1e-3, weight_decay=0.01)
    generator = torch.Generator().manual_seed(seed)
    for epoch in range(1, epochs + 1):
        order, total = torch.randperm(len(examples), generator=generator).tolist(), 0.0
        for start in range(0, len(order), 32):
            batch = [examples[i] for i in order[start : start + 32]]
            value = loss(batch)
            optimizer.zero_grad()
            value.backward()
            optimizer.step()
            total += value.item() * len(batch)
        if log is not None:
            log(epoch, total / len(examples))
