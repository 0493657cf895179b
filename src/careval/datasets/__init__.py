"""Benchmarks: the registry, source loaders and normalisation to the canonical sample schema."""

from careval.datasets.benchmark import Benchmark, HFSource, LocalSource
from careval.datasets.normalise import SampleError, build_benchmark, normalise
from careval.datasets.registry import REGISTRY, get_benchmark

__all__ = [
    "REGISTRY",
    "Benchmark",
    "HFSource",
    "LocalSource",
    "SampleError",
    "build_benchmark",
    "get_benchmark",
    "normalise",
]
