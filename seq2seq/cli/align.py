"""`seq2seq align`: word alignments of sentence pairs in Pharaoh format, one line out per pair in,
from the model's cross-attention or attribution, or from eflomal beside it; scored against gold
links with --gold. Its options are `AlignArgs`' fields (their combinations checked there), the
library does the aligning (seq2seq/alignment/runs.py), cli/links.py the reading and printing."""

from dataclasses import dataclass
from pathlib import Path

import typer

from seq2seq.cli.links import check_gold, draw, print_scores, read_gold, write_links
from seq2seq.cli.options import (
    DATA_DIR,
    DEVICE,
    RUN,
    decoding,
    fields,
    run_dir,
)
from seq2seq.decoding.options import ONE_BEST, DecodeOptions
from seq2seq.errors import Seq2SeqError
from seq2seq.fields import option
from seq2seq.files.reading import read_lines
from seq2seq.files.writing import Outputs

METHOD_HELP = (
    "attention (cross-attention of --layer/--head at the position that produced each target word), "
    "shift (the same one step later, where the word is the decoder's input: Shift-Att), gradxinput "
    "(gradient x input over the source embeddings), ig (integrated gradients, --steps) or layer (the "
    "run's alignment layer, `seq2seq align-train`) [default, with no --layer/--head given: the run's "
    "alignment layer where it has one; else the head its --guided-alignment trained, read where it was "
    "trained; else, for an en<->fr run, the head the shipped gold set's development half chooses; else "
    "attention]."
)
EXTRACT_HELP = (
    "argmax: each target word linked to its highest-scoring source word; intersect: those argmax links "
    "whose source word's highest-scoring target word is that word too; grow: both directions' argmax "
    "links symmetrized by grow-diag-final-and; threshold: to every source "
    "word holding at least --threshold of the word's (positive) score. Scores of pieces are merged "
    "into words: the mean over the target word's pieces of the sum over the source word's "
    "[default: argmax; with --markup, intersect, the rule translate places tags by]."
)


@dataclass
class AlignArgs:
    """`align`'s own options (beside --run, --data-dir, --device and the decoding options)."""

    source: Path = option(..., "Source sentences, one a line; words: whitespace tokens.")
    target: Path | None = option(
        None, "Their translations, forced through the decoder [default: the model's own]."
    )
    method: str | None = option(None, METHOD_HELP)
    layer: int | None = option(None, "Decoder layer, from 1 [default: last].", 1, None)
    head: int | None = option(None, "Head, from 1 [default: their mean].", 1, None)
    steps: int = option(32, "Integrated gradients' steps.", 1, 1024)
    extract: str | None = option(None, EXTRACT_HELP)
    threshold: float | None = option(
        None,
        "For --extract threshold and mass [default: 0.5; for the alignment layer, the threshold "
        "align-train chose on the development half].",
        0.0,
        1.0,
    )
    gold: Path | None = option(
        None, "Gold links (Pharaoh i-j Sure / i?j Possible, or NAACL): print P, R and AER."
    )
    all_heads: bool = option(
        False, "With --gold: the AER of every layer and head (attention or shift).", flag="--all-heads"
    )
    baseline: str | None = option(
        None,
        "eflomal: align with eflomal (the [align] extra) trained on the run's training pairs "
        "(split as the shipped gold set is) and these, instead of the model.",
    )
    reverse_run: Path | None = option(
        None,
        "A run that translates the other way (target -> source): each pair's word scores are the "
        "mean of the two directions' (the reverse run's turned round), the links extracted from them by "
        "--extract; each run read with the head its --guided-alignment trained, or with "
        "--method/--layer/--head.",
    )
    combine: str = option(
        "mean",
        "With --reverse-run, how the two directions' word scores become one: mean (a link either "
        "direction holds), harmonic (the harmonic mean: both must hold it) or product.",
        choices=("mean", "harmonic", "product"),
    )
    output: Path | None = option(None, "Write the links here [default: stdout].")
    as_json: bool = option(False, "Scores (or links) as JSON.", flag="--json")
    attention_png: Path | None = option(
        None,
        "Draw each pair's cross-attention (--layer/--head) with its links (and --gold's) over it "
        "and the attribution beside, into FILE (several pairs: FILE-<line>.png).",
    )
    attention_html: Path | None = option(
        None,
        "The attention explorer of every pair, links and gold drawn over the maps, attribution a "
        "toggle away, as one offline HTML file.",
    )
    markup: bool = option(
        False,
        "The source lines hold inline HTML tags: write each target with them placed around the "
        "words aligned to the words they enclose (as translate --format html does), not the links.",
        flag="--markup",
    )

    @property
    def pictures(self) -> bool:
        return self.attention_png is not None or self.attention_html is not None

    @property
    def rule(self) -> str:
        """--extract, else the rule a translation's tags are placed by (--markup) or argmax."""
        from seq2seq.alignment.runs import PLACING_RULE

        return self.extract or (PLACING_RULE if self.markup else "argmax")

    @property
    def given(self) -> bool:
        """Whether the user chose how to read the model (else a guided run's trained head)."""
        return self.method is not None or self.layer is not None or self.head is not None

    def check(self) -> None:
        """The combinations of options `align` refuses, each in one line naming the option."""
        if self.pictures and (self.baseline is not None or self.all_heads):
            raise typer.BadParameter(
                "draws the model's links: not with --baseline or --all-heads",
                param_hint="--attention-png/--attention-html",
            )
        if self.attention_png is not None:
            from seq2seq.views import plots

            plots.require()
        if self.all_heads and (self.gold is None or self.method not in (None, "attention", "shift")):
            raise typer.BadParameter(
                "goes with --gold and --method attention or shift", param_hint="--all-heads"
            )
        if self.baseline not in (None, "eflomal"):
            raise typer.BadParameter(f"must be eflomal, not {self.baseline!r}", param_hint="--baseline")
        if self.reverse_run is not None and (self.baseline is not None or self.all_heads):
            raise typer.BadParameter(
                "aligns with the model: not with --baseline or --all-heads", param_hint="--reverse-run"
            )
        if self.combine != "mean" and self.reverse_run is None:
            raise typer.BadParameter("combines two directions: give --reverse-run", param_hint="--combine")
        if self.baseline is not None and self.target is None:
            raise typer.BadParameter("needs --target: eflomal aligns given pairs", param_hint="--baseline")

    def check_markup(self) -> None:
        if self.markup and (self.target is None or self.gold is not None or self.all_heads or self.pictures):
            raise typer.BadParameter(
                "places tags into given targets: needs --target, alone", param_hint="--markup"
            )


def align(
    run: Path | None = RUN,
    data_dir: str | None = DATA_DIR,
    device: str = DEVICE,
    args: AlignArgs = fields(AlignArgs),
    options: DecodeOptions = decoding(ONE_BEST),  # its own translations, when no --target
):
    """Word alignments, one Pharaoh line (i-j: source word i, target word j, from 0) per pair."""
    from seq2seq.alignment.runs import check_turned_round, eflomal_links

    run = run_dir(run)
    outputs = Outputs(args.source, args.target, args.gold, run=run, reads=(args.reverse_run,))
    outputs.claim_fields(args, "output", "attention_png", "attention_html")
    args.check()
    reverse = None if args.reverse_run is None else run_dir(args.reverse_run)
    if reverse is not None:
        check_turned_round(run, reverse)
    args.check_markup()
    sources, tagged = read_sources(args, outputs)
    targets = read_lines(args.target) if args.target is not None else None
    if targets is not None and len(targets) != len(sources):
        raise Seq2SeqError(f"{args.source} has {len(sources)} lines but {args.target} has {len(targets)}")
    gold_links = read_gold(args.gold, len(sources))
    if args.baseline is not None:
        links, described = eflomal_links(run, data_dir, sources, targets), "eflomal (grow-diag-final-and)"
        check_gold(args.gold, gold_links, [s.split() for s in sources], [t.split() for t in targets])
    else:
        found = with_model(args, (run, reverse, device), options, sources, targets, gold_links)
        if found is None:  # --all-heads printed its table
            return
        links, described = found
    write_links(args, links, described, gold_links, tagged, targets)


def read_sources(args: AlignArgs, outputs: Outputs) -> tuple[list[str], list | None]:
    """The source lines (with --markup, their plain text, and the tagged runs), and FILE-<line>.png
    of each pair claimed before any work."""
    sources, tagged = read_lines(args.source), None
    if args.markup:  # the tags out, the plain sources aligned
        from seq2seq.documents.html import tagged_line

        tagged = [tagged_line(line, number) for number, line in enumerate(sources, start=1)]
        sources = [r.text for r in tagged]
    if args.attention_png is not None and len(sources) > 1:
        from seq2seq.files.writing import numbered

        for number in range(1, len(sources) + 1):
            outputs.claim("attention_png", numbered(args.attention_png, number))
    return sources, tagged


def with_model(args: AlignArgs, runs: tuple, options, sources, targets, gold_links) -> tuple | None:
    """The model's links and how they were read; None where --all-heads printed its table."""
    from seq2seq.alignment.api import align as align_pairs
    from seq2seq.alignment.api import head_name, head_scores
    from seq2seq.alignment.runs import both_directions
    from seq2seq.cli.display import err
    from seq2seq.runs.load import load_run

    run, reverse, device = runs
    model, tokenizer = load_run(run, device)
    chosen, told = method_of(args, run, (model, tokenizer), given_method(args, run))
    rule, threshold = args.rule, 0.5 if args.threshold is None else args.threshold
    if chosen.name == "layer":  # its links: its own rule, at the threshold chosen for it
        rule = "mass"
        threshold = chosen.aligner.threshold if args.threshold is None else args.threshold
    if args.all_heads:
        shifted = chosen.name == "shift"
        table, found = head_scores(
            model, tokenizer, sources, targets, gold_links, shifted, rule, threshold, options
        )
    else:
        found = align_pairs(model, tokenizer, sources, targets, chosen, rule, threshold, options)
    if reverse is not None:
        back = load_run(reverse, device)
        method, told_back = method_of(args, reverse, back, chosen, "the reverse run: ")
        told = "\n".join(filter(None, (told, told_back)))
        found = both_directions(found, back, method, (rule, threshold, args.combine), options)
    check_gold(args.gold, gold_links, [a.source_words for a in found], [a.target_words for a in found])
    if told:  # how the run was read, once the pairs are known good
        err.print(told, markup=False)
    if args.all_heads:
        print_scores({head_name(shifted, *key): result for key, result in table.items()}, args.as_json)
        return None
    if args.pictures:
        draw(model, found, gold_links, chosen, args.attention_png, args.attention_html)
    return [a.links for a in found], found[0].method if found else chosen.describe()


def given_method(args: AlignArgs, run: Path):
    """--method (with --layer, --head, --steps); `layer` reads the run's alignment layer."""
    from seq2seq.alignment.aligner import layer_method
    from seq2seq.alignment.methods import Method

    if args.method != "layer":
        return Method(args.method or "attention", args.layer, args.head, args.steps)
    method = layer_method(run)
    if method is None:
        raise Seq2SeqError(f"{run} has no alignment layer: train one with `seq2seq align-train --run {run}`")
    return method


def method_of(args: AlignArgs, run: Path, loaded, chosen, who: str = "") -> tuple:
    """`chosen`, or where no method, layer or head was given the run's best reading
    (`alignment.runs.best_method`: its layer, guided head or dev-chosen head), and the line that
    tells it (after `who`), if any. --all-heads reads every head, shifted where the run's guided
    head is."""
    from seq2seq.alignment.runs import best_method, trained_method

    if args.given:
        return chosen, None
    if args.all_heads:
        return trained_method(run, loaded[0], chosen.steps) or chosen, None
    best = best_method(run, *loaded, args.rule, chosen.steps)
    return (chosen, None) if best is None else (best[0], who + best[1])
