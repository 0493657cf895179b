"""Tasks: how samples become model requests and how outputs are scored (mcqa, open, classification, extraction, prescription)."""

from careval.tasks import classification, extraction, mcqa, open, prescription

__all__ = ["classification", "extraction", "mcqa", "open", "prescription"]
