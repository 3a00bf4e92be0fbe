"""``CompletionSampler``: the LLM algorithms that sample completions of prompts and learn
from their rewards (GRPO, GSPO, CISPO, LLM-REINFORCE, LLM-PPO).

What they share is the rollout: ``samples_per_prompt`` completions of each prompt sampled at
``temperature`` (between ``min_output_tokens`` and ``max_output_tokens`` new tokens, within
``max_model_len``), their masks, and the test (the mean reward of greedy completions over
the environment's test split). They differ in how they learn from the rewards.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import torch

from agilerl.algorithms.core.llm import LLMAlgorithm
from agilerl.llm.batches import Completions, Experience, PromptBatch


class CompletionSampler(LLMAlgorithm):
    """Base of the sampling LLM algorithms (see the module docstring).
    ``cosine_lr_schedule_config``: warm-up and cosine decay over ``num_epochs`` optimiser
    steps."""

    # Set from the bound spec before the body runs.
    temperature: float
    max_output_tokens: int | None
    min_output_tokens: int | None
    cosine_lr_schedule_config: Any
    use_vllm: bool
    vllm_config: Any

    def check_hyperparameters(self) -> None:
        """``min_output_tokens`` at most ``max_output_tokens``; the schedule read into
        its model."""
        from agilerl.models.algo import CosineLRScheduleConfig

        super().check_hyperparameters()
        fewest = 0 if self.min_output_tokens is None else self.min_output_tokens
        if self.max_output_tokens is not None and fewest > self.max_output_tokens:
            raise ValueError(
                f"min_output_tokens must lie in [0, max_output_tokens "
                f"({self.max_output_tokens})], got {self.min_output_tokens}"
            )
        schedule = self.cosine_lr_schedule_config
        if schedule is not None:
            self.cosine_lr_schedule_config = CosineLRScheduleConfig.model_validate(
                schedule.model_dump() if hasattr(schedule, "model_dump") else schedule
            )

    @property
    def samples_per_prompt(self) -> int:
        """Completions sampled per prompt in training (GRPO's group; one for REINFORCE)."""
        return 1

    # -- acting ---------------------------------------------------------------------------
    def get_action(self, prompts: PromptBatch, training: bool = True) -> Completions:
        """:attr:`samples_per_prompt` completions per prompt sampled at ``temperature``
        when ``training`` (from this agent's seeded stream), else one greedy completion."""
        group = self.samples_per_prompt if training else 1
        first = prompts.first_row * group
        return self._generate(prompts, group, training, range(first, first + len(prompts) * group))

    def sample(
        self, prompts: PromptBatch, training: bool = True, rows: Sequence[int] | None = None
    ) -> Completions:
        """One completion per prompt row (no group repetition: a multi-turn rollout's rows
        are already its episodes, a group's members among them), sampled at
        ``temperature`` when ``training``, else greedy. ``rows``: the global row each
        prompt samples from (its stream, :class:`~agilerl.llm.sampling.RowSampler`);
        by default the batch's own rows from ``first_row``."""
        first = prompts.first_row
        keys = range(first, first + len(prompts)) if rows is None else rows
        return self._generate(prompts, 1, training, keys)

    def _generate(
        self, prompts: PromptBatch, group: int, training: bool, rows: Sequence[int]
    ) -> Completions:
        """``group`` completions of each prompt; sampled rows draw from the streams of
        ``rows`` (one per completion)."""
        from transformers import GenerationConfig, LogitsProcessorList

        from agilerl.llm.sampling import RowSampler

        ids = prompts.input_ids.to(self.device).repeat_interleave(group, 0)
        mask = prompts.attention_mask.to(self.device).repeat_interleave(group, 0)
        prompt_length = ids.shape[1]
        room = self.context_limit - prompt_length
        if room < 1:
            raise ValueError(
                f"max_model_len: prompts of {prompt_length} tokens leave no room for a "
                f"completion within {self.context_limit} tokens"
            )
        new_tokens = room if self.max_output_tokens is None else min(room, self.max_output_tokens)
        pad, eos = self._special_ids()
        # Sampling is greedy decoding over Gumbel-perturbed scores (:class:`RowSampler`):
        # exact sampling at ``temperature``, each completion from its own stream.
        config = GenerationConfig(
            do_sample=False,
            max_new_tokens=new_tokens,
            min_new_tokens=min(self.min_output_tokens or 0, new_tokens),
            pad_token_id=pad,
            eos_token_id=eos,
        )
        processors = []
        if training:
            draw = int(self.rng.integers(2**63))
            processors.append(RowSampler(draw, rows, self.temperature))
        with torch.no_grad(), self._policy() as model:
            out = model.generate(
                input_ids=ids,
                attention_mask=mask,
                generation_config=config,
                logits_processor=LogitsProcessorList(processors),
            )
        return self._completions(out, mask, prompt_length, group, eos)

    def _special_ids(self) -> tuple[int, int | None]:
        tok = self.tokenizer
        eos = tok.eos_token_id
        pad = tok.pad_token_id if tok.pad_token_id is not None else eos
        if pad is None:
            raise ValueError("tokenizer: it has neither a pad token nor an end-of-sequence token")
        return pad, eos

    def _completions(
        self,
        out: torch.Tensor,
        prompt_mask: torch.Tensor,
        prompt_length: int,
        group: int,
        eos: int | None,
    ) -> Completions:
        """Masks of generated sequences: a completion runs up to its first
        end-of-sequence token (included); what follows is padding."""
        tokens = out[:, prompt_length:]
        if eos is None:
            valid = torch.ones_like(tokens, dtype=torch.bool)
        else:
            ended_before = (tokens == eos).long().cumsum(1) - (tokens == eos).long()
            valid = ended_before == 0
        loss_mask = torch.zeros(out.shape[0], out.shape[1] - 1, dtype=torch.bool, device=out.device)
        loss_mask[:, prompt_length - 1 :] = valid
        attention = torch.cat([prompt_mask.bool(), valid], 1).long()
        texts = self.tokenizer.batch_decode(
            [row[keep] for row, keep in zip(tokens, valid, strict=True)], skip_special_tokens=True
        )
        return Completions(
            ids=out, attention_mask=attention, loss_mask=loss_mask,
            prompt_length=prompt_length, group_size=group, texts=texts,
        )  # fmt: skip

    def test(self, env: Any, loop: int = 1) -> float:
        """The environment's test score of this agent's greedy behaviour (``loop`` passes;
        greedy decoding makes them equal), appended to ``fitness``: the mean reward of
        completions over a reasoning environment's test split, the mean episode return
        over a multi-turn environment's test seeds (``env.test_rewards(agent)``: what the
        environment makes of the agent is the environment's to say)."""
        total, count = 0.0, 0
        for _ in range(loop):
            for rewards in env.test_rewards(self):
                total += float(rewards.sum())
                count += rewards.numel()
        if not self.data_parallel.alone:  # each process scored its share of the split
            total, count = self.data_parallel.sum([total, count])
        fitness = total / max(count, 1)
        self.fitness.append(fitness)
        return fitness


def turn_rewards_of(experience: Experience) -> torch.Tensor:
    """Each episode's turn rewards ``[rows, max_turns]``: the experience's own, or, for
    single-turn completions, their one turn's reward (the completion's) ``[rows, 1]``."""
    if experience.turn_rewards is not None:
        return experience.turn_rewards
    return experience.rewards.reshape(-1, 1)


#: ``advantage_granularity`` (and its deprecated alias ``action_granularity``) values.
GRANULARITIES = ("auto", "token", "turn")


class TurnCredit(CompletionSampler):
    """Base of the algorithms that credit each token or each turn of one completion per
    prompt (LLM-REINFORCE, LLM-PPO): ``advantage_granularity`` says which; ``auto`` is
    ``token`` when every episode of the batch has one turn, else ``turn``.
    ``action_granularity``, a deprecated alias, overrides it (with a DeprecationWarning)
    unless it is ``auto``."""

    # Set from the bound spec before the body runs.
    action_granularity: str
    advantage_granularity: str

    def check_hyperparameters(self) -> None:
        """The deprecated alias, when set, warned about."""
        super().check_hyperparameters()
        if self.action_granularity != "auto":
            warnings.warn(
                "action_granularity is a deprecated alias of advantage_granularity; "
                f"advantage_granularity={self.action_granularity!r} is used",
                DeprecationWarning,
                stacklevel=5,
            )

    def granularity(self, turns_per_row: torch.Tensor) -> str:
        """The credit's unit, ``token`` or ``turn``, for a batch whose rows played
        ``turns_per_row`` turns: the field (the alias, when set); ``auto``: ``turn`` when
        some row of the global batch (every rank's) played more than one."""
        chosen = self.advantage_granularity
        if self.action_granularity != "auto":
            chosen = self.action_granularity
        if chosen != "auto":
            return chosen
        several = float(self.data_parallel.sum((turns_per_row > 1).sum().float()))
        return "turn" if several > 0 else "token"


def turns_per_row(turn_ids: torch.Tensor) -> torch.Tensor:
    """How many turns each row played ``[rows]`` (turns are numbered from 0)."""
    return turn_ids.max(1).values.clamp(min=-1) + 1


def choice(field: str, value: Any, allowed: Any) -> Any:
    """``value`` when it is one of ``allowed``, else a ValueError naming ``field``."""
    if value not in allowed:
        raise ValueError(f"{field} must be one of {', '.join(map(repr, allowed))}, got {value!r}")
    return value
