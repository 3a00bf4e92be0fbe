"""Conversations as token ids (agilerl/families/llm/rendering.py): rendered with the
tokenizer's chat template or as plain ``role: text`` lines, and rows padded into a batch
on the side generation needs."""

from __future__ import annotations

import torch

from agilerl.families.llm.rendering import pad, prompt_ids, render_messages

QUESTION = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"}]
ANSWERED = [*QUESTION, {"role": "assistant", "content": "4"}]


class Plain:
    """A tokenizer without a chat template: one id per character."""

    chat_template = None

    def __init__(self):
        self.calls = []

    def __call__(self, texts, add_special_tokens):
        self.calls.append(add_special_tokens)
        return {"input_ids": [[ord(c) for c in text] for text in texts]}


class Templated(Plain):
    chat_template = "{{ messages }}"

    def apply_chat_template(self, messages, **kwargs):
        self.template_call = kwargs
        return "|".join(m["content"] for m in messages)


def test_without_a_template_a_question_ends_on_a_line_to_answer_on():
    assert render_messages(Plain(), QUESTION) == "system: Be brief.\nuser: 2+2?\nassistant:"


def test_without_a_template_an_answer_is_continued_not_prompted_again():
    assert render_messages(Plain(), ANSWERED) == "system: Be brief.\nuser: 2+2?\nassistant: 4"


def test_a_template_asks_for_a_generation_prompt_after_a_question():
    tokenizer = Templated()
    assert render_messages(tokenizer, QUESTION) == "Be brief.|2+2?"
    assert tokenizer.template_call == {
        "tokenize": False,
        "add_generation_prompt": True,
        "continue_final_message": False,
    }


def test_a_template_continues_a_final_assistant_message():
    tokenizer = Templated()
    render_messages(tokenizer, ANSWERED)
    assert tokenizer.template_call["continue_final_message"] is True
    assert tokenizer.template_call["add_generation_prompt"] is False


def test_special_tokens_are_added_only_where_no_template_wrote_its_own():
    plain, templated = Plain(), Templated()
    assert prompt_ids(plain, ["ab"]) == [[97, 98]]
    prompt_ids(templated, ["ab"])
    assert (plain.calls, templated.calls) == ([True], [False])


def test_prompts_are_padded_on_the_left_so_every_row_continues_at_one_column():
    ids, mask = pad([[1, 2, 3], [4]], pad_id=0, left=True)
    assert ids.tolist() == [[1, 2, 3], [0, 0, 4]]
    assert mask.tolist() == [[1, 1, 1], [0, 0, 1]]
    assert ids.dtype == mask.dtype == torch.long


def test_answers_are_padded_on_the_right():
    ids, mask = pad([[1], [2, 3]], pad_id=9, left=False)
    assert ids.tolist() == [[1, 9], [2, 3]]
    assert mask.tolist() == [[1, 0], [1, 1]]
