"""The training recipe of a run, as config.json's "train" section records it."""

from dataclasses import dataclass

DECAYS = ("rsqrt", "none")  # the lr between warmup and cooldown: falling as 1/sqrt(step), or held


@dataclass
class TrainConfig:
    corpus: str = "multi30k"
    src: str = "en"
    tgt: str = "fr"
    vocab_size: int = 8000
    max_tokens: int = 3072  # per batch: sentences x longest side, in pieces
    lr: float = 2.5e-3  # peak, reached at the end of warmup (chosen on validation BLEU: results.md)
    warmup: int = 400  # steps
    # the lr held at its peak after warmup, then falling linearly to 0 over the budget's last
    # `cooldown` share: 1.0 is a linear decay to zero over the whole budget (schedule.py; chosen
    # on validation BLEU over rsqrt + a 0.2 cooldown with the gated block: results.md). A run with
    # no budget at all (no epochs, steps or minutes: library use only) would hold the peak
    cooldown: float = 1.0
    decay: str = "none"  # one of DECAYS (schedule.lr_schedule)
    label_smoothing: float = 0.1
    # AdamW's, decoupled from the gradient, on every parameter; 0.1 over AdamW's 0.01 with the decay
    # to zero (chosen on validation BLEU: results.md, en-fr-gated2-wd1)
    weight_decay: float = 0.1
    subword_alpha: float = 0.3  # >0: source pieces sampled, P(x)^alpha, each epoch (data/sampling.py)
    # dropout raised, late in a long run, from the model's own to `late_dropout` (0: off), linearly
    # from epoch `late_dropout_from` over `late_dropout_over` epochs (schedule.dropout_at): a budget
    # that buys many epochs overfits at the rate that learns fastest in few; chosen on validation
    # BLEU on a CPU whose 50 minutes buy 44 epochs (results.md); one that buys 10 trains without it
    late_dropout: float = 0.3
    late_dropout_from: float = 10.0
    late_dropout_over: float = 10.0
    clip_norm: float = 1.0
    average: int = 5  # when training ends, validate the mean of the last N validations' weights (<2: off)
    epochs: int | None = 10  # None: no epoch limit (a time or step budget, or early stopping ends it)
    max_steps: int | None = None
    max_minutes: float | None = None  # wall-clock budget: training, validation and checkpoints
    # validations without a better BLEU before stopping early; 0: off, the run uses its whole budget
    # (a time budget is the user's choice, and the average of the last checkpoints gains from it)
    patience: int = 0
    save_every_minutes: float = 5.0  # training state saved this often between validations
    seed: int = 1
    device: str = "auto"
    bf16: bool = True  # bf16 autocast where it is measured faster (device.use_bf16): CUDA, most bf16 CPUs
    world_size: int = 1  # processes training data-parallel (torchrun); each step takes one batch per process

    def __post_init__(self):
        if self.decay not in DECAYS:
            raise ValueError(f"decay must be one of {', '.join(DECAYS)}, not {self.decay!r:.40}")


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
REMOVED = {
    "target_subword_alpha": 0.0,
    "source_word_dropout": 0.0,
    "target_word_dropout": 0.0,
    "r_drop": 0.0,
    "concat": 0.0,
    "bidirectional": 0,
    "sample_by_epoch": True,
    "order_by_sides": True,
}
