"""careval: evaluation of healthcare LLMs beyond multiple-choice QA."""
