"""chat.format_prompt: the one place chat templates are applied."""

from __future__ import annotations

import pytest

from careval.backends.chat import ChatTemplateError, format_prompt, maybe_delimit

# a Gemma-like template that rejects the system role
NO_SYSTEM = (
    "{% for m in messages %}{% if m['role'] == 'system' %}"
    "{{ raise_exception('System role not supported') }}{% endif %}"
    "<turn>{{ m['role'] }}: {{ m['content'] }}</turn>{% endfor %}"
    "{% if add_generation_prompt %}<turn>model: {% endif %}"
)


@pytest.fixture
def chat_tokenizer(tiny_chat_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_chat_dir)


def test_plain_prompt_is_left_alone(tiny_tokenizer):
    assert format_prompt(tiny_tokenizer, "What is BP?", False) == "What is BP?"
    assert format_prompt(tiny_tokenizer, "What is BP?", False, "Be brief.") == "Be brief.\n\nWhat is BP?"


def test_template_is_applied_with_a_generation_prompt(chat_tokenizer):
    text = format_prompt(chat_tokenizer, "What is BP?", True)
    assert text == "<|im_start|>user\nWhat is BP?<|im_end|>\n<|im_start|>assistant\n"
    text = format_prompt(chat_tokenizer, "What is BP?", True, "You are a clinician.")
    assert text == (
        "<|im_start|>system\nYou are a clinician.<|im_end|>\n"
        "<|im_start|>user\nWhat is BP?<|im_end|>\n<|im_start|>assistant\n"
    )


def test_an_instruction_is_the_system_turn_after_the_system_prompt_as_lm_eval_joins_its_description(chat_tokenizer):
    lm_eval_maybe_delimit = pytest.importorskip("lm_eval.api.utils").maybe_delimit

    instruction = "The following are questions (with answers) about anatomy.\n\n"
    for system_prompt in (None, "You are a clinician.", "You are a clinician.\n"):
        system = lm_eval_maybe_delimit(system_prompt, instruction, "\n\n")  # lm-eval's fewshot_context
        expected = chat_tokenizer.apply_chat_template(
            [{"role": "system", "content": system}, {"role": "user", "content": "Question: q\nAnswer:"}],
            add_generation_prompt=True,
            tokenize=False,
        )
        assert format_prompt(chat_tokenizer, "Question: q\nAnswer:", True, system_prompt, instruction) == expected
        # without the template: the instruction before the prompt, as the task wrote them, the system prompt first
        plain = format_prompt(chat_tokenizer, "Question: q\nAnswer:", False, system_prompt, instruction)
        assert plain == format_prompt(chat_tokenizer, instruction + "Question: q\nAnswer:", False, system_prompt)


@pytest.mark.parametrize(
    "prefix, suffix", [(None, None), ("", "b"), ("a", None), ("a", "b"), ("a ", "b"), ("a", "\nb"), ("a\n\n", "b")]
)
def test_maybe_delimit_is_lm_evals(prefix, suffix):
    lm_eval_maybe_delimit = pytest.importorskip("lm_eval.api.utils").maybe_delimit

    assert maybe_delimit(prefix, suffix, "\n\n") == lm_eval_maybe_delimit(prefix, suffix, "\n\n")


def test_template_disabled_ignores_the_template(chat_tokenizer):
    assert format_prompt(chat_tokenizer, "What is BP?", False) == "What is BP?"


def test_clear_error_when_the_tokenizer_has_no_template(tiny_tokenizer):
    with pytest.raises(ChatTemplateError, match=r"has no chat template.*chat_template: false"):
        format_prompt(tiny_tokenizer, "What is BP?", True)


def test_template_without_system_role_gets_the_system_prompt_in_the_user_turn(tiny_tokenizer):
    import copy

    tok = copy.deepcopy(tiny_tokenizer)
    tok.chat_template = NO_SYSTEM
    text = format_prompt(tok, "What is BP?", True, "Be brief.")
    assert text == "<turn>user: Be brief.\n\nWhat is BP?</turn><turn>model: "
    text = format_prompt(tok, "What is BP?", True, "Be brief.", "Answer in one word.\n\n")
    assert text == "<turn>user: Be brief.\n\nAnswer in one word.\n\nWhat is BP?</turn><turn>model: "


def test_smollm2_chat_template(smollm2_dir):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(smollm2_dir)
    text = format_prompt(tok, "What is the normal range of serum sodium?", True)
    assert "<|im_start|>user\nWhat is the normal range of serum sodium?<|im_end|>" in text
    assert text.endswith("<|im_start|>assistant\n")
