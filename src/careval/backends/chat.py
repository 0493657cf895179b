"""The one place chat templates are applied (every backend formats prompts through here)."""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger(__name__)


class ChatTemplateError(ValueError):
    """chat_template is enabled but the tokenizer cannot format a chat."""


def has_chat_template(tokenizer: Any) -> bool:
    return bool(getattr(tokenizer, "chat_template", None))


def require_chat_template(tokenizer: Any) -> None:
    """Raise ChatTemplateError unless the tokenizer carries a chat template."""
    if not has_chat_template(tokenizer):
        name = getattr(tokenizer, "name_or_path", "") or type(tokenizer).__name__
        raise ChatTemplateError(
            f"chat_template is true but the tokenizer of {name!r} has no chat template "
            "(a base model?); set chat_template: false for this model"
        )


def format_prompt(
    tokenizer: Any,
    prompt: str,
    use_chat_template: bool,
    system_prompt: str | None = None,
) -> str:
    """The text to feed the model for a generation prompt.

    * ``use_chat_template`` true: ``tokenizer.apply_chat_template([system?, user],
      add_generation_prompt=True, tokenize=False)``. A template that rejects the system
      role (e.g. Gemma's) gets the system prompt prepended to the user turn instead.
      A tokenizer without a template raises :class:`ChatTemplateError`.
    * false: the plain prompt, with the system prompt (if any) and a blank line before it.
    """
    if not use_chat_template:
        return f"{system_prompt}\n\n{prompt}" if system_prompt else prompt

    require_chat_template(tokenizer)
    user = {"role": "user", "content": prompt}
    if not system_prompt:
        return _apply(tokenizer, [user])
    try:
        return _apply(tokenizer, [{"role": "system", "content": system_prompt}, user])
    except Exception as err:  # jinja2 raise_exception("System role not supported"), ...
        if "system" not in str(err).lower():
            raise
        log.warning("chat template rejects a system turn (%s); prepending it to the user turn", err)
        return _apply(tokenizer, [{"role": "user", "content": f"{system_prompt}\n\n{prompt}"}])


def _apply(tokenizer: Any, messages: list[dict[str, str]]) -> str:
    text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    if not isinstance(text, str):  # defensive: some versions return a list for batched input
        raise ChatTemplateError(f"apply_chat_template returned {type(text).__name__}, expected str")
    return text
