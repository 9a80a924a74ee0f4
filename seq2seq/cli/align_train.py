"""`seq2seq align-train`: an alignment layer fitted to a trained run (seq2seq/alignment/layer.py)
on its training pairs and eflomal's links of them, kept in the run; `seq2seq align` then aligns
with it by default."""

from dataclasses import dataclass
from pathlib import Path

from seq2seq.cli import display
from seq2seq.cli.options import DATA_DIR, DEVICE, RUN, field_parameters, run_dir, taken, with_parameters
from seq2seq.fields import option


@dataclass
class AlignTrainArgs:
    """`align-train`'s own options (beside --run, --data-dir and --device)."""

    pairs: int = option(0, "Training pairs to fit on, the first N [default: all].", 0, None)
    epochs: int = option(4, "Passes over them.", 1, 100)


def align_train(run: Path | None = RUN, data_dir: str | None = DATA_DIR, device: str = DEVICE, **given):
    """Fit an alignment layer to the run (the model itself is left as it is): its training pairs,
    eflomal's links of them as the teacher (the `align` extra), minutes on a CPU."""
    from seq2seq.alignment.aligner import SETTINGS, fit, save
    from seq2seq.data.corpus import load_pairs
    from seq2seq.runs.load import load_run
    from seq2seq.runs.recipe import stored_languages

    args, run = taken(AlignTrainArgs, given), run_dir(run)
    corpus, src, tgt = stored_languages(run)
    pairs = load_pairs(corpus, "train", src, tgt, data_dir)
    model, tokenizer = load_run(run, device)
    layer, settings = fit(
        model, tokenizer, pairs[: args.pairs or None], (src, tgt), args.epochs, display.note
    )
    save(run, layer, settings)
    chosen = f"threshold {settings['threshold']:g}"
    if settings["dev_aer"] is not None:
        chosen += f", chosen on the gold set's development half (AER {settings['dev_aer']:.3f})"
    display.note(f"wrote the alignment layer into {run} ({SETTINGS}: {chosen}); `seq2seq align` reads it")


with_parameters(align_train, field_parameters(AlignTrainArgs))
