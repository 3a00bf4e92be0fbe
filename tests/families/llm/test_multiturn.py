"""Multi-turn LLM environments (agilerl.families.llm.multiturn): the protocol and the tiny
two-turn task, the lock-step rollout's batch (the contract of agilerl.llm.batches), the
end of episodes, the manifest's entry point and refusals, the loop, resuming, and the
learning outcome of turn-level GRPO against the blind first-turn baseline."""

from __future__ import annotations

import json
import math
import shutil

import pytest
import torch
from support import ROOT

from agilerl.algorithms import GRPO, LLMPPO, LLMREINFORCE
from agilerl.algorithms.core.llm_sampling import turns_per_row
from agilerl.cli import main
from agilerl.families.llm.environments import build_llm_env
from agilerl.families.llm.loop import STEPS, finetune_llm_multiturn
from agilerl.families.llm.multiturn import (
    MAX_TURNS,
    TEST_STREAM,
    MultiTurnEnv,
    MultiTurnEnvError,
    MultiTurnEpisodes,
    episode_seed,
)
from agilerl.llm.models import LLMSetupError, load_causal_lm, load_tokenizer
from agilerl.models import DPOSpec, GRPOSpec
from agilerl.models.env import LLMReasoningEnvSpec
from agilerl.testing.multiturn import BLIND_CEILING, FIRST_QUESTION, TOPICS, RevealedTopic

QUICK = {
    "gradient_checkpointing": False,
    "max_grad_norm": 1.0,
    "lora_config": {"lora_r": 8, "lora_alpha": 16, "lora_dropout": 0.0},
}


@pytest.fixture(scope="module")
def tokenizer(tiny_llm):
    return load_tokenizer(tiny_llm / "model")


@pytest.fixture(scope="module")
def base(tiny_llm):
    return load_causal_lm(tiny_llm / "model")


def _grpo(tokenizer, base, **kwargs):
    fields = {**QUICK, "group_size": 4, "max_output_tokens": 3, "temperature": 1.0, **kwargs}
    return GRPO(tokenizer=tokenizer, actor_network=base, **fields)


def _episodes(tokenizer, batch_size=2, **kwargs):
    return MultiTurnEpisodes(RevealedTopic, tokenizer, batch_size=batch_size, seed=0, **kwargs)


# -- the protocol and the toy task ---------------------------------------------------------
def test_the_toy_task_follows_the_protocol_and_turn_2_needs_the_reply_to_turn_1():
    env = RevealedTopic()
    assert isinstance(env, MultiTurnEnv)
    replies = set()
    for seed in range(6):
        observation, _ = env.reset(seed=seed)
        assert observation == FIRST_QUESTION  # names no topic
        reply, reward, terminated, truncated, _ = env.step("blue 3")
        assert reward == 0.0 and not terminated and not truncated
        replies.add(reply.split()[0])
        answer = "blue red" if reply.startswith("what colour") else "3 4"
        assert env.step(answer)[1:3] == (1.0, True)  # the reply's topic earns it all
        env.reset(seed=seed)
        env.step("")
        assert env.step("blue 3 x x")[1] == 0.25  # one of four words of the topic
    assert replies == {"what", "count"}  # both topics: only the reply tells which
    blind = RevealedTopic(reveal=False)
    assert blind.max_turns == 1 and BLIND_CEILING == 0.5


# -- the rollout ---------------------------------------------------------------------------
def test_the_rollout_gives_the_contracts_batch(tokenizer, base):
    agent = _grpo(tokenizer, base)
    env = _episodes(tokenizer)
    experience = env.rollout(agent)
    c = experience.completions
    rows = 2 * 4
    assert c.ids.shape[0] == rows and c.loss_mask.shape == (rows, c.ids.shape[1] - 1)
    assert c.turn_ids is not None and c.turn_ids.shape == c.loss_mask.shape
    assert experience.rewards.shape == (2, 4)
    assert experience.turn_rewards is not None and experience.turn_rewards.shape == (rows, 2)
    torch.testing.assert_close(experience.rewards.reshape(-1), experience.turn_rewards.sum(1))
    # the loss is on the generated tokens only, each of turn 0 or 1, -1 elsewhere
    assert torch.equal(c.turn_ids >= 0, c.loss_mask)
    assert set(c.turn_ids.unique().tolist()) == {-1, 0, 1}
    for row in range(rows):
        generated = torch.cat([torch.zeros(1, dtype=torch.bool), c.loss_mask[row]])
        template = tokenizer.decode(c.ids[row][c.attention_mask[row].bool() & ~generated])
        # the chat template's tokens: the system prompt, the first question, the end of
        # turn 1, the reply to it as a user message, the second generation prompt
        assert template.startswith(
            "<system> You are a helpful assistant . <eos> <user> what is the ? <eos> <assistant> "
        )
        assert template.count("<user>") == 2 and template.count("<assistant>") == 2
        assert tokenizer.pad_token_id not in c.ids[row][generated].tolist()
    # a group shares its reset seed: the same reply in every member's second turn
    for b in range(2):
        replies = set()
        for g in range(4):
            row = b * 4 + g
            generated = torch.cat([torch.zeros(1, dtype=torch.bool), c.loss_mask[row]])
            template = tokenizer.decode(c.ids[row][c.attention_mask[row].bool() & ~generated])
            replies.add(template.split("<user>")[2])
        assert len(replies) == 1
    assert env.state_dict() == {"seed": 0, "episodes": 2}


def test_a_transcript_past_max_model_len_ends_the_episode_truncated(tokenizer, base):
    agent = _grpo(tokenizer, base, max_model_len=24, max_output_tokens=3)
    experience = _episodes(tokenizer).rollout(agent)
    # the first prompt (17 tokens) + 3 generated + the reply (> 3 tokens) leaves no room
    # for a second answer of 3 tokens within 24: every episode ends after turn 0
    assert experience.completions.turn_ids is not None
    assert int(experience.completions.turn_ids.max()) == 0
    assert experience.turn_rewards is not None and experience.turn_rewards[:, 1].eq(0).all()


def test_reinforce_plays_one_episode_per_seed_and_learns_per_turn(tokenizer, base):
    agent = LLMREINFORCE(tokenizer=tokenizer, actor_network=base, max_output_tokens=2,
                         advantage_granularity="turn", gamma=0.5,
                         importance_sampling_level="turn", update_epochs=2, **QUICK)  # fmt: skip
    experience = _episodes(tokenizer, batch_size=3).rollout(agent)
    assert experience.rewards.shape == (3, 1)
    assert agent.granularity(turns_per_row(experience.completions.turn_ids)) == "turn"
    metrics = agent.learn(experience)  # one ratio per turn; the second epoch off-policy
    assert set(metrics) == set(LLMREINFORCE.learn_metrics)
    assert math.isfinite(metrics["loss"]) and metrics["completion_length"] > 0


def test_llm_ppo_plays_one_episode_per_seed_and_learns_by_turn_gae(tokenizer, base):
    agent = LLMPPO(tokenizer=tokenizer, actor_network=base, max_output_tokens=2,
                   lr_critic=0.01, update_epochs=2, **QUICK)  # fmt: skip
    experience = _episodes(tokenizer, batch_size=3).rollout(agent)
    assert experience.rewards.shape == (3, 1) and experience.turn_rewards is not None
    turns = experience.completions.turn_ids
    assert turns is not None and int(turns.max()) == 1  # both turns played
    # auto: more than one turn per row -> GAE over turns, the ratio per turn
    played = (turns[:, :, None] == torch.arange(2)).any(1)
    assert agent.granularity(played.sum(1)) == "turn" and agent.ratio_level("turn") == "turn"
    head = {k: v.clone() for k, v in agent.critic.state_dict().items()}
    metrics = agent.learn(experience)
    assert set(metrics) == set(LLMPPO.learn_metrics)
    assert all(math.isfinite(v) for v in metrics.values()) and metrics["vf_loss"] > 0
    moved = [k for k, v in agent.critic.state_dict().items() if not torch.equal(v, head[k])]
    assert moved  # the critic learned from the turns' returns


def test_more_turns_than_the_engine_plays_is_refused_before_anything_is_allocated(tokenizer):
    def endless():
        env = RevealedTopic()
        env.max_turns = 10**9
        return env

    with pytest.raises(LLMSetupError, match=r"environment\.max_turns: 1000000000 turns is more"):
        MultiTurnEpisodes(endless, tokenizer, batch_size=2)
    assert _episodes(tokenizer, max_turns=MAX_TURNS).max_turns == MAX_TURNS


def test_a_broken_environment_is_named(tokenizer, base):
    class Silent(RevealedTopic):
        def step(self, action):
            raise KeyError("no such word")

    env = MultiTurnEpisodes(Silent, tokenizer, batch_size=1, name="environment.entrypoint x:Silent")
    with pytest.raises(MultiTurnEnvError, match=r"environment\.entrypoint x:Silent step raised"):
        env.rollout(_grpo(tokenizer, base, group_size=2))
    with pytest.raises(LLMSetupError, match="made a object, which has no reset or step method"):
        MultiTurnEpisodes(lambda: object(), tokenizer, batch_size=1)

    class Endless(RevealedTopic):
        max_turns = None  # type: ignore[assignment]

        def __init__(self):
            pass

    with pytest.raises(LLMSetupError, match="environment.max_turns: None"):
        MultiTurnEpisodes(Endless, tokenizer, batch_size=1)


# -- manifests -----------------------------------------------------------------------------
def test_the_manifest_builds_the_entry_point_with_its_config(tokenizer):
    spec = LLMReasoningEnvSpec(
        env_type="multiturn",
        entrypoint="agilerl.testing.multiturn:RevealedTopic",
        env_config={"reveal": False},
        max_reward=1.0,
    )
    env = build_llm_env(
        spec, tokenizer, batch_size=2, max_context_length=None, seed=5, base_dir=None
    )
    assert isinstance(env, MultiTurnEpisodes)
    assert env.max_turns == 1 and env.max_reward == 1.0 and env.seed == 5  # probed from the env


def test_only_the_sampling_algorithms_train_multi_turn():
    from agilerl.families.llm.loop import finetune_llm_reasoning

    assert GRPOSpec.get_training_fn(multiturn=True) is finetune_llm_multiturn
    assert GRPOSpec.get_training_fn() is finetune_llm_reasoning
    with pytest.raises(NotImplementedError, match="DPOSpec trains on preference datasets"):
        DPOSpec.get_training_fn(multiturn=True)
    assert "multiturn" in STEPS


def test_a_dpo_manifest_with_a_multiturn_environment_is_refused_naming_the_field(tmp_path, capsys):
    manifest = tmp_path / "dpo.yaml"
    manifest.write_text(
        "version: 1\nalgorithm: {name: DPO, batch_size: 2}\n"
        "environment: {env_type: multiturn, entrypoint: 'agilerl.testing.multiturn:RevealedTopic'}\n"
        "network: {pretrained_model_name_or_path: m}\ntraining: {max_steps: 1}\n"
    )
    assert main(["validate", str(manifest)]) == 1
    assert "environment.env_type" in capsys.readouterr().err


# -- the loop, resuming --------------------------------------------------------------------
@pytest.fixture(scope="module")
def configs(tiny_llm, tmp_path_factory):
    root = tmp_path_factory.mktemp("multiturn")
    shutil.copytree(ROOT / "configs", root / "configs")
    (root / "tiny-llm").symlink_to(tiny_llm)
    return root


SHORT = ["--set", "training.evaluation_interval=1", "--set", "algorithm.batch_size=2",
         "--set", "algorithm.group_size=2", "--set", "training.evo_steps=1", "--quiet"]  # fmt: skip


def test_an_interrupted_and_resumed_run_equals_the_uninterrupted_one(configs, capsys):
    """Two generations at once, or one, then resumed for the second: the same losses and
    fitness to the last digit (the adapters, optimiser, RNG and the episodes' seed
    position came back from the checkpoint)."""
    manifest = str(configs / "configs" / "grpo_multiturn.yaml")
    whole, parted = configs / "whole", configs / "parted"
    assert (
        main(["train", manifest, "--out", str(whole), *SHORT, "--set", "training.max_steps=2"]) == 0
    )
    assert (
        main(["train", manifest, "--out", str(parted), *SHORT, "--set", "training.max_steps=1"])
        == 0
    )
    assert main(["train", manifest, "--out", str(parted), *SHORT, "--set", "training.max_steps=2",
                 "--resume"]) == 0  # fmt: skip
    capsys.readouterr()

    def outcome(run):
        history = json.loads((run / "history.json").read_text())
        return [[(a["metrics"]["loss"], a["fitness"]) for a in gen["agents"]] for gen in history]

    assert len(outcome(whole)) == 2
    assert outcome(parted) == outcome(whole)


# -- learning ------------------------------------------------------------------------------
@pytest.mark.slow
def test_turn_level_grpo_beats_the_blind_first_turn_baseline_by_0_3(tokenizer, base):
    """GRPO with turn-level advantages on the two-turn task, against the same GRPO with
    the same budget (100 steps of 8 episodes × a group of 8, seed 0) trained on the blind
    one-turn version of the task, where the agent must answer before the environment's
    reply. The test score is the mean return of 32 greedy episodes from fixed seeds; a
    blind agent answers every episode alike, so it scores at most the larger topic's
    share of those seeds (its ``ceiling``, 0.625) whatever it learns. The two-turn agent
    must learn to answer in the topic the reply asks about, and beats the blind agent by
    at least 0.3 (measured: 1.0 against 0.625, for agent seeds 42 and 1; 60 steps were
    not enough for seed 42; about 30 s on two CPU cores). LoRA on the output layer too:
    the tiny random model's logits barely move otherwise."""
    lora = {"lora_r": 8, "lora_alpha": 16, "lora_dropout": 0.0,
            "target_modules": ["q_proj", "v_proj", "lm_head"]}  # fmt: skip

    def trained(reveal):
        agent = _grpo(tokenizer, base, group_size=8, lr=5e-3, beta=0.0, max_output_tokens=2,
                      advantage_granularity="turn", lora_config=lora)  # fmt: skip
        env = MultiTurnEpisodes(lambda: RevealedTopic(reveal), tokenizer, batch_size=8, seed=0)
        for _ in range(100):
            agent.learn(env.rollout(agent))
        return agent.test(env)

    probe = RevealedTopic()
    topics = [probe.reset(episode_seed(0, TEST_STREAM, i)) and probe.topic for i in range(32)]
    ceiling = max(topics.count(topic) for topic in TOPICS) / len(topics)
    blind, revealed = trained(False), trained(True)
    assert blind <= ceiling + 1e-9
    assert revealed - blind >= 0.3, (revealed, blind)
