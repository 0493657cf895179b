"""Benchmarks: the catalogue and a config's own (one schema), source loaders and normalisation to the canonical sample."""

from careval.datasets.benchmark import Benchmark, HFSource, LmEvalSource, LocalSource
from careval.datasets.definition import BenchmarkDefinitionError
from careval.datasets.normalise import SampleError, build_benchmark, normalise
from careval.datasets.registry import CATALOGUE, REGISTRY, get_benchmark

__all__ = [
    "CATALOGUE",
    "REGISTRY",
    "Benchmark",
    "BenchmarkDefinitionError",
    "HFSource",
    "LmEvalSource",
    "LocalSource",
    "SampleError",
    "build_benchmark",
    "get_benchmark",
    "normalise",
]
