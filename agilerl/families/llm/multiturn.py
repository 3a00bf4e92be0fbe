"""Multi-turn LLM environments: the text-level protocol a user's environment follows, and
the tokenised, batched, lock-step rollout that turns its episodes into what the sampling
algorithms (GRPO, GSPO, CISPO, LLM-REINFORCE, LLM-PPO) learn from.

**The protocol** (:class:`MultiTurnEnv`): ``max_turns``; ``reset(seed=None) ->
(observation, info)``; ``step(action_text) -> (observation, reward, terminated,
truncated, info)``; optionally a ``system_prompt`` string. Observations and actions are
text: the environment never sees a token.

**The rollout** (:class:`MultiTurnEpisodes`): a step plays ``batch_size`` episodes ×
the agent's ``samples_per_prompt`` (GRPO's group; one for LLM-REINFORCE and LLM-PPO), one environment
per episode; the members of a group are reset with the same seed, so GRPO compares like
with like. Every active episode takes its turn together: the transcripts are rendered
with the tokenizer's chat template (the system prompt, then each observation as a user
message and each generated answer as an assistant message), the agent samples one
completion per episode (:meth:`~agilerl.algorithms.core.llm_sampling.CompletionSampler.sample`),
and each environment steps on the decoded text. An episode ends when its environment
says so, after ``max_turns`` turns, or, truncated, when its transcript leaves no room
for a completion of ``max_output_tokens`` within ``max_model_len`` (the next turn could
not be generated whole).

The transcript's tokens are the generated tokens themselves (what the agent sampled is
what it learns from) with, between turns, the tokens of the chat template's rendering of
what follows the assistant's answer (its end-of-turn marker, the next user message and
the next generation prompt; an end-of-sequence token the agent generated is not
repeated). The template must render a conversation as a prefix of the conversation
with one more message; a template that does not is refused, naming it.

The batch (:class:`~agilerl.llm.batches.Experience`): the transcripts, left-padded
first prompt then right-padded rest; the loss mask on the generated tokens only; each
action prediction's turn (``turn_ids``); the turns' rewards ``[rows, max_turns]`` and
the episode returns ``[batch, group]``.

**Resuming**: the environments are reset with a seed on every episode, the seeds drawn
from the run's seed and the number of episodes played (:meth:`state_dict`), so a resumed
run plays exactly the episodes the interrupted one would have: an environment must
depend on its reset seed alone (no state carried between episodes).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np
import torch

from agilerl.families.llm.rendering import pad, prompt_ids, render_messages
from agilerl.guards.user_code import UserCodeError, call_user
from agilerl.llm.batches import Completions, Experience, PromptBatch
from agilerl.llm.data_parallel import DataParallel
from agilerl.llm.models import LLMSetupError

#: The most turns an episode may have: each episode's per-turn rewards take this many
#: columns of every batch, so a larger limit is refused before anything is allocated
#: (AgileRL's longest shipped game, Sudoku, plays 50).
MAX_TURNS = 4096
#: Greedy episodes the test score averages over, from fixed seeds.
TEST_EPISODES = 32
#: The seed streams of training and test episodes (so the two never share a seed draw).
TRAIN_STREAM, TEST_STREAM = 0, 1


@runtime_checkable
class MultiTurnEnv(Protocol):
    """A multi-turn text environment (see the module docstring). ``system_prompt``, when
    the environment has one, opens every transcript."""

    max_turns: int

    def reset(self, seed: int | None = None) -> tuple[str, dict[str, Any]]: ...

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]: ...


class MultiTurnEnvError(RuntimeError):
    """The user's environment failed or broke the protocol (the message names where)."""


def episode_seed(seed: int, stream: int, number: int) -> int:
    """The reset seed of episode ``number`` of a stream (training or test) of a run."""
    return int(np.random.SeedSequence([seed, stream, number]).generate_state(1)[0])


@dataclass
class _Episode:
    """One episode's transcript so far: token ids, whether each is an action (generated)
    token and its turn (-1 off the actions), the messages, the turns' rewards."""

    env: MultiTurnEnv
    messages: list[dict[str, str]]
    ids: list[int]
    prompt_length: int
    acting: list[bool] = field(default_factory=list)
    turns: list[int] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)
    done: bool = False
    truncated: bool = False

    def __post_init__(self) -> None:
        self.acting = [False] * len(self.ids)
        self.turns = [-1] * len(self.ids)

    def append(self, ids: Sequence[int], turn: int) -> None:
        """Tokens of the transcript: the agent's (``turn`` >= 0) or the template's (-1)."""
        self.ids.extend(ids)
        self.acting.extend([turn >= 0] * len(ids))
        self.turns.extend([turn] * len(ids))


class MultiTurnEpisodes:
    """The rollout over a multi-turn environment (see the module docstring).

    ``make_env``: builds one environment (called once per episode slot, the slots reused
    from step to step); ``name``: how messages name it (the manifest field). ``max_turns``:
    the most turns of an episode (None: the environment's ``max_turns``). ``max_reward``:
    the best episode return (reported; stops a run once an agent's test score reaches it).
    ``test_episodes``: the greedy episodes of the test score, from fixed seeds."""

    def __init__(
        self,
        make_env: Callable[[], Any],
        tokenizer: Any,
        *,
        batch_size: int,
        max_turns: int | None = None,
        max_reward: float | None = None,
        seed: int = 0,
        test_episodes: int = TEST_EPISODES,
        name: str = "environment.entrypoint",
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, not {batch_size}")
        if test_episodes < 1:
            raise ValueError(f"test_episodes must be at least 1, not {test_episodes}")
        self.make_env, self.tokenizer, self.name = make_env, tokenizer, name
        self.batch_size, self.max_reward, self.seed = batch_size, max_reward, seed
        self.test_episodes = test_episodes
        self.envs: list[Any] = []
        probe = self._env(0)
        turns = max_turns if max_turns is not None else getattr(probe, "max_turns", None)
        if not isinstance(turns, int) or isinstance(turns, bool) or turns < 1:
            raise LLMSetupError(
                f"environment.max_turns: {turns!r}: a multi-turn environment needs a positive "
                f"number of turns (set environment.max_turns, or give {name}'s environment "
                "a max_turns attribute)"
            )
        if turns > MAX_TURNS:
            raise LLMSetupError(
                f"environment.max_turns: {turns} turns is more than this engine plays in an "
                f"episode ({MAX_TURNS}; every batch holds a reward column per turn); set "
                "environment.max_turns"
            )
        self.max_turns = turns
        #: Training episodes played so far (the position in the seed stream).
        self.episodes = 0

    # -- the environments -----------------------------------------------------------------
    def _env(self, slot: int) -> Any:
        while len(self.envs) <= slot:
            env = self._call(self.make_env, "()")
            missing = [m for m in ("reset", "step") if not callable(getattr(env, m, None))]
            if missing:
                raise LLMSetupError(
                    f"{self.name}: made a {type(env).__name__}, which has no "
                    f"{' or '.join(missing)} method; a multi-turn environment follows "
                    "agilerl.families.llm.multiturn.MultiTurnEnv (reset(seed) -> "
                    "(observation, info), step(text) -> (observation, reward, terminated, "
                    "truncated, info))"
                )
            self.envs.append(env)
        return self.envs[slot]

    def _call(self, fn: Callable[..., Any], what: str, *args: Any, **kwargs: Any) -> Any:
        """The user's code, its failure reported as theirs, naming the call."""
        where = f"{self.name} {what}"
        try:
            return call_user(fn, *args, what=where, **kwargs)
        except (UserCodeError, LLMSetupError):
            raise
        except Exception as err:
            message = " ".join(str(err).split())
            raise MultiTurnEnvError(f"{where} raised {type(err).__name__}: {message}") from err

    # -- position ---------------------------------------------------------------------------
    def state_dict(self) -> dict[str, int]:
        return {"seed": self.seed, "episodes": self.episodes}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.seed, self.episodes = int(state["seed"]), int(state["episodes"])

    # -- playing ----------------------------------------------------------------------------
    def rollout(self, agent: Any) -> Experience:
        """The next ``batch_size`` training episodes × the agent's group, sampled: this
        process's share of them when the run is data-parallel (every process draws the
        same seeds and plays its own block of episodes)."""
        share = DataParallel.current().share(self.batch_size, "batch_size")
        seeds = [
            episode_seed(self.seed, TRAIN_STREAM, self.episodes + b) for b in range(self.batch_size)
        ]
        self.episodes += self.batch_size
        return self.play(agent, seeds[share], share.start, training=True)

    def test_rewards(self, agent: Any) -> Iterator[torch.Tensor]:
        """The returns ``[episodes, 1]`` of ``agent``'s greedy episodes from the fixed test
        seeds (this process's share of them), ``batch_size`` at a time."""
        dp = DataParallel.current()
        seeds = [episode_seed(self.seed, TEST_STREAM, i) for i in range(self.test_episodes)]
        for start in range(0, len(seeds), self.batch_size):
            batch = seeds[start : start + self.batch_size]
            share = dp.split(len(batch))
            yield self.play(agent, batch[share], share.start, training=False).rewards

    def play(
        self, agent: Any, seeds: Sequence[int], first_row: int, *, training: bool
    ) -> Experience:
        """Episodes from ``seeds`` (the agent's group of them each when ``training``,
        else one greedy episode each), played in lock-step; ``first_row``: the position
        of the first seed in the global batch (the sampling streams are the global
        rows')."""
        group = agent.samples_per_prompt if training else 1
        episodes = [
            self._start(self._env(row), seeds[row // group]) for row in range(len(seeds) * group)
        ]
        dp = DataParallel.current()
        eos = self.tokenizer.eos_token_id
        # No room for a whole completion: the episode ends before its next turn.
        limit = agent.context_limit - (agent.max_output_tokens or 1)
        for turn in range(self.max_turns):
            for episode in episodes:
                if not episode.done and len(episode.ids) > limit:
                    episode.done = episode.truncated = True
            active = [row for row, episode in enumerate(episodes) if not episode.done]
            # Data-parallel: every process takes a turn while any has an episode going
            # (the agent draws a sampling seed per turn, alike on every process).
            if not dp.sum([float(len(active))])[0]:
                break
            if not active:
                if training:
                    agent.rng.integers(2**63)  # the draw this process's turn would take
                continue
            rows = [(first_row * group) + row for row in active]
            completions = agent.sample(self._prompts(episodes, active), training, rows=rows)
            for i, row in enumerate(active):
                self._take_turn(episodes[row], completions, i, turn, eos)
        return self._experience(episodes, group)

    def _start(self, env: Any, seed: int) -> _Episode:
        observation, _ = self._call(env.reset, "reset", seed=seed)
        system = getattr(env, "system_prompt", None)
        messages = [{"role": "system", "content": str(system)}] if system else []
        messages.append({"role": "user", "content": self._text(observation, "reset")})
        ids = prompt_ids(self.tokenizer, [render_messages(self.tokenizer, messages)])[0]
        return _Episode(env, messages, list(ids), prompt_length=len(ids))

    def _text(self, observation: Any, where: str) -> str:
        if not isinstance(observation, str):
            raise MultiTurnEnvError(
                f"{self.name} {where}: returned a {type(observation).__name__} observation; "
                "a multi-turn environment's observations are text (str)"
            )
        return observation

    def _prompts(self, episodes: list[_Episode], active: list[int]) -> PromptBatch:
        ids, mask = pad(
            [episodes[row].ids for row in active], self.tokenizer.pad_token_id, left=True
        )
        return PromptBatch(ids, mask, texts=[""] * len(active), rows=[{}] * len(active))

    def _take_turn(
        self, episode: _Episode, completions: Completions, i: int, turn: int, eos: int | None
    ) -> None:
        """The agent's answer into the transcript, the environment's step on its text,
        and, when the episode goes on, the next user message's tokens."""
        start = completions.prompt_length
        keep = completions.loss_mask[i, start - 1 :].bool().cpu()
        generated = completions.ids[i, start:].cpu()[keep].tolist()
        episode.append(generated, turn)
        text = completions.texts[i]
        episode.answers.append(text)
        observation, reward, terminated, truncated, _ = self._call(episode.env.step, "step", text)
        episode.rewards.append(float(reward))
        episode.messages.append({"role": "assistant", "content": text})
        if terminated or truncated or turn + 1 >= self.max_turns:
            episode.done, episode.truncated = True, bool(truncated)
            return
        before = render_messages(self.tokenizer, episode.messages)
        episode.messages.append({"role": "user", "content": self._text(observation, "step")})
        after = render_messages(self.tokenizer, episode.messages)
        if not after.startswith(before):
            raise LLMSetupError(
                "tokenizer chat template: the rendering of a conversation with one more user "
                "message does not start with the rendering without it, so a multi-turn "
                f"transcript cannot be extended turn by turn (before: {before[-80:]!r}; "
                f"after: {after[-120:]!r})"
            )
        following = self.tokenizer(after[len(before) :], add_special_tokens=False)["input_ids"]
        if eos is not None and generated[-1:] == [eos] and following[:1] == [eos]:
            following = following[1:]  # the agent's own end of turn closes its answer
        episode.append(following, -1)

    def _experience(self, episodes: list[_Episode], group: int) -> Experience:
        """The episodes as the algorithms' batch (see the module docstring)."""
        # (a process's share of a test batch may hold no episode: an empty batch)
        prompt = max((e.prompt_length for e in episodes), default=0)
        rest = max((len(e.ids) - e.prompt_length for e in episodes), default=0)
        rows, width = len(episodes), prompt + rest
        ids = torch.full((rows, width), self.tokenizer.pad_token_id, dtype=torch.long)
        attention = torch.zeros((rows, width), dtype=torch.long)
        acting = torch.zeros((rows, width), dtype=torch.bool)
        turns = torch.full((rows, width), -1, dtype=torch.long)
        turn_rewards = torch.zeros((rows, self.max_turns), dtype=torch.float32)
        for r, e in enumerate(episodes):
            # The first prompt left-padded to ``prompt``, what follows right-padded.
            span = slice(prompt - e.prompt_length, prompt - e.prompt_length + len(e.ids))
            ids[r, span] = torch.tensor(e.ids, dtype=torch.long)
            attention[r, span] = 1
            acting[r, span] = torch.tensor(e.acting, dtype=torch.bool)
            turns[r, span] = torch.tensor(e.turns, dtype=torch.long)
            turn_rewards[r, : len(e.rewards)] = torch.tensor(e.rewards, dtype=torch.float32)
        loss_mask = acting[:, 1:]
        completions = Completions(
            ids=ids,
            attention_mask=attention,
            loss_mask=loss_mask,
            prompt_length=prompt,
            group_size=group,
            texts=["\n".join(e.answers) for e in episodes],
            turn_ids=torch.where(loss_mask, turns[:, 1:], -1),
        )
        returns = turn_rewards.sum(1).reshape(rows // group, group)
        return Experience(completions, returns, turn_rewards)
