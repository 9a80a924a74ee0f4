"""What a benchmark must print beside its figures: the CPU, and the flags that decide speed here."""

import platform
from pathlib import Path

FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_bf16")


def cpu() -> str:
    """e.g. "AMD EPYC (avx2, avx512f, avx512_bf16)": bf16 math is fast only with the last two."""
    text = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    lines = text.splitlines()
    model = next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")), "")
    flags = set(next((line.split(":", 1)[1].split() for line in lines if line.startswith("flags")), []))
    present = [f for f in FLAGS if f in flags]
    return f"{model or platform.processor() or 'unknown CPU'} ({', '.join(present) or 'no AVX2'})"
