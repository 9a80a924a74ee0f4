"""The training recipe of a run, as config.json's "train" section records it. Each field is the one
declaration of its option of `seq2seq train` (`fields.option`: help, range, flag); the command's
options and the checks of a stored run are built from these declarations."""

from dataclasses import dataclass
from pathlib import Path

from seq2seq.data.corpus import is_hub
from seq2seq.fields import check_choices, option, ranged
from seq2seq.runs.recipe import GUIDANCE

FREEZE = ("none", "encoder", "embeddings")  # what a fine-tuned run keeps as its start had it
GUIDED_POSITIONS = ("output", "input")  # where guided alignment supervises a piece (guided.py)
# --guided-alignment's words besides a links file: eflomal's links where the extra and the corpus allow
# them (auto), eflomal's links always (eflomal), or no guidance (none; stored as null)
GUIDES = ("auto", "eflomal", "none")
DECAYS = ("rsqrt", "none")  # the lr between warmup and cooldown: falling as 1/sqrt(step), or held


@dataclass
class TrainConfig:
    corpus: str = option("multi30k", "multi30k, a path pattern with {split}, or a hub id[:config].")
    src: str = option("en", "Source language.")
    tgt: str = option("fr", "Target language.")
    vocab_size: int = option(8000, "Vocabulary size, if the run has no tokenizer.", 8, 1 << 20)
    tokenizer_sentences: int = option(
        500_000,
        "Sentences (both languages) the tokenizer trains on, if the run has none: a larger corpus is "
        "sampled, a smaller one read whole.",
        1000,
        None,
    )
    # a streamed corpus is never stored (training/streaming.py)
    stream: bool = option(
        False,
        "Read a hub --corpus as a stream: its training pairs are tokenized a part at a time and never "
        "stored, so a corpus larger than the disk trains in one pass (a tokenizer the run lacks learns "
        "from the stream's first --tokenizer-sentences).",
        flag="--stream/--no-stream",
    )
    stream_part: int = option(
        100_000,
        "With --stream: pairs read, tokenized and cut into batches together, their batches shuffled "
        "(memory holds one part).",
        1,
        None,
    )
    # sentences x longest side, in pieces
    max_tokens: int = option(3072, "Batch size in pieces.", 16, 1 << 24)
    lr: float = option(2.5e-3, "Peak learning rate, reached at the end of warmup.", 0.0, 10.0)
    warmup: int = option(400, "Warmup steps.", 1, None)
    # the lr held at its peak after warmup (decay none), then falling linearly to 0 over the
    # budget's last `cooldown` share (schedule.py). A run with no budget at all (no epochs, steps
    # or minutes: library use only) would hold the peak
    cooldown: float = option(
        1.0,
        "The budget's last share over which the learning rate falls linearly to 0 (0: off; 1.0: the "
        "whole budget); a run stopped mid-budget resumes from the share it had used.",
        0.0,
        1.0,
    )
    decay: str = option(
        "none",
        "The learning rate between warmup and cooldown: rsqrt (falling as 1/sqrt(step): for a run "
        "with no budget to decay over) or none (held at its peak; with --cooldown 1.0 a linear decay "
        "to 0 over the whole budget).",
        choices=DECAYS,
    )
    label_smoothing: float = option(0.1, "Label smoothing of the training loss.", 0.0, 0.9)
    weight_decay: float = option(0.1, "AdamW's weight decay (decoupled; every parameter).", 0.0, 10.0)
    subword_alpha: float = option(
        0.3,
        "Sample source segmentations each epoch, P(x)^alpha (subword regularization; 0: off, for a "
        "run of a few minutes, which needs the steps sampling costs).",
        0.0,
        1.0,
    )
    # a budget that buys many epochs overfits at the rate that learns fastest in few: the dropout
    # rises from the model's own to `late_dropout`, linearly from epoch `late_dropout_from` over
    # `late_dropout_over` epochs (schedule.dropout_at); a budget of 10 epochs trains without it
    late_dropout: float = option(
        0.3,
        "Late dropout: raise the dropout to this once the run has seen --late-dropout-from epochs, "
        "linearly over --late-dropout-over epochs (0: off; a --dropout of 0, or above this, stays as it "
        "is); for budgets that buy many epochs.",
        0.0,
        0.9,
    )
    late_dropout_from: float = option(10.0, "The epoch late dropout starts rising.", 0.0, None)
    late_dropout_over: float = option(10.0, "Epochs late dropout takes to rise.", 0.0, None)
    clip_norm: float = option(1.0, "Clip the gradient's global norm to at most this.", 0.0, 1e6)
    average: int = option(
        5, "At the end, validate the mean of the last N validations' weights (0: off).", 0, 1000
    )
    epochs: int | None = option(
        10, "Epochs at most [default: 10, or no limit with --max-minutes].", 1, None, unset=None
    )
    max_steps: int | None = option(None, "Optimizer steps at most.", 1, None)
    # training, validation and checkpoints together
    max_minutes: float | None = option(None, "Wall-clock budget, minutes.", 0.01, None)
    # a time budget is the user's choice, and the average of the last checkpoints gains from it
    patience: int = option(
        0,
        "Stop after this many validations without a better BLEU (0: off, use the whole budget).",
        0,
        None,
    )
    save_every_minutes: float = option(
        5.0, "Save the training state this often, besides each validation.", 0.0, None
    )
    # guided alignment (Garg et al. 2019; Marian's --guided-alignment): a cross-entropy term pulls
    # one cross-attention head towards given word links (training/guided.py)
    guided_alignment: str | None = option(
        "auto",
        "Word links to pull the first cross-attention head of --guided-layer towards: eflomal (eflomal's "
        "links of the training pairs, computed at the start and kept in the run; the `align` extra), "
        "auto (eflomal where the extra is installed and the corpus has 1,000 pairs or more, else "
        "none, said in one line), none, or a Pharaoh file of the training pairs (one line per pair "
        "of the corpus, in its order; i-j, 0-based, source word first; words are whitespace tokens).",
    )
    guided_weight: float = option(
        0.05,
        "The guided alignment loss's weight: its cross-entropy per aligned target piece against the "
        "translation's per token.",
        0.0,
        100.0,
    )
    guided_layer: int | None = option(
        1,
        "The decoder layer (1-based) whose first cross-attention head --guided-alignment supervises "
        "(the first aligns best where the word is read: docs/alignment.md).",
        1,
        None,
    )
    guided_position: str = option(
        "input",
        "Where --guided-alignment supervises a target piece's links: output (the position that "
        "predicts the piece, Garg et al.) or input (one step later, where the piece is the decoder's "
        "input and the head reads it; align with --method shift).",
        choices=GUIDED_POSITIONS,
    )
    # fine-tuning (finetune.py): the start of a new run, recorded in its config.json
    init_from: str | None = option(
        None,
        "Start this new run from RUN's best weights and tokenizer, with a fresh optimizer and schedule "
        "(fine-tuning); the model is RUN's.",
        flag="--init-from",
    )
    freeze: str = option(
        "none",
        "With --init-from: keep a part as RUN has it: none, encoder or embeddings (with tied "
        "embeddings, the output layer too).",
        choices=FREEZE,
    )
    seed: int = option(1, "Random seed.", 0, (1 << 31) - 1)
    device: str = option("auto", "auto, cpu or cuda.")
    bf16: bool = option(
        True,
        "bf16 autocast where it is measured faster (CUDA, most bf16 CPUs), or always fp32.",
        flag="--bf16/--fp32",
    )
    # processes training data-parallel (torchrun sets it); each step takes one batch per process
    world_size: int = ranged(1, 1, 1 << 20)

    def __post_init__(self):
        check_choices(self)
        if self.guided_alignment == "none":
            self.guided_alignment = None
        for name in PATHS:  # what config.json keeps and a resumed run compares
            setattr(self, name, located(getattr(self, name)))
        if self.freeze != "none" and self.init_from is None:
            raise ValueError(
                "--freeze keeps a part of the model --init-from starts with; give --init-from RUN"
            )
        if self.stream and not is_hub(self.corpus):
            raise ValueError(
                f"--stream reads a hub dataset; --corpus {self.corpus} is read from its files and stored "
                "in the run once"
            )
        if self.stream and self.guided_alignment not in (None, "auto"):
            raise ValueError(
                "--guided-alignment names the lines of a stored corpus; it cannot train on a --stream"
            )


# The files and runs a recipe names, kept resolved (`train --init-from run` and a resume with
# `--init-from /abs/path/run` name one start)
PATHS = ("init_from", "guided_alignment")


def located(path: str | None) -> str | None:
    """The location the user means, however typed (relative, `~`, through a link); --guided-alignment's
    words (GUIDES) as they are."""
    return path if path is None or path in GUIDES else str(Path(path).expanduser().resolve())


# The limits belong to one invocation: a resumed run takes them from the new command line (a run
# started with N processes may resume with M).
LIMITS = (
    "epochs",
    "max_steps",
    "max_minutes",
    "patience",
    "save_every_minutes",
    "device",
    "bf16",
    "world_size",
)

# The commit whose `seq2seq train` still trains (and resumes) the runs this version refuses: those
# written before one of today's fields existed, and those that used a lever since removed
# (docs/experiments.md). A removed field at the value listed trained as this version does.
OLDER_RECIPES = "5e0c38e"
# Levers removed after it, each with the last commit that trains it
REMOVED_SINCE = {"guided_context": "b0c6ba6"}
# Fields added since: a run written before one existed trained as this value does.
ADDED = {
    "tokenizer_sentences": 500_000,  # a run with a config.json has its tokenizer: never used again
    "stream": False,
    "stream_part": 100_000,
    **GUIDANCE,  # what `align` reads of a run that recorded none
    "guided_weight": 0.05,
    "init_from": None,
    "freeze": "none",
}
REMOVED = {
    "guided_context": "causal",
    "target_subword_alpha": 0.0,
    "source_word_dropout": 0.0,
    "target_word_dropout": 0.0,
    "r_drop": 0.0,
    "concat": 0.0,
    "bidirectional": 0,
    "sample_by_epoch": True,
    "order_by_sides": True,
}
