"""Run a command as on a CPU with AVX2 and no AVX-512, on any x86 machine, and check that every
engine's kernels obey:

    python -m scripts.isa avx2 --check                      # what runs under the limits, proved
    python -m scripts.isa avx2 -- python -m scripts.bench_decode --against ctranslate2 ...

The limits are environment variables each library reads when it loads, so they are set for a new
process (the command), never in a running one:

- PyTorch's own kernels: ATEN_CPU_CAPABILITY=avx2 (its vectorized ops, e.g. softmax, layer norm);
- oneDNN (PyTorch's packed GEMMs, and CTranslate2's GEMMs on AMD CPUs): ONEDNN_MAX_CPU_ISA=AVX2
  (DNNL_MAX_CPU_ISA for older builds);
- MKL (PyTorch's unpacked fp32 GEMMs): MKL_ENABLE_INSTRUCTIONS=AVX2;
- fbgemm (PyTorch's int8 GEMMs, `--quantize int8`): FBGEMM_ENABLE_INSTRUCTIONS=AVX2;
- CTranslate2's own kernels: CT2_FORCE_CPU_ISA=AVX2;
- bf16: left to `seq2seq.device.use_bf16`, which measures a bf16 GEMM against fp32 and, with
  oneDNN held to AVX2 (no native bf16 instructions), finds it slower and keeps fp32.

`--check` proves each in a fresh process, natively and under the limits: PyTorch's reported
capability; the ISA oneDNN reports and the kernel it runs for a packed linear layer; fbgemm's int8
GEMM on inputs where AVX2's 16-bit pair sums saturate and VNNI's do not (so the answer tells which
kernel ran); CTranslate2's selected ISA and its GEMM backend (its log); bf16's verdict. MKL names
no code path a program can read; it is held by its variable alone.
"""

import argparse
import json
import os
import subprocess
import sys

LIMITS = {
    "avx2": {
        "ATEN_CPU_CAPABILITY": "avx2",
        "ONEDNN_MAX_CPU_ISA": "AVX2",
        "DNNL_MAX_CPU_ISA": "AVX2",
        "MKL_ENABLE_INSTRUCTIONS": "AVX2",
        "FBGEMM_ENABLE_INSTRUCTIONS": "AVX2",
        "CT2_FORCE_CPU_ISA": "AVX2",
    }
}

PROBE = r"""
import json, os, re, subprocess, sys, tempfile, warnings
warnings.filterwarnings("ignore")
import torch
out = {"aten": torch.backends.cpu.get_cpu_capability()}
lin = torch.nn.Linear(64, 8, bias=False)
with torch.no_grad():
    lin.weight.fill_(1.0)
torch.backends.quantized.engine = "x86"
q = torch.ao.quantization.quantize_dynamic(torch.nn.Sequential(lin), {torch.nn.Linear}, dtype=torch.qint8)
x = torch.ones(1, 64)
x[0, 0] = 0.0  # 0..1 quantized to 0..255: pairs of 255 x 127 overflow a 16-bit sum
y = torch.ops.quantized.linear_dynamic(x, q[0]._packed_params._packed_params, False)[0, 0].item()
out["fbgemm"] = "saturating 16-bit pair sums (AVX2)" if y < 0.75 * 63 else "32-bit sums (VNNI)"
from seq2seq.device import bf16_speedup, use_bf16
speedup = bf16_speedup(torch.device("cpu"))
out["bf16"] = "on" if use_bf16(torch.device("cpu"), True) else f"off (a bf16 GEMM at {speedup:.2f}x fp32)"
if speedup == 0.0:
    out["bf16"] = "off (no native bf16)"
print(json.dumps(out))
"""

ONEDNN = r"""
import torch
lin = torch.nn.Linear(256, 256)
packed = torch.ops.mkldnn._reorder_linear_weight(lin.weight.detach())
with torch.no_grad():
    torch.ops.mkldnn._linear_pointwise(torch.randn(4, 256), packed, lin.bias, "none", [], "")
"""

CT2 = r"""
import sys, ctranslate2
t = ctranslate2.Translator(sys.argv[1], device="cpu", compute_type="int8")
print(t.score_batch([["▁A", "▁dog", "▁runs", "."]], [["▁Un", "▁chien", "▁court", "."]])[0].log_probs)
"""


def environment(isa: str | None) -> dict[str, str]:
    return {**os.environ, **(LIMITS[isa] if isa else {})}


def ran(code: str, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, check=True
    )


def probe(isa: str | None, ct2_model: str | None) -> dict[str, str]:
    """What runs in a fresh process, natively (None) or under `isa`'s limits."""
    env = environment(isa)
    said = json.loads(ran(PROBE, env).stdout.splitlines()[-1])
    log = ran(ONEDNN, {**env, "ONEDNN_VERBOSE": "1"}).stdout.splitlines()
    isa_line = [line.split("isa:")[1] for line in log if "isa:" in line]
    kernel = [line.split(",")[6] for line in log if ",exec," in line and "inner_product" in line]
    said["onednn"] = f"{isa_line[0]}; a packed linear layer runs {kernel[0]}"
    if ct2_model:
        engine = ran(CT2, {**env, "CT2_VERBOSE": "1"}, ct2_model)
        told = [
            line.split("- ")[-1]
            for line in engine.stderr.splitlines()
            if "ISA" in line or "S8 backend" in line
        ]
        said["ctranslate2"] = "; ".join(told)
        said["ctranslate2 int8 scores"] = engine.stdout.strip()  # other kernels, other roundings
    return said


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    command = argv[argv.index("--") + 1 :] if "--" in argv else []
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("isa", choices=LIMITS)
    p.add_argument("--check", action="store_true", help="prove what runs, natively and under the limits")
    p.add_argument("--ct2-model", help="a CTranslate2 model directory, to read the engine's own choice")
    args = p.parse_args(argv[: argv.index("--")] if "--" in argv else argv)
    if args.check:
        for name, isa in (("native", None), (f"{args.isa} limits", args.isa)):
            print(f"{name}:")
            for engine, what in probe(isa, args.ct2_model).items():
                print(f"  {engine}: {what}")
    if command:
        sys.exit(subprocess.run(command, env=environment(args.isa)).returncode)


if __name__ == "__main__":
    main()
