"""Tasks: how samples become model requests (mcqa: option log-likelihoods; open: generations)."""
from careval.tasks import mcqa, open  # noqa: A004  (module name mirrors the task name)

__all__ = ["mcqa", "open"]
