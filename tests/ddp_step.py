"""Run under torchrun by tests/test_distributed.py: one data-parallel optimizer step of a tiny
model, each rank on its own batch of a fixed list, the resulting weights saved by rank 0.

    torchrun --standalone --nproc-per-node 2 tests/ddp_step.py OUT.safetensors
"""

import sys
from contextlib import nullcontext

import torch
from safetensors.torch import save_file

from seq2seq.cli.app import finish
from seq2seq.data.batch import collate
from seq2seq.models.transformer import Transformer, TransformerConfig
from seq2seq.training.distributed import rank_batch, world
from seq2seq.training.step import TrainStep, data_parallel

CONFIG = TransformerConfig(
    vocab_size=50, d_model=32, n_heads=4, n_encoder_layers=2, n_decoder_layers=2, d_ff=64, dropout=0.0
)


def step_batches() -> list:
    """Two batches of different sizes and lengths (their union is what one process would take)."""
    g = torch.Generator().manual_seed(0)

    def ids(n: int, length: int) -> list[list[int]]:
        return [torch.randint(4, 50, (length - i % 3,), generator=g).tolist() for i in range(n)]

    return [(ids(3, 7), ids(3, 9)), (ids(5, 4), ids(5, 6))]


def fresh_model() -> tuple[Transformer, torch.optim.Optimizer]:
    """SGD, not Adam: Adam's first step is about lr x sign(gradient), so a gradient that is zero
    up to rounding (the attention key bias) would move by +-lr on rounding noise alone."""
    torch.manual_seed(0)
    model = Transformer(CONFIG)
    return model, torch.optim.SGD(model.parameters(), lr=0.5)


def main(out: str) -> None:
    with world("cpu") as here:
        model, optimizer = fresh_model()
        batches = step_batches()
        index, weight = rank_batch(batches, 0, here)
        batch = collate(*batches[index], max_len=64)
        step = TrainStep(data_parallel(model, here), optimizer, here, nullcontext(), 1.0, 0.1)
        loss, tokens = step(batch, lr=0.5, weight=weight)
        # rank 1 asks to stop and rank 0 alone knows the time used: all must hear both
        agreed = here.largest([3.0 if here.rank == 1 else 0.0, 0.7 if here.is_main else 0.0])
        if here.is_main:
            save_file({k: v.contiguous() for k, v in model.state_dict().items()}, out)
            print(f"loss {loss!r} tokens {tokens} agreed {agreed}")


if __name__ == "__main__":
    main(sys.argv[1])
    finish(0)  # as the CLI ends a torchrun process: gloo's threads outlive the group under DDP
