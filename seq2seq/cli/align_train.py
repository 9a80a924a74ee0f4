"""`seq2seq align-train`: an alignment layer fitted to a trained run (seq2seq/alignment/layer.py)
on its training pairs and eflomal's links of them, kept in the run; `seq2seq align` then aligns
with it by default."""

from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

import typer

from seq2seq.cli import display
from seq2seq.cli.options import DATA_DIR, DEVICE, RUN, fields, run_dir
from seq2seq.fields import option

# The agreement term's weight: the lowest AER of the two layers combined on the gold set's
# development half among 0, 0.3, 1, 3, 10 and 30 (docs/log.md), and of the forward layer alone.
AGREEMENT = 30.0


@dataclass
class AlignTrainArgs:
    """`align-train`'s own options (beside --run, --data-dir and --device)."""

    pairs: int = option(0, "Training pairs to fit on, the first N [default: all].", 0, None)
    epochs: int = option(4, "Passes over them.", 1, 100)
    reverse_run: Path | None = option(
        None,
        "A run that translates the other way: the two runs' layers fitted together, each to its own "
        "model's states and the teacher's links, with an agreement term pulling their word links "
        "towards each other (`align --reverse-run` reads both); each written into its run.",
    )
    agreement: float = option(
        AGREEMENT,
        "With --reverse-run: the agreement term's weight (0: the two fitted side by side).",
        0.0,
        100.0,
    )

    def __post_init__(self):
        if self.agreement != AGREEMENT and self.reverse_run is None:
            raise typer.BadParameter(
                "weighs two runs' agreement: give --reverse-run", param_hint="--agreement"
            )


def align_train(
    run: Path | None = RUN,
    data_dir: str | None = DATA_DIR,
    device: str = DEVICE,
    args: AlignTrainArgs = fields(AlignTrainArgs),
):
    """Fit an alignment layer to the run (the model itself is left as it is): its training pairs,
    eflomal's links of them as the teacher (the `align` extra), minutes on a CPU."""
    from seq2seq.alignment.aligner import SETTINGS, fit, fit_together, save
    from seq2seq.alignment.runs import check_turned_round
    from seq2seq.data.corpus import load_pairs
    from seq2seq.runs.load import load_run
    from seq2seq.runs.lock import run_lock
    from seq2seq.runs.recipe import stored_languages

    run = run_dir(run)
    reverse = None if args.reverse_run is None else run_dir(args.reverse_run)
    if reverse is not None:
        check_turned_round(run, reverse)
    corpus, src, tgt = stored_languages(run)
    pairs = load_pairs(corpus, "train", src, tgt, data_dir)[: args.pairs or None]
    with run_lock(run), run_lock(reverse) if reverse is not None else nullcontext():
        model = load_run(run, device)
        if reverse is None:
            fitted = [(run, *fit(*model, pairs, (src, tgt), args.epochs, display.note))]
        else:
            both = fit_together(
                model, load_run(reverse, device), pairs, (src, tgt), args.epochs, args.agreement, display.note
            )
            fitted = [(where, *found) for where, found in zip((run, reverse), both, strict=True)]
        for where, layer, settings in fitted:
            save(where, layer, settings)
            chosen = f"threshold {settings['threshold']:g}"
            if settings["dev_aer"] is not None:
                chosen += f", chosen on the gold set's development half (AER {settings['dev_aer']:.3f})"
            display.note(
                f"wrote the alignment layer into {where} ({SETTINGS}: {chosen}); `seq2seq align` reads it"
            )
