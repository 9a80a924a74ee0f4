"""`seq2seq align`: word alignments of sentence pairs in Pharaoh format, one line out per pair in,
from the model's cross-attention or attribution, or from eflomal beside it; scored against gold
links with --gold."""

import json
from pathlib import Path

import typer

from seq2seq.cli.io import read_lines
from seq2seq.cli.links import check_gold, pharaoh, print_scores, read_gold
from seq2seq.cli.options import DATA_DIR, DEVICE, RUN, decode_parameters, decoding, run_dir, with_parameters
from seq2seq.cli.outputs import Outputs, write_file, write_lines
from seq2seq.decoding.options import ONE_BEST
from seq2seq.errors import Seq2SeqError

METHOD_HELP = (
    "attention (cross-attention of --layer/--head at the position that produced each target word), "
    "shift (the same one step later, where the word is the decoder's input: Shift-Att), gradxinput "
    "(gradient x input over the source embeddings) or ig (integrated gradients, --steps) [default: "
    "attention; for a run trained with --guided-alignment and no --layer/--head given, the head it "
    "trained, read where it was trained]."
)
EXTRACT_HELP = (
    "argmax: each target word linked to its highest-scoring source word; intersect: those argmax links "
    "whose source word's highest-scoring target word is that word too; grow: both directions' argmax "
    "links symmetrized by grow-diag-final-and; threshold: to every source "
    "word holding at least --threshold of the word's (positive) score. Scores of pieces are merged "
    "into words: the mean over the target word's pieces of the sum over the source word's."
)


def align(
    source: Path = typer.Option(
        ..., "--source", help="Source sentences, one a line; words: whitespace tokens."
    ),
    target: Path | None = typer.Option(
        None, "--target", help="Their translations, forced through the decoder [default: the model's own]."
    ),
    run: Path | None = RUN,
    method: str | None = typer.Option(None, "--method", help=METHOD_HELP),
    layer: int | None = typer.Option(None, "--layer", min=1, help="Decoder layer, from 1 [default: last]."),
    head: int | None = typer.Option(None, "--head", min=1, help="Head, from 1 [default: their mean]."),
    steps: int = typer.Option(32, "--steps", min=1, max=1024, help="Integrated gradients' steps."),
    extract: str = typer.Option("argmax", "--extract", help=EXTRACT_HELP),
    threshold: float = typer.Option(0.5, "--threshold", min=0.0, max=1.0, help="For --extract threshold."),
    gold: Path | None = typer.Option(
        None, "--gold", help="Gold links (Pharaoh i-j Sure / i?j Possible, or NAACL): print P, R and AER."
    ),
    all_heads: bool = typer.Option(
        False, "--all-heads", help="With --gold: the AER of every layer and head (attention or shift)."
    ),
    baseline: str | None = typer.Option(
        None,
        "--baseline",
        help="eflomal: align with eflomal (the [align] extra) trained on the run's training pairs "
        "(split as the shipped gold set is) and these, instead of the model.",
    ),
    reverse_run: Path | None = typer.Option(
        None,
        "--reverse-run",
        help="A run that translates the other way (target -> source): each pair's word scores are the "
        "mean of the two directions' (the reverse run's turned round), the links extracted from them by "
        "--extract; each run read with the head its --guided-alignment trained, or with "
        "--method/--layer/--head.",
    ),
    data_dir: str | None = DATA_DIR,
    output: Path | None = typer.Option(None, "--output", help="Write the links here [default: stdout]."),
    as_json: bool = typer.Option(False, "--json", help="Scores (or links) as JSON."),
    attention_png: Path | None = typer.Option(
        None,
        "--attention-png",
        help="Draw each pair's cross-attention (--layer/--head) with its links (and --gold's) over it "
        "and the attribution beside, into FILE (several pairs: FILE-<line>.png).",
    ),
    attention_html: Path | None = typer.Option(
        None,
        "--attention-html",
        help="The attention explorer of every pair, links and gold drawn over the maps, attribution a "
        "toggle away, as one offline HTML file.",
    ),
    markup: bool = typer.Option(
        False,
        "--markup",
        help="The source lines hold inline HTML tags: write each target with them placed around the "
        "words aligned to the words they enclose (as translate --format html does), not the links.",
    ),
    device: str = DEVICE,
    **decode,
):
    """Word alignments, one Pharaoh line (i-j: source word i, target word j, from 0) per pair."""
    from seq2seq.alignment.methods import Method

    run = run_dir(run)
    options = decoding(decode)
    outputs = Outputs(source, target, gold, run=run, reads=(reverse_run,))
    for flag, path in (
        ("--output", output),
        ("--attention-png", attention_png),
        ("--attention-html", attention_html),
    ):
        outputs.claim(flag, path)
    pictures = attention_png is not None or attention_html is not None
    if pictures and (baseline is not None or all_heads):
        raise typer.BadParameter(
            "draws the model's links: not with --baseline or --all-heads",
            param_hint="--attention-png/--attention-html",
        )
    if attention_png is not None:
        from seq2seq.views import plots

        plots.require()
    if all_heads and (gold is None or method not in (None, "attention", "shift")):
        raise typer.BadParameter("goes with --gold and --method attention or shift", param_hint="--all-heads")
    if baseline not in (None, "eflomal"):
        raise typer.BadParameter(f"must be eflomal, not {baseline!r}", param_hint="--baseline")
    if reverse_run is not None and (baseline is not None or all_heads):
        raise typer.BadParameter(
            "aligns with the model: not with --baseline or --all-heads", param_hint="--reverse-run"
        )
    if baseline is not None and target is None:
        raise typer.BadParameter("needs --target: eflomal aligns given pairs", param_hint="--baseline")
    if reverse_run is not None:
        reverse_run = run_dir(reverse_run)
        _check_turned_round(run, reverse_run)
    if markup and (target is None or gold is not None or all_heads or pictures):
        raise typer.BadParameter(
            "places tags into given targets: needs --target, alone", param_hint="--markup"
        )
    chosen = Method(method or "attention", layer, head, steps)
    sources = read_lines(source)
    runs = None
    if markup:  # the tags out, the plain sources aligned
        from seq2seq.documents.html import tagged_line

        runs = [tagged_line(line, number) for number, line in enumerate(sources, start=1)]
        sources = [run.text for run in runs]
    if attention_png is not None and len(sources) > 1:  # FILE-<line>.png, each claimed before any work
        from seq2seq.cli.outputs import numbered

        for number in range(1, len(sources) + 1):
            outputs.claim("--attention-png", numbered(attention_png, number))
    targets = read_lines(target) if target is not None else None
    if targets is not None and len(targets) != len(sources):
        raise Seq2SeqError(f"{source} has {len(sources)} lines but {target} has {len(targets)}")
    gold_links = read_gold(gold, len(sources))
    if baseline is not None:
        links, described = _eflomal(run, data_dir, sources, targets), "eflomal (grow-diag-final-and)"
        check_gold(gold, gold_links, [s.split() for s in sources], [t.split() for t in targets])
    else:
        from seq2seq.alignment.api import align as align_pairs
        from seq2seq.alignment.api import head_name, head_scores, symmetrized

        model, tokenizer, options = _load(run, device, options)
        given = method is not None or layer is not None or head is not None
        chosen = chosen if given else _trained_head(run, model, steps) or chosen
        if all_heads:
            shifted = chosen.name == "shift"
            table, found = head_scores(
                model, tokenizer, sources, targets, gold_links, shifted, extract, threshold, options
            )
        elif reverse_run is not None:
            found = align_pairs(model, tokenizer, sources, targets, chosen, extract, threshold, options)
            back = _reverse(found, reverse_run, chosen, given, options, device)
            found = symmetrized(found, back, extract, threshold)
        else:
            found = align_pairs(model, tokenizer, sources, targets, chosen, extract, threshold, options)
        check_gold(gold, gold_links, [a.source_words for a in found], [a.target_words for a in found])
        if all_heads:
            print_scores({head_name(shifted, *key): result for key, result in table.items()}, as_json)
            return
        links = [a.links for a in found]
        described = found[0].method if found else chosen.describe()
        if pictures:
            _draw(model, found, gold_links, chosen, attention_png, attention_html)
    if runs is not None:
        from seq2seq.documents.markup import place

        placed = [
            place(r, [(0, len(r.text))], [t], [k], [""]).text
            for r, t, k in zip(runs, targets, links, strict=True)
        ]
        write_lines(placed, output)
        return
    if output is not None or gold is None:
        if as_json and gold is None:
            lines = [json.dumps(sorted(pair)) for pair in links]
        else:
            lines = [pharaoh(pair) for pair in links]
        write_lines(lines, output)
    if gold is not None:
        from seq2seq.alignment.score import score

        print_scores({described: score(links, gold_links)}, as_json)


with_parameters(align, decode_parameters(ONE_BEST))  # a translation of its own aligned, when no --target


def _load(run, device, options):
    """The run's model and tokenizer, and the decode options (of a source-only alignment)."""
    from seq2seq.runs.load import load_run

    return *load_run(run, device), options


def _check_turned_round(run: Path, reverse_run: Path) -> None:
    """Before any model loads: the reverse run must translate the run's languages the other way."""
    from seq2seq.runs.recipe import stored_languages

    (_, src, tgt), (_, back_src, back_tgt) = stored_languages(run), stored_languages(reverse_run)
    if (back_src, back_tgt) != (tgt, src):
        raise Seq2SeqError(f"--reverse-run {reverse_run} translates {back_src}->{back_tgt}, not {tgt}->{src}")


def _reverse(found, reverse_run: Path, chosen, given: bool, options, device):
    """The pairs of the forward alignments `found` turned round (the forward run's translations when
    no target was given), aligned by the reverse run."""
    from seq2seq.alignment.api import align as align_pairs
    from seq2seq.runs.load import load_run

    model, tokenizer = load_run(reverse_run, device)
    method = (
        chosen if given else _trained_head(reverse_run, model, chosen.steps, "the reverse run: ") or chosen
    )
    # a pair with a side of no words (a translation to nothing) has no links: aligned as blank
    sources = [" ".join(a.source_words) if a.target_words else "" for a in found]
    targets = [" ".join(a.target_words) for a in found]
    turned = "the reverse run reads each pair turned round: "
    sides = (f"{turned}target", f"{turned}source")
    return align_pairs(model, tokenizer, targets, sources, method, "argmax", 0.0, options, sides)


def _trained_head(run: Path, model, steps: int, who: str = ""):
    """The method that reads the head the run's --guided-alignment trained (None for a run trained
    without), as Marian's and fairseq's aligners read theirs, said on stderr (after `who`)."""
    from seq2seq.alignment.methods import Method
    from seq2seq.cli.display import err
    from seq2seq.decoding.attention import cross_layers
    from seq2seq.runs.recipe import run_trained_head

    trained = run_trained_head(run, cross_layers(model))
    if trained is None:
        return None
    name, layer, head = trained
    where = ", shifted by one (Shift-Att)" if name == "shift" else ""
    err.print(f"{who}aligning with the head --guided-alignment trained: layer {layer} head {head}{where}")
    return Method(name, layer, head, steps)


def _draw(model, found, gold_links, chosen, png: Path | None, html: Path | None) -> None:
    """The pictures of every non-blank pair: the links over the attention, the attribution beside
    (the chosen method's, or integrated gradients beside an attention method)."""
    from seq2seq.alignment import pictures
    from seq2seq.alignment.attribution import attribution
    from seq2seq.cli.outputs import numbered

    steps = None if chosen.name == "gradxinput" else chosen.steps
    drawn = []
    for number, a in enumerate(found, start=1):
        if a.maps is None:
            continue
        gold = gold_links[number - 1] if gold_links is not None else None
        scores = attribution(model, *a.ids, steps)
        if png is not None:
            path = png if len(found) == 1 else numbered(png, number)
            write_file(pictures.png(a, chosen.layer, chosen.head, gold, scores), path)
        drawn.append(pictures.sentence(a, number, gold, scores))
    if html is not None:
        write_file(pictures.page(drawn, f"{len(drawn)} aligned pairs: {chosen.describe()}").encode(), html)


def _eflomal(run: Path, data_dir, sources: list[str], targets: list[str]) -> list[set]:
    from seq2seq.alignment.baseline import eflomal_with_corpus
    from seq2seq.runs.recipe import stored_languages

    links, _ = eflomal_with_corpus(sources, targets, *stored_languages(run), data_dir)
    return [pair.sure for pair in links]
