"""scripts/isa.py holds PyTorch's kernels to AVX2 on any x86 machine, and proves it from the
kernels that run, not from the variables set: ATen's dispatch, oneDNN's packed GEMM, and fbgemm's
int8 GEMM on inputs whose 16-bit pair sums saturate under AVX2 alone."""

import platform

import pytest

from scripts.isa import LIMITS, environment, probe

pytestmark = pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86 only")


def test_under_avx2_limits_every_torch_kernel_is_an_avx2_one():
    said = probe("avx2", None)
    assert said["aten"] == "AVX2"
    assert said["fbgemm"].startswith("saturating")  # the AVX2 kernel's answer, not VNNI's
    assert "AVX2" in said["onednn"] and said["onednn"].endswith("avx2")
    assert said["bf16"].startswith("off")
    assert environment("avx2")["CT2_FORCE_CPU_ISA"] == LIMITS["avx2"]["CT2_FORCE_CPU_ISA"] == "AVX2"
