"""`translate` for lines of text: length-sorted batches, each searched greedily (greedy.py), by beam
(beam.py) or by sampling (sampling.py), with an optional forced prefix per line (prefix.py) and an
optional record of the beam (trace.py). The names search's callers use are all importable here.

Shapes: B sentences, S source length.
"""

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import torch
from torch import Tensor

from seq2seq.data.batch import pad
from seq2seq.data.special import EOS_ID
from seq2seq.data.tokenizer import is_blank
from seq2seq.decoding.beam import beam_search
from seq2seq.decoding.constraints import Banks, LineConstraints
from seq2seq.decoding.greedy import greedy
from seq2seq.decoding.options import DecodeOptions
from seq2seq.decoding.prefix import Prefix, prefix_ids
from seq2seq.decoding.rules import Hypothesis, length_notices, max_lengths, output_limit, output_room
from seq2seq.decoding.sampling import Sampler, row_seeds
from seq2seq.decoding.terms import Terms, constraint_ids
from seq2seq.decoding.trace import BeamTrace
from seq2seq.device import autocast
from seq2seq.errors import Seq2SeqError
from seq2seq.models.protocol import Seq2SeqModel

__all__ = [  # what search's callers import from here
    "DecodeOptions",
    "Hypothesis",
    "Terms",
    "Translations",
    "beam_search",
    "decode",
    "greedy",
    "length_notices",
    "max_lengths",
    "output_limit",
    "output_room",
    "search",
    "search_in_batches",
    "searchable",
    "source_ids",
    "translate",
]


@dataclass
class Translations:
    nbest: list[list[tuple[str, float]]]  # per input line: (text, score), best first
    tokens: list[list[int]]  # per input line: the best hypothesis' output ids, EOS excluded
    truncated: int = 0  # lines cut to the model's longest source
    traces: list[list[dict]] | None = None  # per input line, with `trace`: the beam's nodes (trace.py)
    best: list[str] = field(init=False)

    def __post_init__(self):
        self.best = [hyps[0][0] if hyps else "" for hyps in self.nbest]


@torch.inference_mode()
def translate(
    model: Seq2SeqModel,
    tokenizer,
    lines: list[str],
    options: DecodeOptions,
    prefixes: list[str] | None = None,
    trace: bool = False,
    constraints: list[Terms] | None = None,
) -> Translations:
    """Translate lines in length-sorted batches, returning results in input order; a blank line
    (`is_blank`, or no pieces at all) gives an empty translation without touching the model.
    `prefixes`: one per line, the text its translation starts with ("" for none). `trace`: keep
    each line's beam (beam search, also at beam 1), in `Translations.traces`. `constraints`: one
    per line, the terms its translation must hold and must not (beam search). The search alone:
    `seq2seq.translate` (request/) runs a whole request, case and checks included."""
    options.check_for(model.cfg.vocab_size, output_limit(model))
    if trace and options.sample:
        raise Seq2SeqError("a beam trace records beam search; sampling has no beam to record")
    if constraints is not None:
        options.check_terms()
    forced = prefix_ids(tokenizer, prefixes, len(lines), output_limit(model), options.max_len)
    banked = constraint_ids(tokenizer, constraints, len(lines), options.beam, output_room(model, options))
    ids, truncated = source_ids(model, tokenizer, lines)
    return decode(model, tokenizer, ids, searchable(lines, ids), options, forced, trace, banked, truncated)


def searchable(lines: list[str], ids: list[list[int]]) -> list[int]:
    """The lines a search reads: not blank, and not reduced by the tokenizer to no pieces at all
    (the model would read EOS alone)."""
    return [i for i, line in enumerate(lines) if not is_blank(line) and len(ids[i]) > 1]


@torch.inference_mode()
def decode(
    model: Seq2SeqModel,
    tokenizer,
    ids: list[list[int]],
    todo: list[int],
    options: DecodeOptions,
    forced: list[list[int]] | None = None,
    trace: bool = False,
    banked: list[LineConstraints | None] | None = None,
    truncated: int = 0,
    progress: Callable[[int], None] | None = None,
) -> Translations:
    """The lines `todo` of the source pieces `ids` (each ended with EOS) searched and detokenized,
    every other line the empty translation; `forced` and `banked`, each line's prefix and terms as
    pieces, checked already (`translate` checks them; so does a request, request/); `progress`
    told of each line searched."""
    nbest: list[list[tuple[str, float]]] = [[] for _ in ids]
    tokens: list[list[int]] = [[] for _ in ids]
    traces: dict[int, list[dict]] | None = {} if trace else None
    for i, sentence_hyps in search_in_batches(model, ids, todo, options, forced, traces, banked):
        texts = tokenizer.decode([h.tokens for h in sentence_hyps])
        nbest[i] = [(text, h.score) for text, h in zip(texts, sentence_hyps, strict=True)]
        tokens[i] = sentence_hyps[0].tokens
        if progress is not None:
            progress(1)
    kept = None if traces is None else [traces.get(i, []) for i in range(len(ids))]
    return Translations(nbest, tokens, truncated, kept)


def search_in_batches(
    model: Seq2SeqModel,
    ids: list[list[int]],
    todo: list[int],
    options: DecodeOptions,
    prefixes: list[list[int]] | None = None,
    traces: dict[int, list[dict]] | None = None,
    constraints: list[LineConstraints | None] | None = None,
) -> Iterator[tuple[int, list[Hypothesis]]]:
    """(i, the hypotheses of ids[i]) for each i of `todo`, searched in batches of similar length
    (less padding), in that length order; `prefixes[i]`, the pieces ids[i]'s output starts with;
    `traces`, where each i's beam goes, when given; `constraints[i]`, ids[i]'s. In beam search
    lines with prefixes are batched by the prefix's length first: then one pass fills the cache
    with every prefix of a batch, and no beam spends its rows on a prefix still being forced; a
    greedy row forces a piece at the cost of a step, so there the source's length alone, which
    pads least, decides
    (docs/decoding.md measures both)."""
    device = next(model.parameters()).device
    if prefixes is not None and any(prefixes) and options.beam > 1 and not options.sample:
        todo = sorted(todo, key=lambda i: (len(prefixes[i]), len(ids[i])))
    else:
        todo = sorted(todo, key=lambda i: len(ids[i]))
    for start in range(0, len(todo), options.batch_size):
        chunk = todo[start : start + options.batch_size]
        src = pad([ids[i] for i in chunk]).to(device)
        prefix = None if prefixes is None else Prefix.of([prefixes[i] for i in chunk], device)
        trace = None if traces is None else BeamTrace()
        banks = None if constraints is None else Banks.of([constraints[i] for i in chunk], device)
        seeds = None
        if options.sample:
            seeds = row_seeds(options.seed, [ids[i] for i in chunk], options.num_samples)
        with torch.inference_mode(), autocast(device, options.bf16):
            hyps = search(model, src, options, prefix, trace, seeds, banks)
        if trace is not None:
            traces.update(zip(chunk, trace.nodes, strict=True))
        yield from zip(chunk, hyps, strict=True)


def source_ids(model: Seq2SeqModel, tokenizer, lines: list[str]) -> tuple[list[list[int]], int]:
    """Each line's piece ids cut to the model's longest source and ended with EOS, and how many
    lines were cut."""
    ids, cut = fit_sources(model, tokenizer.encode(lines))
    return ids, sum(cut)


def fit_sources(model: Seq2SeqModel, ids: list[list[int]]) -> tuple[list[list[int]], list[bool]]:
    """`source_ids` of encoded lines, with whether each line was cut."""
    max_src = model.cfg.max_positions - 1  # room for EOS
    return [[*x[:max_src], EOS_ID] for x in ids], [len(x) > max_src for x in ids]


def search(
    model: Seq2SeqModel,
    src: Tensor,
    options: DecodeOptions,
    prefix: Prefix | None = None,
    trace: BeamTrace | None = None,
    seeds: list[int] | None = None,
    banks: Banks | None = None,
) -> list[list[Hypothesis]]:
    """Sampling with `options.sample` (`seeds`: one per drawn row, `row_seeds`); else greedy when
    the beam is 1 (same result as beam_search, cheaper) and no trace or constraint is asked; beam
    search otherwise. Per sentence its hypotheses, best first."""
    least = None if prefix is None else prefix.lens  # (B,) the output a sentence needs at least
    if banks is not None:
        least = banks.pieces if least is None else least + banks.pieces
    max_lens = max_lengths(src, options, output_limit(model), least)
    if options.sample:
        N = options.num_samples
        seeds = seeds if seeds is not None else row_seeds(None, src.tolist(), N)
        drawn = greedy(model, src, max_lens, options, prefix, Sampler(options, seeds))
        return [sorted(drawn[b * N : (b + 1) * N], key=lambda h: -h.score) for b in range(src.size(0))]
    if options.beam == 1 and trace is None and banks is None:
        return [[h] for h in greedy(model, src, max_lens, options, prefix)]
    return beam_search(model, src, max_lens, options, prefix, trace, banks)
