"""Models are resources: a config model entry becomes a folder (or hub id) that transformers loads."""

from careval.models.prepare import model_source, needs_preparation, prepare_model, resolve_model_path
from careval.models.source import ModelSource, ModelSourceError, PypiPackage, parse_source

__all__ = [
    "ModelSource",
    "ModelSourceError",
    "PypiPackage",
    "model_source",
    "needs_preparation",
    "parse_source",
    "prepare_model",
    "resolve_model_path",
]
