"""Two alignment layers trained together, one on each direction's frozen model (a run and its
reverse run), after Liang et al. 2006's alignment by agreement and Mask-Align's agreement loss
(Chen et al. 2021): each layer learns its teacher's links as it does alone (layer.py), and an
agreement term pulls the two readings of a pair towards the same word links.

The term compares word scores, not pieces (the two runs need not cut words alike): each layer's
distribution over the source pieces becomes (target word, source word) scores by extract.py's
merge (mean over the target word's pieces of the sum over the source word's pieces, NULL's share
left out), and the forward matrix is held against the reverse one turned round: their squared
difference summed over the matrix, divided by the pair's words (n + m), so a long sentence weighs
no more than a short one. `align --reverse-run --combine` then reads two layers that were taught
to agree, as the two directions of a statistical aligner are symmetrized.

Shapes: T target pieces, S source pieces, n / m target / source words.
"""

import numpy as np
import torch

from seq2seq.alignment.layer import AlignLayer, fit_batches, taught


def word_matrix(log_probs: torch.Tensor, source_words: np.ndarray, target_words: np.ndarray) -> torch.Tensor:
    """(T, S + 1) a layer's log-probabilities, NULL last -> (n, m) word scores, differentiable
    (extract.word_scores's merge)."""
    pieces = log_probs.exp()[:, :-1]  # (T, S)
    n, m = int(target_words.max()) + 1, int(source_words.max()) + 1
    summed = torch.nn.functional.one_hot(torch.as_tensor(source_words), m).to(pieces.dtype)  # (S, m)
    averaged = torch.nn.functional.one_hot(torch.as_tensor(target_words), n).to(pieces.dtype).T  # (n, T)
    averaged = averaged / averaged.sum(1, keepdim=True).clamp(min=1)
    return averaged @ pieces @ summed


def disagreement(forward: torch.Tensor, reverse: torch.Tensor) -> torch.Tensor:
    """(n, m) forward word scores and (m, n) reverse ones -> their squared difference, the reverse
    turned round, summed and divided by n + m."""
    return ((forward - reverse.T) ** 2).sum() / sum(forward.shape)


def train_together(
    d_models: tuple[int, int], examples: list, epochs: int, weight: float, seed: int = 0, log=None
) -> tuple[AlignLayer, AlignLayer]:
    """Two AlignLayers, forward and reverse, fitted together. `examples`: per pair, the forward
    example and the reverse one, each (memory, states, embedded, (source words, target words),
    teacher distribution) as aligner.examples_of gives them; `weight` the agreement term's (0: the
    two fitted side by side, each as alone)."""
    torch.manual_seed(seed)
    layers = AlignLayer(d_models[0]), AlignLayer(d_models[1])

    def loss(batch: list) -> torch.Tensor:
        total = torch.zeros(())
        for pair in batch:
            read = [layer(*example[:3]) for layer, example in zip(layers, pair, strict=True)]
            total = total + sum(taught(r, example[4]) for r, example in zip(read, pair, strict=True))
            if weight:
                forward, reverse = (word_matrix(r, *e[3]) for r, e in zip(read, pair, strict=True))
                total = total + weight * disagreement(forward, reverse)
        return total / len(batch)

    fit_batches([*layers[0].parameters(), *layers[1].parameters()], examples, epochs, loss, seed, log)
    return layers[0].eval(), layers[1].eval()
