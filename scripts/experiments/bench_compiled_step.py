"""Levers measured for decoding and not built (docs/performance.md): one decode step compiled by
inductor against our eager step, and int8 through PyTorch 2's export flow against our eager int8.

    python -m scripts.experiments.bench_compiled_step --run RUN            # eager vs compiled
    python -m scripts.experiments.bench_compiled_step --run RUN --dynamic  # one graph, any rows
    python -m scripts.experiments.bench_compiled_step --run RUN --pt2e     # needs `pip install torchao`
    python -m scripts.experiments.bench_compiled_step --run RUN --packed
    python -m scripts.experiments.bench_compiled_step --run RUN --packed --backend eager
    python -m scripts.experiments.bench_compiled_step --run RUN --mode max-autotune

RUN is a run directory such as runs/multi30k-en-fr.

The compiled step runs over a fixed-shape self-attention cache with a length mask (as gpt-fast and
Hugging Face's StaticCache do), so one graph serves every position; inductor compiles it with
`freezing` (weights folded and prepacked). `--packed` compiles the step of our packed model instead,
whose linear layers call oneDNN on weights reordered at load (with `--no-freezing` inductor 2.13
fails to lower that call: the `LoweringException` is the finding); `--backend eager` only traces
the step into one graph and runs its operators as eager does, which takes the Python of the step
away and nothing else.
Every figure is the best of 3 means over 30 calls,
after a warm-up; the first call's time is the compile (warm from inductor's on-disk cache when
the same command ran before). Run it alone: the 2 cores are the measurement.
"""

import argparse
import math
import time

import torch
import torch._inductor.config as inductor

from scripts import common
from seq2seq.models.feed_forward import outer_linears
from seq2seq.models.packed import PackedLinear, pack
from seq2seq.models.quantize import quantize
from seq2seq.runs.load import load_run

SOURCE, CACHE, POSITION = 16, 40, 20  # source pieces, cache positions, the position decoded


class StaticStep(torch.nn.Module):
    """The Transformer's decode step over a fixed-shape cache: tokens (B,), pos (1,), self_kv
    (L, 2, B, H, T, Dh) written at pos, cross K/V per layer (B, H, S, Dh) -> logits (B, V)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, tokens, pos, self_kv, cross, src_mask):
        model, d_model = self.model, self.model.cfg.d_model
        x = model.embed(tokens)[:, None] * math.sqrt(d_model) + model.positions.index_select(0, pos)[None]
        seen = (torch.arange(self_kv.size(4), device=tokens.device) <= pos)[None, None, None, :]
        for i, layer in enumerate(model.decoder):

            def self_attend(h, i=i, a=layer.self_attn):
                q, k, v = a.project_qkv(h)
                self_kv[i, 0].index_copy_(2, pos, k)
                self_kv[i, 1].index_copy_(2, pos, v)
                return a.attend(q, self_kv[i, 0], self_kv[i, 1], seen)

            def cross_attend(h, i=i, c=layer.cross_attn):
                return c.attend(c.split_heads(c.q(h)), *cross[i], src_mask)

            x = layer.res_self(x, self_attend)
            x = layer.res_cross(x, cross_attend)
            x = layer.res_ff(x, layer.ff)
        return model.logits(x[:, 0])


def mean_ms(run, calls: int = 30) -> float:
    for _ in range(3):
        run()
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(calls):
            run()
        best = min(best, (time.perf_counter() - start) / calls * 1000)
    return best


def step_inputs(model, rows: int):
    cfg = model.cfg
    src_mask = torch.ones(rows, 1, 1, SOURCE, dtype=torch.bool)
    cache = model.start_cache(torch.randn(rows, SOURCE, cfg.d_model), src_mask, CACHE)
    tokens = torch.randint(4, cfg.vocab_size, (rows,))
    return cache, tokens, src_mask


def static_kv(model, rows: int) -> torch.Tensor:
    cfg = model.cfg
    return torch.zeros(len(model.decoder), 2, rows, cfg.n_heads, CACHE, cfg.d_model // cfg.n_heads)


@torch.inference_mode()
def eager_figures(variants: dict[str, torch.nn.Module], rows: int) -> dict[str, float]:
    """Our decode step as `translate` runs it, for each variant of the model."""
    figures = {}
    for name, variant in variants.items():
        cache, tokens, _ = step_inputs(variant, rows)

        def step(variant=variant, cache=cache, tokens=tokens):
            cache.length = POSITION
            return variant.step(tokens, cache)

        figures[name] = mean_ms(step)
    return figures


@torch.no_grad()
def compiled_figures(model, rows: int, compiled) -> dict[str, float]:
    cache, tokens, src_mask = step_inputs(model, rows)
    pos, kv = torch.tensor([POSITION]), static_kv(model, rows)
    args = (tokens, pos, kv, cache.cross_kv, src_mask)
    start = time.perf_counter()
    logits = compiled(*args)
    first = time.perf_counter() - start
    reference = StaticStep(model)(tokens, pos, static_kv(model, rows), cache.cross_kv, src_mask)
    print(f"  compiled: max |logit difference| {(logits - reference).abs().max().item():.1e}, "
          f"same argmax {torch.equal(logits.argmax(-1), reference.argmax(-1))}")  # fmt: skip
    return {"first call (s)": first, "compiled": mean_ms(lambda: compiled(*args))}


def pt2e_rows(model) -> None:
    """One linear layer at a time: PT2E dynamic int8 (X86InductorQuantizer) + inductor, against our
    eager int8 (fbgemm dynamic), packed fp32 and plain fp32."""
    from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic  # as models/quantize.py
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    from torchao.quantization.pt2e.quantizer.x86_inductor_quantizer import (
        X86InductorQuantizer,
        get_default_x86_inductor_quantization_config,
    )

    ff_in, ff_out = outer_linears(model.decoder[0].ff)
    layers = {"output projection": model.embed.weight, "ff in": ff_in.weight, "ff out": ff_out.weight}
    for name, weight in layers.items():
        linear = torch.nn.Linear(weight.size(1), weight.size(0)).eval()
        linear.weight.data.copy_(weight)
        for rows in (64, 320):
            x = torch.randn(rows, weight.size(1))
            with torch.no_grad():
                ours = quantize_dynamic(
                    torch.nn.Sequential(linear), {torch.nn.Linear: per_channel_dynamic_qconfig}
                )
                quantizer = X86InductorQuantizer().set_global(
                    get_default_x86_inductor_quantization_config(is_dynamic=True)
                )
                prepared = prepare_pt2e(
                    torch.export.export(torch.nn.Sequential(linear), (x,)).module(), quantizer
                )
                prepared(x)
                torch._dynamo.reset()
                compiled = torch.compile(convert_pt2e(prepared))
                packed = PackedLinear(linear.weight, linear.bias)
                figures = {
                    "plain fp32": mean_ms(lambda: linear(x)),  # noqa: B023 (called here)
                    "packed fp32": mean_ms(lambda: packed(x)),  # noqa: B023
                    "our int8": mean_ms(lambda: ours(x)),  # noqa: B023
                    "PT2E int8 compiled": mean_ms(lambda: compiled(x)),  # noqa: B023
                }
            print(
                f"{name} {tuple(weight.shape)} at {rows} rows: "
                + ", ".join(f"{k} {v:.3f} ms" for k, v in figures.items())
            )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--run", required=True)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--dynamic", action="store_true", help="compile once for any row count")
    p.add_argument("--cpp-wrapper", action="store_true", help="inductor's C++ wrapper in place of Python")
    p.add_argument("--pt2e", action="store_true", help="the int8 export-flow rows (needs torchao)")
    p.add_argument("--packed", action="store_true", help="compile the step of our packed model")
    p.add_argument("--no-freezing", action="store_true", help="inductor without freezing")
    p.add_argument("--backend", default="inductor", help="torch.compile's backend (eager: Python only)")
    p.add_argument("--mode", default=None, help="torch.compile's mode, e.g. max-autotune")
    p.add_argument("--rows", type=int, nargs="+", default=[64, 320])
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    print(f"{common.cpu()}, torch {torch.__version__}, {args.threads} threads")
    model, _ = load_run(args.run)
    if model.cfg.arch != "transformer":
        raise SystemExit("the compiled step is written for the Transformer")
    if args.pt2e:
        inductor.freezing = True
        return pt2e_rows(model)
    inductor.freezing, inductor.cpp_wrapper = not args.no_freezing, args.cpp_wrapper
    variants = {"eager plain": model, "eager packed": pack(model), "eager int8": quantize(model, "int8")}
    traced = variants["eager packed"] if args.packed else model
    compiled = torch.compile(StaticStep(traced), dynamic=args.dynamic, backend=args.backend, mode=args.mode)
    for rows in args.rows:
        figures = {**eager_figures(variants, rows), **compiled_figures(traced, rows, compiled)}
        print(
            f"{rows} rows: "
            + ", ".join(f"{k} {v:.2f}" + ("" if "(s)" in k else " ms") for k, v in figures.items())
        )


if __name__ == "__main__":
    main()
