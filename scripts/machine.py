"""What a benchmark must print beside its figures: the CPU, and the flags that decide speed here."""

import platform
from pathlib import Path

FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_bf16")


def cpu(cpuinfo: str | None = None) -> str:
    """e.g. "AMD EPYC, family 26 model 2 (avx2, avx512f, avx512_bf16)": bf16 math is fast only with
    the last two. The family and model tell apart machines that share a name and flags but not a
    speed: two 2-core "AMD EPYC" VMs with avx512_bf16, family 25 model 17 and family 26 model 2,
    trained the same recipe at about 4,000 and 8,300 target tokens/s."""
    if cpuinfo is None:
        cpuinfo = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    fields = {}
    for line in cpuinfo.splitlines():  # the first processor's block is enough: they are alike
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    name = fields.get("model name") or platform.processor() or "unknown CPU"
    if fields.get("cpu family") and fields.get("model"):
        name += f", family {fields['cpu family']} model {fields['model']}"
    present = [f for f in FLAGS if f in fields.get("flags", "").split()]
    return f"{name} ({', '.join(present) or 'no AVX2'})"
