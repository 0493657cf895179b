"""Benchmarks: the registry, source loaders and normalisation to the canonical sample schema."""
from careval.datasets.normalise import SampleError, build_benchmark, normalise
from careval.datasets.registry import REGISTRY, Benchmark, HFSource, LocalSource, get_benchmark
from careval.datasets.schema import SAMPLE_SCHEMA

__all__ = [
    "REGISTRY", "SAMPLE_SCHEMA", "Benchmark", "HFSource", "LocalSource", "SampleError",
    "build_benchmark", "get_benchmark", "normalise",
]
