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
    subword_alpha: float = 0.3  # >0: source pieces sampled, P(x)^alpha (Tokenizer.sample)
    target_subword_alpha: float = 0.0  # >0: target pieces sampled too (by the epoch only)
    source_word_dropout: float = 0.0  # each source piece of a training batch UNK with this probability
    target_word_dropout: float = 0.0  # each piece the decoder reads in training UNK with this probability
    r_drop: float = 0.0  # >0: R-Drop's alpha, each batch twice and the two passes' KL (step.summed_loss)
    concat: float = 0.0  # the share of each epoch's pairs joined two by two (data/joining.py)
    bidirectional: int = 0  # the first N epochs train on every pair reversed too (data/reversing.py)
    # sampled for the whole epoch at its start, and its batches cut by the sampled lengths
    # (data/sampling.py); False: each step's batch sampled, cut by the stored lengths (older runs)
    sample_by_epoch: bool = True
    # pairs of one batching length ordered by their source's, then their target's length before
    # the random tie-break (fairseq's order): fewer padded cells on both sides; False: random ties
    order_by_sides: bool = True
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
        """Combinations that cannot train: the per-step path (runs from before `sample_by_epoch`)
        samples sources only, alone; a join of a pair and a reversed one would mix directions."""
        if self.target_subword_alpha > 0 and not self.sample_by_epoch:
            raise ValueError("target_subword_alpha needs sample_by_epoch (targets are drawn by the epoch)")
        for name in ("concat", "bidirectional"):  # the per-step draw has no epoch's pairs to rework
            if getattr(self, name) > 0 and self.subword_alpha > 0 and not self.sample_by_epoch:
                raise ValueError(f"{name} needs sample_by_epoch (it reworks the pairs the epoch draws)")
        if self.decay not in DECAYS:
            raise ValueError(f"decay must be one of {', '.join(DECAYS)}, not {self.decay!r:.40}")
        if self.bidirectional > 0 and self.concat > 0:
            raise ValueError("bidirectional and concat cannot be combined (a join would mix the directions)")


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

# Fields added after runs were already being written, with the value that reproduces what such a
# run trained with: an older run resumes with its own recipe, not with today's default.
ADDED_SINCE = {
    "subword_alpha": 0.0,
    "cooldown": 0.0,
    "decay": "rsqrt",
    "sample_by_epoch": False,
    "order_by_sides": False,
    "late_dropout": 0.0,
    "target_subword_alpha": 0.0,
    "source_word_dropout": 0.0,
    "target_word_dropout": 0.0,
    "weight_decay": 0.01,  # AdamW's default, which runs trained with before the option
    "r_drop": 0.0,
    "concat": 0.0,
    "bidirectional": 0,
}
