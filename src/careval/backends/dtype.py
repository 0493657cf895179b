"""Which dtype a model runs in on this machine: a model entry's `dtype`, with `bfloat16_if_native` resolved.

bfloat16 is only fast where the hardware computes it: a CUDA GPU with bf16 support, or a CPU with
AVX512-BF16 or AMX. Elsewhere torch emulates it, and a bfloat16 matmul runs far slower than the
float32 one (measured on an AVX2-only CPU: 9.6 against 78 GFLOPS on one core). So an entry that
only wants speed says `bfloat16_if_native`, and each job picks bfloat16 or float32 on its own
machine. The choice is made in the job (ModelSpec.for_job), so the job's checkpoints and its
"loaded model" line record the dtype it actually ran in.
"""

from __future__ import annotations

import glob
import os

NATIVE_BFLOAT16 = "bfloat16_if_native"


def native_bfloat16() -> bool:
    """Whether this process's device (CUDA if there is one, as HFBackend picks it, else the CPU) computes bfloat16 natively."""
    import torch

    if torch.cuda.is_available():
        return bool(torch.cuda.is_bf16_supported())
    # private but long-standing probes (torch >= 2.1); a torch without them gets float32
    probes = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return any(bool(getattr(torch.cpu, probe, lambda: False)()) for probe in probes)


def resolve_dtype(dtype: str) -> str:
    """`dtype` itself, or for `bfloat16_if_native` bfloat16 where native_bfloat16() holds and float32 elsewhere."""
    if dtype != NATIVE_BFLOAT16:
        return dtype
    return "bfloat16" if native_bfloat16() else "float32"


def gpu_visible() -> bool:
    """Whether the jobs may find a GPU here, from the device files alone. Asking torch, even through NVML
    (PYTORCH_NVML_BASED_CUDA_CHECK), starts a CUDA driver thread in the asking process (seen on an H200
    machine), and a fork keeps none of its threads, so the warm worker never asks (careval.warm)."""
    shown = os.environ.get("CUDA_VISIBLE_DEVICES")
    if shown is not None and shown.strip() in ("", "-1"):
        return False
    return bool(glob.glob("/dev/nvidia[0-9]*")) or os.path.exists("/dev/kfd")  # NVIDIA, or AMD (ROCm)
