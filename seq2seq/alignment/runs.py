"""Word alignment with a run, as `seq2seq align` does it: the run's best reading (its alignment
layer, the head its guided training taught, read where it was trained, or the head the shipped gold
set's development half chooses), both directions of two runs combined, and eflomal beside the
model on the run's own training pairs. The command parses, calls these and prints."""

from pathlib import Path

from seq2seq.alignment.api import Alignment, symmetrized
from seq2seq.alignment.api import align as align_pairs
from seq2seq.alignment.methods import Method
from seq2seq.decoding.attention import cross_layers
from seq2seq.decoding.options import DecodeOptions
from seq2seq.errors import FieldError
from seq2seq.runs.recipe import run_trained_head, stored_languages


def trained_method(run: Path, model, steps: int) -> Method | None:
    """The method that reads the head the run's --guided-alignment trained (None for a run trained
    without), as Marian's and fairseq's aligners read theirs."""
    trained = run_trained_head(run, cross_layers(model))
    return None if trained is None else Method(*trained, steps)


def describe_trained(method: Method) -> str:
    """What a user is told when the trained head is read."""
    where = ", shifted by one (Shift-Att)" if method.name == "shift" else ""
    return (
        f"aligning with the head --guided-alignment trained: layer {method.layer} head {method.head}{where}"
    )


def best_method(
    run: Path, model, tokenizer, rule: str = "argmax", steps: int = 32
) -> tuple[Method, str] | None:
    """How the run aligns best where the user chose nothing, and the line that tells it: its
    alignment layer (`align-train`), else the head its --guided-alignment trained, else the head
    with the lowest AER (by `rule`) on the shipped gold set's development half, for a run between
    its languages (en and fr) where the source tree is at hand; None else (the last layer's mean)."""
    from seq2seq.alignment.aligner import layer_method

    layer = layer_method(run)
    if layer is not None:
        return layer, f"aligning with {layer.describe()}"
    trained = trained_method(run, model, steps)
    if trained is not None:
        return trained, describe_trained(trained)
    return dev_head(run, model, tokenizer, rule)


# How an attention reading's links are drawn to place a document's tags (an alignment layer's by its
# own rule): `intersect` places more tags exactly than `argmax` on the gold set's development half
# (scripts/bench_markup.py).
PLACING_RULE = "intersect"


def placing_method(run: Path, model, tokenizer) -> Method | None:
    """How a document's tags are placed for the run (translate, the server): `best_method`'s, a
    head chosen on the development half chosen by the rule its links are placed by."""
    best = best_method(run, model, tokenizer, PLACING_RULE)
    return None if best is None else best[0]


def dev_head(run: Path, model, tokenizer, rule: str) -> tuple[Method, str] | None:
    """`best_method`'s last resort: each layer and head read against the development half (its
    pairs turned round for a fr->en run; those the model reads whole, if half of them or more),
    one teacher-forced pass."""
    from seq2seq.alignment.aligner import development_half
    from seq2seq.alignment.api import head_scores

    half = development_half(stored_languages(run)[1:])
    if half is None:
        return None
    limit = model.cfg.max_positions - 1  # the pairs the model reads whole; half of them at least
    pieces = zip(tokenizer.encode(half[0]), tokenizer.encode(half[1], "target"), strict=True)
    fit = [n for n, (s, t) in enumerate(pieces) if len(s) <= limit and len(t) <= limit]
    if 2 * len(fit) < len(half[0]):
        return None
    sources, targets, gold = ([part[n] for n in fit] for part in half)
    table, _ = head_scores(model, tokenizer, sources, targets, gold, shifted=False, rule=rule)
    (layer, head), best = min(table.items(), key=lambda item: item[1].aer)
    which = f"layer {layer} " + ("mean of heads" if head is None else f"head {head}")
    return Method("attention", layer, head), (
        f"aligning with attention {which}, the gold set's development half's best (AER {best.aer:.3f})"
    )


def check_turned_round(run: Path, reverse_run: Path) -> None:
    """Before any model loads: the reverse run must translate the run's languages the other way."""
    (_, src, tgt), (_, back_src, back_tgt) = stored_languages(run), stored_languages(reverse_run)
    if (back_src, back_tgt) != (tgt, src):
        raise FieldError("reverse_run", f"{reverse_run} translates {back_src}->{back_tgt}, not {tgt}->{src}")


def both_directions(
    found: list[Alignment],
    reverse,
    method: Method,
    extraction: tuple[str, float, str],
    options: DecodeOptions,
) -> list[Alignment]:
    """The forward alignments `found` combined with the reverse run's (`reverse`: its model and
    tokenizer) of the same pairs turned round (the forward run's translations when no target was
    given), read with `method`: the two directions' word scores combined, extracted by
    `extraction` (rule, threshold, combination: `symmetrized`)."""
    model, tokenizer = reverse
    # a pair with a side of no words (a translation to nothing) has no links: aligned as blank
    sources = [" ".join(a.source_words) if a.target_words else "" for a in found]
    targets = [" ".join(a.target_words) for a in found]
    turned = "the reverse run reads each pair turned round: "
    sides = (f"{turned}target", f"{turned}source")
    back = align_pairs(model, tokenizer, targets, sources, method, "argmax", 0.0, options, sides)
    return symmetrized(found, back, *extraction)


def eflomal_links(run: Path, data_dir: str | None, sources: list[str], targets: list[str]) -> list[set]:
    """eflomal's links (grow-diag-final-and) of the pairs, trained with the run's training pairs."""
    from seq2seq.alignment.baseline import eflomal_with_corpus

    links, _ = eflomal_with_corpus(sources, targets, *stored_languages(run), data_dir)
    return [pair.sure for pair in links]
