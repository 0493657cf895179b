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


# lm-eval's default target_delimiter: put between a conditional request's context and its continuation (a choice), so
# the choice is tokenised as running text; under a chat template lm-eval's construct_requests drops it (the assistant's
# turn starts the answer), and so does Backend.request_pair. The tasks build their continuations with it
# (careval.tasks.mcqa).
TARGET_DELIMITER = " "

# lm-eval's fewshot delimiter (TaskConfig's default; the tasks careval gives an instruction keep it), which joins the
# system instruction and the task's description into the system turn
SYSTEM_DELIMITER = "\n\n"


def format_prompt(
    tokenizer: Any,
    prompt: str,
    use_chat_template: bool,
    system_prompt: str | None = None,
    instruction: str | None = None,
) -> str:
    """The text to feed the model for a prompt; `instruction`: the task's (lm-eval's `description`), before it.

    * ``use_chat_template`` true: ``tokenizer.apply_chat_template([system?, user],
      add_generation_prompt=True, tokenize=False)``, the system turn the system prompt and the
      instruction joined as lm-eval's ``fewshot_context`` joins its system_instruction and description
      (:func:`maybe_delimit`, its fewshot delimiter "\n\n"), the user turn the prompt alone.
      A template that rejects the system role (e.g. Gemma's) gets the system text put before the
      user turn instead. A tokenizer without a template raises :class:`ChatTemplateError`.
    * false: the instruction and the prompt, with the system prompt (if any) and a blank line before them.
    """
    if not use_chat_template:
        prompt = (instruction or "") + prompt
        return f"{system_prompt}\n\n{prompt}" if system_prompt else prompt

    require_chat_template(tokenizer)
    user = {"role": "user", "content": prompt}
    system = maybe_delimit(system_prompt, instruction, SYSTEM_DELIMITER)
    if not system:
        return _apply(tokenizer, [user])
    try:
        return _apply(tokenizer, [{"role": "system", "content": system}, user])
    except Exception as err:  # jinja2 raise_exception("System role not supported"), ...
        if "system" not in str(err).lower():
            raise
        # lm-eval drops the system turn here; careval keeps its text, so the model is still told what it was
        log.warning("chat template rejects a system turn (%s); putting it before the user turn", err)
        return _apply(tokenizer, [{"role": "user", "content": maybe_delimit(system, prompt, SYSTEM_DELIMITER)}])


def maybe_delimit(prefix: str | None, suffix: str | None, delimiter: str) -> str:
    """lm-eval 0.4.13's api.utils.maybe_delimit: the two joined, with `delimiter` only where neither has whitespace
    at the join (either may be empty or None)."""
    if not prefix:
        return suffix or ""
    if not suffix:
        return prefix
    return prefix + suffix if prefix[-1].isspace() or suffix[0].isspace() else prefix + delimiter + suffix


def _apply(tokenizer: Any, messages: list[dict[str, str]]) -> str:
    text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    if not isinstance(text, str):  # defensive: some versions return a list for batched input
        raise ChatTemplateError(f"apply_chat_template returned {type(text).__name__}, expected str")
    return text
