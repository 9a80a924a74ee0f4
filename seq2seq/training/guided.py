"""Guided alignment (Garg et al. 2019, "Jointly Learning to Align and Translate with Transformer
Models"; Marian's --guided-alignment): a cross-entropy term that pulls one cross-attention head
of one decoder layer towards given word links of the training pairs, so that the attention the
views draw becomes an aligner.

Links are between words, whitespace tokens of the corpus lines (`alignment/words.py`: a piece that
starts with "▁" starts a word), and the model attends between pieces, so each target piece of a
linked target word is pulled towards the pieces of the source words it links to, spread evenly:
q(s | t) = 1 / (their count). A target piece with no link, and EOS, are not supervised. The term
is -sum q log a over the supervised pieces, added to the summed translation loss with
`guided_weight`, so both are per-piece sums under one normaliser.

Where a piece is supervised (`position`): "output" pulls the attention at the position that
predicts the piece, whose query has not read it (Garg et al.'s causal variant); "input" pulls the
attention one step later, where the piece is the decoder's input, so the head aligns a word it
has read (the position `--method shift` reads: Shift-Att, Chen et al. 2020). The first position,
whose input is BOS, is then the one not supervised.

Shapes: B pairs, T target positions (pieces + EOS), S source positions (pieces + EOS), H heads.
"""

import time
from collections.abc import Callable
from dataclasses import replace
from importlib.util import find_spec
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from seq2seq.alignment.pharaoh import Links, check_ranges, read_links
from seq2seq.alignment.words import word_index, word_starts
from seq2seq.atomic import write_atomic
from seq2seq.data.tokenized import TokenizedPairs
from seq2seq.errors import Seq2SeqError
from seq2seq.runs.recipe import supervised_layer

CHUNK = 100_000  # rows read at once when checking the links against the stored pairs
LINKS = "guided.align"  # eflomal's links of the training pairs, kept in the run (--guided-alignment eflomal)
# a statistical aligner learns from a corpus: below this many pairs `auto` trains unguided
AUTO_PAIRS = 1_000
INSTALL = "pip install 'seq2seq[align]'"


class Guide:
    """The links of a corpus (one `Links` per corpus line), and the batch targets and loss built
    from them; `starts` (V,) tells which piece ids start a word."""

    def __init__(
        self,
        links: list[Links],
        starts: np.ndarray,
        layer: int | None,
        weight: float,
        position: str = "output",
    ):
        self.links, self.starts, self.layer, self.weight = links, starts, layer, weight
        self.shift = int(position == "input")  # rows the targets move down

    def check(self, train_set: TokenizedPairs, path: Path) -> None:
        """One line of links per corpus pair, each within its pair's words (counted from the
        stored pieces): a one-line error naming the file and line otherwise."""
        corpus_lines = train_set.report.kept + train_set.report.dropped
        if len(self.links) != corpus_lines:
            raise Seq2SeqError(
                f"{path} has {len(self.links)} lines, but the training corpus has {corpus_lines} pairs; "
                "--guided-alignment needs one line of links per pair, in the corpus's order"
            )
        for start in range(0, len(train_set), CHUNK):
            rows = range(start, min(start + CHUNK, len(train_set)))
            src, tgt, lines = train_set.columns(rows, "src_ids", "tgt_ids", "line")
            check_ranges(
                [self.links[n] for n in lines],
                [self._words(ids) for ids in src],
                [self._words(ids) for ids in tgt],
                path,
                numbers=[n + 1 for n in lines],
            )

    def _words(self, ids: list[int]) -> int:
        return int(word_index(self.starts[ids])[-1]) + 1 if ids else 0

    def targets(
        self, src_ids: list[list[int]], tgt_ids: list[list[int]], lines: list[int], max_len: int
    ) -> Tensor:
        """(B, T, S) q(s | t) for a batch `collate` pads the same way (pieces cut to `max_len` - 1,
        then EOS); rows of unsupervised positions are zero. Row t holds piece t - shift's links."""
        src_ids = [s[: max_len - 1] for s in src_ids]
        tgt_ids = [t[: max_len - 1] for t in tgt_ids]
        S, T = max(map(len, src_ids)) + 1, max(map(len, tgt_ids)) + 1
        out = np.zeros((len(lines), T, S), dtype=np.float32)
        for b, (s, t, line) in enumerate(zip(src_ids, tgt_ids, lines, strict=True)):
            links = self.links[line].possible
            if not links or not s or not t:
                continue
            sw, tw = word_index(self.starts[s]), word_index(self.starts[t])
            words = np.zeros((sw[-1] + 1, tw[-1] + 1), dtype=np.float32)  # (source words, target words)
            i, j = np.array(sorted(links)).T
            keep = (i <= sw[-1]) & (j <= tw[-1])  # words cut off with their pieces
            words[i[keep], j[keep]] = 1.0
            out[b, self.shift : len(t) + self.shift, : len(s)] = words.T[tw][:, sw]  # (pieces, pieces)
        mass = out.sum(-1, keepdims=True)
        return torch.from_numpy(np.divide(out, mass, out=np.zeros_like(out), where=mass > 0))

    def loss(self, cross: list[Tensor], targets: Tensor) -> Tensor:
        """The summed term, weighted: `cross` is the record's cross-attention, a (B, H, T, S) per
        layer; the first head of the chosen layer is supervised."""
        layer = supervised_layer(self.layer, len(cross))
        if layer > len(cross):
            raise Seq2SeqError(f"--guided-layer {layer}: the model has {len(cross)} decoder layers")
        attention = cross[layer - 1][:, 0].float()  # (B, T, S)
        return -self.weight * (targets * attention.clamp_min(1e-6).log()).sum()


def guidance(config, run_dir: Path, train_pairs: Callable[[], list]) -> tuple[object, str | None]:
    """The recipe with --guided-alignment decided (`auto` becomes eflomal or none) and, for
    eflomal, its links of the training pairs kept in the run (computed once: a resumed run reads
    them again); and what to tell the user, if anything. Before anything of the run is written."""
    asked = config.guided_alignment
    if asked not in ("auto", "eflomal"):
        return config, None
    if config.stream:  # `auto` only: a streamed corpus is read once, never stored, so never aligned
        return replace(config, guided_alignment=None), None
    if find_spec("eflomal") is None:
        if asked == "eflomal":
            raise Seq2SeqError(f"--guided-alignment eflomal needs eflomal: {INSTALL}")
        return replace(config, guided_alignment=None), f"unguided: eflomal is not installed ({INSTALL})"
    pairs = None if (Path(run_dir) / LINKS).is_file() and asked == "eflomal" else list(train_pairs())
    if asked == "auto" and len(pairs) < AUTO_PAIRS:
        why = f"a corpus of {len(pairs)} pairs is too small for eflomal's links"
        return replace(config, guided_alignment=None), f"unguided: {why} (auto guides from {AUTO_PAIRS:,})"
    config = replace(config, guided_alignment="eflomal")
    if pairs is None:
        return config, None
    from seq2seq.alignment.baseline import corpus_links

    start = time.perf_counter()
    links = corpus_links(pairs, config.src, config.tgt)
    write_atomic(Path(run_dir) / LINKS, "".join(f"{pair.pharaoh()}\n" for pair in links).encode())
    took = f"{time.perf_counter() - start:.0f} s; {LINKS}"
    return config, f"guided by eflomal's links of the corpus's {len(links):,} pairs ({took})"


def guide_of(config, train_set: TokenizedPairs, tokenizer, run_dir: Path) -> Guide | None:
    """The run's guide, checked against its training pairs, if it trains with --guided-alignment."""
    if config.guided_alignment is None:
        return None
    path = Path(run_dir) / LINKS if config.guided_alignment == "eflomal" else Path(config.guided_alignment)
    starts = word_starts(tokenizer.id_pieces(list(range(tokenizer.vocab_size))))
    guide = Guide(read_links(path), starts, config.guided_layer, config.guided_weight, config.guided_position)
    guide.check(train_set, path)
    return guide
