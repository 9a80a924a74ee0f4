"""A statistical aligner beside the model's attention: eflomal (Östling & Tiedemann 2016, a Bayesian
IBM-model aligner sampled with MCMC; PyPI `eflomal`, the `[align]` extra), trained on the given
pairs plus any extra ones (the run's training pairs), both directions, symmetrized with
grow-diag-final-and. Words are whitespace tokens, lowercased for the aligner. eflomal seeds its
sampler from the system's entropy and takes no seed, so two runs differ slightly
(docs/alignment.md measures by how much)."""

import tempfile
from pathlib import Path

from seq2seq.alignment.pharaoh import Links, parse_line
from seq2seq.alignment.symmetry import grow_diag_final_and
from seq2seq.alignment.words import split_with_origin, split_words
from seq2seq.data.corpus import load_pairs
from seq2seq.errors import Seq2SeqError

INSTALL = "pip install 'seq2seq[align]'"


def eflomal_links(sources: list[str], targets: list[str], extra: list[tuple[str, str]] = ()) -> list[Links]:
    """Links of each (source, target) line pair, whitespace-tokenized; `extra` pairs are only
    trained on (an aligner learns from the whole corpus, and aligns only what was asked)."""
    try:
        import eflomal
    except ImportError:
        raise Seq2SeqError(f"the eflomal baseline needs eflomal: {INSTALL}") from None
    src = [line.lower() for line in sources] + [s.lower() for s, _ in extra]
    tgt = [line.lower() for line in targets] + [t.lower() for _, t in extra]
    with tempfile.TemporaryDirectory(prefix="seq2seq-eflomal-") as tmp:
        forward, reverse = Path(tmp) / "forward", Path(tmp) / "reverse"
        eflomal.Aligner().align(src, tgt, links_filename_fwd=str(forward), links_filename_rev=str(reverse))
        pairs = zip(_read(forward)[: len(sources)], _read(reverse)[: len(sources)], strict=True)
    return [Links.of(grow_diag_final_and(f, r)) for f, r in pairs]


def eflomal_with_corpus(
    sources: list[str], targets: list[str], corpus: str, src: str, tgt: str, data_dir=None
) -> tuple[list[Links], int]:
    """`eflomal_links` trained also on a corpus's training pairs, split as the shipped gold set is
    (`split_words`), and how many training pairs that was."""
    pairs = load_pairs(corpus, "train", src, tgt, data_dir)
    extra = [(" ".join(split_words(s, src)), " ".join(split_words(t, tgt))) for s, t in pairs]
    return eflomal_links(sources, targets, extra), len(pairs)


def corpus_links(pairs: list[tuple[str, str]], src: str, tgt: str) -> list[Links]:
    """eflomal's links of a corpus's pairs (guided alignment's teacher): split as the gold set is
    (`split_words`), both directions, grow-diag-final-and, then mapped back onto each line's own
    whitespace tokens, which training counts words by."""
    split = [(split_with_origin(s, src), split_with_origin(t, tgt)) for s, t in pairs]
    links = eflomal_links([" ".join(s[0]) for s, _ in split], [" ".join(t[0]) for _, t in split])
    return [
        Links.of({(s[1][i], t[1][j]) for i, j in pair.sure})
        for (s, t), pair in zip(split, links, strict=True)
    ]


def _read(path: Path) -> list[set]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [parse_line(line, f"eflomal's {path.name} links line {n}").sure for n, line in enumerate(lines, 1)]
