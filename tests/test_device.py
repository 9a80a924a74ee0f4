"""bf16 is used only where it is measured faster: the CPU flag alone says yes on AVX512-BF16 CPUs
without AMX, where a bf16 GEMM runs at 0.6x fp32. The measurement is replaced here, so each
verdict is tested on any machine."""

import math

import pytest
import torch

from seq2seq import device

CPU, CUDA = torch.device("cpu"), torch.device("cuda")


@pytest.fixture
def measured(monkeypatch):
    """Pretend a CPU with native bf16 whose GEMM measures `speedup[0]`; count the measurements."""
    monkeypatch.setattr(device, "_speedups", {})
    monkeypatch.setattr(device, "_native_bf16", lambda: True)
    calls, speedup = [], [1.0]

    def measure():
        calls.append(1)
        return speedup[0]

    monkeypatch.setattr(device, "_measure_cpu", measure)
    return speedup, calls


@pytest.mark.parametrize(
    "speedup,bf16,note",
    [
        (0.6, False, "fp32: a bf16 GEMM runs at 0.6x fp32 on this CPU"),  # AVX512-BF16 without AMX
        (1.1, False, "fp32: a bf16 GEMM runs at 1.1x fp32"),  # too little to pay for the rounding
        (5.6, True, "bf16 autocast: a bf16 GEMM runs at 5.6x fp32 on this CPU"),
    ],
)
def test_a_cpu_uses_bf16_only_where_it_was_measured_faster(measured, speedup, bf16, note):
    measured[0][0] = speedup
    assert device.use_bf16(CPU, wanted=True) is bf16
    assert device.precision_note(CPU, wanted=True).startswith(note)
    with device.autocast(CPU, wanted=True):
        assert (torch.ones(2, 2) @ torch.ones(2, 2)).dtype == (torch.bfloat16 if bf16 else torch.float32)


def test_the_cpu_is_measured_once_and_only_when_bf16_is_wanted(measured):
    _, calls = measured
    assert not device.use_bf16(CPU, wanted=False) and device.precision_note(CPU, False) == "fp32"
    assert calls == []
    for _ in range(3):
        device.use_bf16(CPU, wanted=True)
    assert calls == [1]


def test_no_native_bf16_means_fp32_without_measuring(measured, monkeypatch):
    monkeypatch.setattr(device, "_native_bf16", lambda: False)
    assert not device.use_bf16(CPU, wanted=True) and measured[1] == []
    assert device.precision_note(CPU, True) == "fp32: this CPU has no native bf16"


def test_cuda_is_fast_without_measuring(measured):
    assert device.use_bf16(CUDA, wanted=True) and measured[1] == []
    assert not device.use_bf16(CUDA, wanted=False)


def test_under_torchrun_every_rank_takes_rank_0s_measurement(measured):
    measured[0][0] = 5.0
    device.agree_on_bf16(0.7)  # rank 0 measured a slow bf16
    assert not device.use_bf16(CPU, wanted=True) and measured[1] == []


def test_the_real_measurement_is_a_ratio_of_times():
    speedup = device._measure_cpu() if device._native_bf16() else 1.0
    assert speedup > 0 and math.isfinite(speedup)


def test_a_speedup_times_the_two_in_turn_and_keeps_each_ones_shortest_call():
    """A choice made at start-up times both sides alternately (a warm-up each, then A B A B), so a
    disturbance that lasts a few calls slows both; the ratio is of each side's shortest call."""
    calls = []
    ratio = device.speedup(lambda: calls.append("plain"), lambda: calls.append("packed"), rounds=3)
    assert calls == ["plain", "packed"] * 4 and ratio > 0
