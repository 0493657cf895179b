"""dtype: bfloat16_if_native is bfloat16 only where the device computes it, resolved in the job."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from careval.backends.dtype import NATIVE_BFLOAT16, native_bfloat16, resolve_dtype
from careval.backends.hf.backend import HFBackend
from careval.config import ConfigError
from careval.models.spec import model_spec


def _native(monkeypatch, cpu: bool) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: cpu, raising=False)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: False, raising=False)


@pytest.mark.parametrize("name", ["float32", "bfloat16", "float16", "auto"])
def test_other_dtypes_are_kept(name):
    assert resolve_dtype(name) == name


@pytest.mark.parametrize(("cpu", "expected"), [(True, "bfloat16"), (False, "float32")])
def test_resolution_follows_the_cpu(monkeypatch, cpu, expected):
    _native(monkeypatch, cpu)
    assert resolve_dtype(NATIVE_BFLOAT16) == expected


def test_a_cuda_device_decides_by_its_own_bf16_support(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda: False)
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: True, raising=False)
    assert resolve_dtype(NATIVE_BFLOAT16) == "float32"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/cpuinfo")
def test_the_probe_agrees_with_the_cpu_flags():
    if torch.cuda.is_available():
        pytest.skip("the probe asks the GPU here")
    flags = set()
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            flags.update(line.split(":", 1)[1].split())
    assert native_bfloat16() == bool({"avx512_bf16", "amx_bf16", "amx_tile"} & flags)


def test_the_job_spec_carries_the_resolved_dtype(monkeypatch, tmp_path):
    spec = model_spec("m", {"source": f"local:{tmp_path}", "dtype": NATIVE_BFLOAT16}, models_dir=tmp_path)
    assert spec.dtype == NATIVE_BFLOAT16  # the params Snakemake compares: the same on every machine
    for cpu, expected in ((True, "bfloat16"), (False, "float32")):
        _native(monkeypatch, cpu)
        job = spec.for_job(threads=1)
        assert job.dtype == expected


def test_vllm_entries_may_not_ask_for_it(tmp_path):
    entry = {"source": f"local:{tmp_path}", "backend": "vllm", "dtype": NATIVE_BFLOAT16}
    with pytest.raises(ConfigError, match=r"models\.m\.dtype: 'bfloat16_if_native' is for backend: hf"):
        model_spec("m", entry, models_dir=tmp_path)


@pytest.mark.parametrize(("cpu", "expected"), [(True, torch.bfloat16), (False, torch.float32)])
def test_the_hf_backend_loads_in_the_resolved_dtype(monkeypatch, tiny_model_dir, cpu, expected):
    _native(monkeypatch, cpu)
    backend = HFBackend.load("t", str(tiny_model_dir), dtype=NATIVE_BFLOAT16, device="cpu")
    assert backend.model.dtype == expected
