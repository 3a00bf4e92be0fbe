"""A tiny two-turn text environment for the multi-turn LLM rollout
(:mod:`agilerl.families.llm.multiturn`), in the words of the tiny model's vocabulary
(:mod:`agilerl.llm.tiny`), so the tiny model can learn it in seconds.

:class:`RevealedTopic`: each episode hides a topic, colours or numbers (drawn from the
reset seed). Turn 1 asks "what is the ?" and earns nothing, whatever the answer: the
topic is not known yet. The environment's reply to turn 1 is a question of that topic,
in the tiny datasets' words ("what colour is the sky ?" or "count from 7"), and turn 2's
answer earns the share of its first four words that belong to the topic (a colour, or a
number). So turn 2 can only earn full marks by using what the environment said after
turn 1.

With ``reveal=False`` the episode is one turn: the answer to "what is the ?" is scored
against the hidden topic. No agent can know it, and each topic is drawn half the time, so
no agent's expected return there exceeds :data:`BLIND_CEILING` (0.5): the baseline of an
agent that must answer before the environment speaks.

The tiny model is a random network whose LoRA adapters learn a coarse rule ("answer a
colour question with colours") within seconds but not a fine one ("the sky is blue"),
so the topics are the coarse kind.
"""

from __future__ import annotations

import random
from typing import Any

from agilerl.llm.tiny import COLOURS, LARGEST_START, QUESTION, REWARD_WORDS, SYSTEM_PROMPT

#: Turn 1's observation: words of the tiny vocabulary, naming no topic.
FIRST_QUESTION = "what is the ?"
#: Each topic's words (what an answer of that topic is made of).
TOPICS = {
    "colour": frozenset(COLOURS.values()),
    "number": frozenset(str(n) for n in range(LARGEST_START + 1)),
}
#: The best expected return of an agent that answers without the environment's reply.
BLIND_CEILING = 0.5


def topic_score(answer: str, topic: str) -> float:
    """The share of the first words of ``answer`` that are words of ``topic``."""
    words = answer.split()[:REWARD_WORDS]
    if not words:
        return 0.0
    return sum(word in TOPICS[topic] for word in words) / len(words)


class RevealedTopic:
    """The two-turn environment of the module docstring (``reveal=False``: the one-turn
    blind baseline). ``system_prompt``: the tiny manifests' system prompt."""

    system_prompt = SYSTEM_PROMPT

    def __init__(self, reveal: bool = True) -> None:
        self.reveal = bool(reveal)
        self.max_turns = 2 if self.reveal else 1
        self.topic, self.question, self.turn = "colour", FIRST_QUESTION, 0

    def reset(self, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        rng = random.Random(seed)
        self.topic = rng.choice(sorted(TOPICS))
        self.question = (
            QUESTION.format(object=rng.choice(sorted(COLOURS)))
            if self.topic == "colour"
            else f"count from {rng.randint(0, LARGEST_START)}"
        )
        self.turn = 0
        return FIRST_QUESTION, {}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        self.turn += 1
        if self.turn < self.max_turns:  # turn 1 of 2: the reply asks the topic's question
            return self.question, 0.0, False, False, {}
        return "", topic_score(action, self.topic), True, False, {}
