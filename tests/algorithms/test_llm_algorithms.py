"""The LLM algorithms (GRPO, GSPO, CISPO, LLM-REINFORCE, LLM-PPO, DPO, SFT) on the tiny local model: the shared base, clones,
mutation, checkpoints, the peft adapter output, the spec fields' effects and refusals,
and the learning outcomes of the issue (fixed seeds, seconds each)."""

from __future__ import annotations

import inspect
import math

import pytest
import torch
from peft import PeftModel

from agilerl.algorithms import CISPO, DPO, GRPO, GSPO, LLMPPO, LLMREINFORCE, SFT
from agilerl.algorithms import llm_losses as L
from agilerl.algorithms.core.llm import cosine_factor, refusals, row_chunks
from agilerl.families.llm.environments import (
    PreferenceEnv,
    ReasoningEnv,
    SFTEnv,
    load_table,
    split_dataset,
)
from agilerl.files import checkpoints
from agilerl.llm.adapters import SharedBase
from agilerl.llm.batches import Experience
from agilerl.llm.models import LLMSetupError, load_causal_lm, load_tokenizer
from agilerl.llm.rewards import load_reward_fn
from agilerl.models import GRPOSpec, LLMPPOSpec

#: Settings of the quick agents here: no gradient clipping to speak of, a learning rate
#: the tiny model learns with in tens of steps, no LoRA dropout (exact comparisons).
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
    """One base model for the module's agents (each adds its own adapter to it)."""
    return load_causal_lm(tiny_llm / "model")


def _agent(cls, tokenizer, base, **kwargs):
    fields = {**QUICK, **kwargs}
    if issubclass(cls, GRPO):
        fields.setdefault("group_size", 4)
    return cls(tokenizer=tokenizer, actor_network=base, **fields)


def _split(tiny_llm, name):
    return split_dataset(load_table(tiny_llm / "data" / f"{name}.jsonl", field="data"), 0.8, 0)


@pytest.fixture
def sft_env(tiny_llm, tokenizer):
    return SFTEnv(*_split(tiny_llm, "sft"), tokenizer, batch_size=16, seed=0)


@pytest.fixture
def preference_env(tiny_llm, tokenizer):
    return PreferenceEnv(*_split(tiny_llm, "preference"), tokenizer, batch_size=16, seed=0)


@pytest.fixture
def reasoning_env(tiny_llm, tokenizer):
    reward = load_reward_fn(tiny_llm / "reward.py", "reward")
    train, test = _split(tiny_llm, "reasoning")
    return ReasoningEnv(
        train, test, tokenizer, reward, {"user_0": "{question}"}, batch_size=8, seed=0
    )


def _adapter(agent):
    return {k: v.clone() for k, v in agent.actor.state_dict().items()}


def _changed(before, agent):
    return any(not torch.equal(v, agent.actor.state_dict()[k]) for k, v in before.items())


# -- shared base, clones -------------------------------------------------------------------
def test_clones_share_the_base_weights_and_train_independently(tokenizer, base, sft_env):
    agent = _agent(SFT, tokenizer, base, lr=1e-2)
    agent.learn(sft_env.next_batch())
    twin = agent.clone(index=1)
    assert twin.shared is agent.shared and twin.actor.name != agent.actor.name
    base_ptrs = {
        n: p.data_ptr() for n, p in agent.shared.model.named_parameters() if "lora_" not in n
    }
    assert base_ptrs and all(
        base_ptrs[n] == p.data_ptr()
        for n, p in twin.shared.model.named_parameters()
        if "lora_" not in n
    )
    # The clone starts from the adapter and the optimiser state of its parent ...
    for key, value in agent.actor.state_dict().items():
        torch.testing.assert_close(twin.actor.state_dict()[key], value)
    assert twin.optimizer.state_dict()["state"][0]["step"] == 1
    # ... and trains on its own: the parent's adapter does not move.
    before = _adapter(agent)
    twin.learn(sft_env.next_batch())
    assert _changed(before, twin) and not _changed(before, agent)


def test_an_agent_dropped_takes_its_adapter_out_of_the_shared_model(tokenizer, base):
    agent = _agent(SFT, tokenizer, base)
    name = agent.actor.name
    assert name in agent.shared.names()
    shared = agent.shared
    del agent
    assert name not in shared.names()


def test_an_llm_agent_prints_its_base_model(tokenizer, base, tiny_llm):
    given = _agent(SFT, tokenizer, base, index=2)  # a model object: named by its class
    assert repr(given) == (
        f"SFT(model='{type(base).__name__}', steps=0, fitness=[], device='cpu', index=2)"
    )
    path = str(tiny_llm / "model")
    loaded = _agent(SFT, tokenizer, base, pretrained_model_name_or_path=path)
    assert repr(loaded).startswith(f"SFT(model='{path}', steps=0,")


def test_a_peft_model_or_a_non_model_is_refused_as_actor_network(tokenizer, base):
    agent = _agent(SFT, tokenizer, base)
    with pytest.raises(ValueError, match="actor_network: a peft model"):
        SFT(tokenizer=tokenizer, actor_network=agent.shared.model, **QUICK)
    with pytest.raises(ValueError, match="actor_network: expected a transformers"):
        SFT(tokenizer=tokenizer, actor_network=torch.nn.Linear(2, 2), **QUICK)


def test_a_missing_model_directory_names_the_field(tmp_path):
    with pytest.raises(LLMSetupError, match="pretrained_model_name_or_path.*does not exist"):
        SFT(pretrained_model_name_or_path=str(tmp_path / "nowhere"))
    with pytest.raises(ValueError, match="pretrained_model_name_or_path: SFT needs"):
        SFT()


# -- hyperparameter mutation ----------------------------------------------------------------
def test_a_mutated_lr_reaches_the_optimiser(tokenizer, base):
    agent = _agent(SFT, tokenizer, base, lr=1e-3, hp_config={"lr": {"min": 1e-5, "max": 1e-1}})
    name, old, new = agent.mutate_hyperparameter(agent.rng)
    assert name == "lr" and new != old
    assert agent.optimizer.param_groups[0]["lr"] == new


def test_a_mutated_beta_changes_the_loss(tokenizer, base, reasoning_env):
    agent = _agent(
        GRPO, tokenizer, base, lr=0.0, beta=0.5, hp_config={"beta": {"min": 0.01, "max": 1}}
    )
    with torch.no_grad():  # move the adapter off the reference so the KL is not zero
        for param in agent.actor.parameters():
            param.add_(0.05 * torch.randn_like(param))
    prompts = reasoning_env.next_batch()
    completions = agent.get_action(prompts)
    rewards = torch.rand(len(prompts), agent.group_size, generator=torch.Generator().manual_seed(0))
    experience = Experience(completions, rewards)
    first = agent.learn(experience)  # lr 0: the adapter stays where it is
    name, old, new = agent.mutate_hyperparameter(agent.rng)
    assert name == "beta" and agent.beta == new != old
    second = agent.learn(experience)
    assert first["kl"] > 0
    assert second["loss"] - first["loss"] == pytest.approx((new - old) * first["kl"], rel=1e-3)


def test_a_mutated_group_size_samples_that_many_completions(tokenizer, base, reasoning_env):
    agent = _agent(
        GRPO, tokenizer, base, max_output_tokens=3, hp_config={"group_size": {"min": 2, "max": 16}}
    )
    agent.mutate_hyperparameter(agent.rng)
    prompts = reasoning_env.next_batch()
    assert len(agent.get_action(prompts)) == len(prompts) * agent.group_size != len(prompts) * 4


# -- checkpoints and the peft output --------------------------------------------------------
def test_checkpoint_round_trip_restores_adapter_optimiser_and_hyperparameters(
    tokenizer, base, sft_env, tmp_path
):
    agent = _agent(SFT, tokenizer, base, lr=1e-2, use_separate_reference_adapter=True)
    for _ in range(2):
        agent.learn(sft_env.next_batch())
    path = tmp_path / "agent.ckpt"
    agent.save_checkpoint(path)
    assert path.read_bytes().startswith(checkpoints.MAGIC)  # the data-only format, no pickle
    other = _agent(SFT, tokenizer, base, lr=5e-4, use_separate_reference_adapter=True)
    other.load_checkpoint(path)
    assert other.lr == 1e-2 and other.updates == 2
    for attr in ("actor", "reference"):
        saved = getattr(agent, attr).state_dict()
        for key, value in getattr(other, attr).state_dict().items():
            torch.testing.assert_close(value, saved[key])
    exp_avg = agent.optimizer.state_dict()["state"][0]["exp_avg"]
    torch.testing.assert_close(other.optimizer.state_dict()["state"][0]["exp_avg"], exp_avg)
    # Both train on from the same state to the same adapter.
    batch = sft_env.next_batch()
    agent.learn(batch)
    other.learn(batch)
    for key, value in other.actor.state_dict().items():
        torch.testing.assert_close(value, agent.actor.state_dict()[key])


def test_the_spec_builds_its_algorithm_on_the_shared_base_and_resumes(tokenizer, base, tmp_path):
    spec = GRPOSpec(group_size=3, lr=1e-4, gradient_checkpointing=False)
    agent = spec.build_algorithm(tokenizer=tokenizer, index=2, actor_network=base)
    assert isinstance(agent, GRPO) and (agent.group_size, agent.lr, agent.index) == (3, 1e-4, 2)
    assert agent.shared is SharedBase.of(base)
    with torch.no_grad():
        for param in agent.actor.parameters():
            param.add_(0.01)
    agent.save_checkpoint(tmp_path / "agent.ckpt")
    resumed = spec.build_algorithm(
        tokenizer=tokenizer,
        index=1,
        resume_from_checkpoint=str(tmp_path / "agent.ckpt"),
        actor_network=base,
    )
    assert resumed.index == 1 and resumed.shared is agent.shared
    for key, value in resumed.actor.state_dict().items():
        torch.testing.assert_close(value, agent.actor.state_dict()[key])


def test_a_checkpoint_of_another_lora_shape_is_refused(tokenizer, base, tmp_path):
    agent = _agent(SFT, tokenizer, base)
    state = agent.state_dict()
    state["networks"]["actor"]["spec"]["lora_r"] = 4
    with pytest.raises(checkpoints.CheckpointError, match="networks.actor.spec"):
        agent.load_state_dict(state)


def test_the_saved_adapter_loads_with_peft_in_plain_transformers(
    tiny_llm, tokenizer, base, sft_env, tmp_path
):
    agent = _agent(SFT, tokenizer, base, lr=1e-2)
    agent.learn(sft_env.next_batch())
    agent.save_adapter(tmp_path / "adapter")
    assert (tmp_path / "adapter" / "adapter_config.json").is_file()
    fresh = load_causal_lm(tiny_llm / "model")
    loaded = PeftModel.from_pretrained(fresh, str(tmp_path / "adapter")).eval()
    ids = sft_env.next_batch().input_ids
    with torch.no_grad(), agent._policy() as model:
        mine = model(input_ids=ids).logits
    with torch.no_grad():
        theirs = loaded(input_ids=ids).logits
    torch.testing.assert_close(theirs, mine)
    assert load_tokenizer(tmp_path / "adapter").get_vocab() == tokenizer.get_vocab()


# -- field effects ------------------------------------------------------------------------
def test_chunked_logprobs_equal_unchunked(tokenizer, base, sft_env):
    batch = sft_env.next_batch()
    whole = _agent(SFT, tokenizer, base).logprobs(batch.input_ids, batch.attention_mask)
    for kwargs in ({"fused_logprobs_chunk_rows": 3}, {"reduce_memory_peak": True}):
        agent = _agent(SFT, tokenizer, base, **kwargs)
        agent.actor.load_state_dict(agent.actor.state_dict())
        chunked = agent.logprobs(batch.input_ids, batch.attention_mask)
        torch.testing.assert_close(chunked, whole, atol=1e-5, rtol=1e-5)


def _grads_after_one_step(agent, batch):
    agent.lr = 0.0  # keep the adapter, read the gradient the step accumulated
    agent.learn(batch)
    return [p.grad.clone() for p in agent.optimizer.param_groups[0]["params"]]


def test_chunked_loss_equals_unchunked(tokenizer, base, sft_env, preference_env):
    for cls, batch in ((SFT, sft_env.next_batch()), (DPO, preference_env.next_batch())):
        whole = _agent(cls, tokenizer, base, seed=3)
        chunked = _agent(cls, tokenizer, base, seed=3, fused_loss_chunk_rows=5)
        chunked.actor.load_state_dict(whole.actor.state_dict())
        for a, b in zip(
            _grads_after_one_step(whole, batch), _grads_after_one_step(chunked, batch), strict=True
        ):
            torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-4)


def test_grpo_loss_norm_micro_batch_averages_the_chunks_token_means(tokenizer, base, reasoning_env):
    """Two chunks of rows: accumulation_window divides the token sum by all tokens,
    micro_batch averages each chunk's own token mean."""
    window = _agent(GRPO, tokenizer, base, lr=0.0, beta=0.0, max_output_tokens=4,
                    loss_norm="accumulation_window", fused_loss_chunk_rows=16)  # fmt: skip
    micro = _agent(GRPO, tokenizer, base, lr=0.0, beta=0.0, max_output_tokens=4,
                   loss_norm="micro_batch", fused_loss_chunk_rows=16)  # fmt: skip
    prompts = reasoning_env.next_batch()
    completions = window.get_action(prompts)  # 8 prompts x 4 = 32 rows: two chunks
    rewards = torch.arange(32.0).reshape(8, 4) % 3
    adv = window.advantages(rewards)
    mask = completions.loss_mask.float()
    # lr 0 and one epoch: ratio 1, so the per-token loss is -A on each completion token
    per_row = -adv * mask.sum(1)
    tokens = mask.sum(1)
    expected_window = per_row.sum() / tokens.sum()
    expected_micro = (
        per_row[:16].sum() / tokens[:16].sum() + per_row[16:].sum() / tokens[16:].sum()
    ) / 2
    got_window = window.learn(Experience(completions, rewards))["loss"]
    got_micro = micro.learn(Experience(completions, rewards))["loss"]
    assert got_window == pytest.approx(float(expected_window), abs=1e-5)
    assert got_micro == pytest.approx(float(expected_micro), abs=1e-5)


def test_gradient_checkpointing_gives_the_same_gradient(tokenizer, base, sft_env):
    batch = sft_env.next_batch()
    plain = _agent(SFT, tokenizer, base, seed=1)
    checkpointed = _agent(SFT, tokenizer, base, seed=1, gradient_checkpointing=True)
    checkpointed.actor.load_state_dict(plain.actor.state_dict())
    grads = _grads_after_one_step(checkpointed, batch)
    assert checkpointed.shared.base.is_activation_checkpointing
    for a, b in zip(_grads_after_one_step(plain, batch), grads, strict=True):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-4)
    assert not plain.shared.base.is_activation_checkpointing


def test_update_epochs_take_that_many_optimiser_steps(tokenizer, base, sft_env):
    agent = _agent(SFT, tokenizer, base, update_epochs=3)
    agent.learn(sft_env.next_batch())
    assert agent.updates == 3 and agent.optimizer.state_dict()["state"][0]["step"] == 3


def test_max_grad_norm_clips_the_gradient(tokenizer, base, sft_env):
    agent = _agent(SFT, tokenizer, base, max_grad_norm=1e-3)
    _grads_after_one_step(agent, sft_env.next_batch())
    params = agent.optimizer.param_groups[0]["params"]
    norm = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in params]))
    assert norm == pytest.approx(1e-3, rel=1e-3)


def test_the_cosine_schedule_sets_the_learning_rate_of_each_step(tokenizer, base, reasoning_env):
    schedule = {"num_epochs": 4, "warmup_proportion": 0.5}
    agent = _agent(GRPO, tokenizer, base, lr=1e-3, max_output_tokens=3,
                   cosine_lr_schedule_config=schedule)  # fmt: skip
    assert [cosine_factor(s, 4, 0.5) for s in range(5)] == pytest.approx([0.5, 1, 1, 0.5, 0])
    prompts = reasoning_env.next_batch()
    completions = agent.get_action(prompts)
    rewards = torch.arange(32.0).reshape(8, 4) % 2
    seen = []
    for _ in range(3):
        agent.learn(Experience(completions, rewards))
        seen.append(agent.optimizer.param_groups[0]["lr"])
    assert seen == pytest.approx([5e-4, 1e-3, 1e-3])


def test_max_model_len_cuts_sequences_and_bounds_completions(
    tokenizer, base, sft_env, reasoning_env
):
    agent = _agent(SFT, tokenizer, base, max_model_len=6)
    batch = sft_env.next_batch()
    assert batch.input_ids.shape[1] > 6
    cut = agent.clip_length(batch)
    assert cut.input_ids.shape[1] == 6 and cut.loss_mask.shape[1] == 5
    prompts = reasoning_env.next_batch()
    width = prompts.input_ids.shape[1]
    grpo = _agent(GRPO, tokenizer, base, max_model_len=width + 2)
    assert grpo.get_action(prompts).ids.shape[1] <= width + 2
    short = _agent(GRPO, tokenizer, base, max_model_len=width)
    with pytest.raises(ValueError, match="max_model_len: prompts of"):
        short.get_action(prompts)


def test_output_token_bounds_and_seeded_sampling(tokenizer, base, reasoning_env):
    prompts = reasoning_env.next_batch()
    agent = _agent(GRPO, tokenizer, base, min_output_tokens=3, max_output_tokens=3)
    c = agent.get_action(prompts)
    assert c.ids.shape[1] - c.prompt_length == 3 and c.loss_mask.sum(1).min() == 3
    texts = [
        _agent(GRPO, tokenizer, base, max_output_tokens=4).get_action(prompts).texts
        for _ in range(2)
    ]
    assert texts[0] == texts[1]  # same seed, same index: same samples
    other = _agent(GRPO, tokenizer, base, max_output_tokens=4, seed=7).get_action(prompts).texts
    assert other != texts[0]


def test_position_ids_from_the_mask_make_left_padding_harmless(tokenizer, base):
    ids = torch.tensor([[5, 6, 7, 8]])
    padded = torch.tensor([[tokenizer.pad_token_id, tokenizer.pad_token_id, 5, 6, 7, 8]])
    mask = torch.tensor([[0, 0, 1, 1, 1, 1]])
    agent = _agent(SFT, tokenizer, base)
    assert agent._position_ids(mask).tolist() == [[0, 0, 0, 1, 2, 3]]
    plain = agent.logprobs(ids, torch.ones_like(ids))
    torch.testing.assert_close(agent.logprobs(padded, mask)[:, 2:], plain, atol=1e-5, rtol=1e-5)
    # Off, the model gets no position ids (it numbers the columns itself).
    assert _agent(SFT, tokenizer, base, calc_position_embeddings=False)._position_ids(mask) is None


def test_lora_target_scope_restricts_the_adapted_modules(tokenizer, base):
    scoped = _agent(SFT, tokenizer, base, lora_target_scope="model.layers.1")
    names = {k for k, _ in scoped.actor.named_parameters()}
    assert names and all(".layers.1." in n for n in names)
    whole = {k for k, _ in _agent(SFT, tokenizer, base).actor.named_parameters()}
    assert any(".layers.0." in n for n in whole)
    with pytest.raises(ValueError, match="lora_target_scope: no module"):
        _agent(SFT, tokenizer, base, lora_target_scope="model.nothing")


def test_the_separate_reference_adapter_stays_until_updated(tokenizer, base, sft_env):
    agent = _agent(SFT, tokenizer, base, lr=1e-2, use_separate_reference_adapter=True)
    batch = sft_env.next_batch()
    before = agent.logprobs(batch.input_ids, batch.attention_mask, reference=True)
    agent.learn(batch)
    after = agent.logprobs(batch.input_ids, batch.attention_mask, reference=True)
    torch.testing.assert_close(after, before)
    agent.update_reference_policy()
    policy = agent.logprobs(batch.input_ids, batch.attention_mask)
    torch.testing.assert_close(
        agent.logprobs(batch.input_ids, batch.attention_mask, reference=True), policy
    )
    plain = _agent(SFT, tokenizer, base)
    with pytest.raises(ValueError, match="use_separate_reference_adapter"):
        plain.update_reference_policy()


def test_filter_zero_adv_drops_groups_that_scored_alike(tokenizer, base, reasoning_env):
    agent = _agent(GRPO, tokenizer, base, lr=1e-2, max_output_tokens=3, filter_zero_adv=True)
    prompts = reasoning_env.next_batch()
    completions = agent.get_action(prompts)
    before = _adapter(agent)
    metrics = agent.learn(Experience(completions, torch.ones(len(prompts), 4)))
    assert metrics["loss"] == 0.0 and agent.updates == 0 and not _changed(before, agent)
    agent.learn(Experience(completions, torch.arange(32.0).reshape(8, 4) % 2))
    assert agent.updates == 1 and _changed(before, agent)


# -- refusals -------------------------------------------------------------------------------
REFUSED = {
    "use_vllm": (True, "use_vllm: generation with vLLM is not supported"),
    "vllm_config": ({"max_num_seqs": 4}, "vllm_config: only takes effect with use_vllm"),
    "use_liger_loss": (True, "use_liger_loss: the fused Liger kernel loss"),
    "quantization": ("4bit", "quantization: quantised base models are not supported"),
    "use_sequence_packing": (True, "use_sequence_packing: packing"),
    "activation_offload": (True, "activation_offload: needs a CUDA device"),
    "attn_implementation": ("fast", "attn_implementation: unknown 'fast'"),
    "vllm_importance_sampling_cap": (3.0, "vllm_importance_sampling_cap: only takes effect"),
}


@pytest.mark.parametrize("field", sorted(REFUSED))
def test_fields_that_cannot_work_here_are_refused_before_anything_is_built(field, tokenizer):
    value, message = REFUSED[field]
    # (a spec with use_vllm must give a vllm_config)
    spec = GRPOSpec(
        group_size=2,
        **{"vllm_config": {}, **{field: value}} if field == "use_vllm" else {field: value},
    )
    assert any(m.startswith(message) for m in refusals(spec)), refusals(spec)
    with pytest.raises(ValueError, match=message):
        GRPO(group_size=2, tokenizer=tokenizer, actor_network=None, **{field: value})


def test_a_default_spec_has_no_refusal():
    assert refusals(GRPOSpec(group_size=2)) == []


def test_bad_values_name_their_field(tokenizer, base):
    for kwargs, message in (
        ({"adv_norm": "max"}, r"GRPO\(adv_norm='max'\): must be one of"),
        ({"min_output_tokens": 9, "max_output_tokens": 3}, "min_output_tokens must lie"),
        (
            {"importance_sampling_level": "word"},
            r"GRPO\(importance_sampling_level='word'\): must be one of",
        ),
        ({"group_size": 0}, r"GRPO\(group_size=0\): must be >= 1"),
        ({"lora_config": {"lora_r": 0}}, "lora_config:"),
    ):
        with pytest.raises(ValueError, match=message):
            _agent(GRPO, tokenizer, base, **kwargs)


def test_helpers_chunk_rows_and_schedule():
    assert row_chunks(5, 2) == [slice(0, 2), slice(2, 4), slice(4, 5)]
    assert row_chunks(5, None) == [slice(0, 5)]
    assert cosine_factor(0, 10, 0.0) == 1.0 and cosine_factor(10, 10, 0.0) == pytest.approx(0.0)


# -- learning outcomes (the figures) ------------------------------------------------
def test_grpo_raises_the_mean_test_reward_by_at_least_0_4(tokenizer, base, reasoning_env):
    agent = _agent(GRPO, tokenizer, base, group_size=8, lr=3e-3, beta=0.0,
                   temperature=1.0, max_output_tokens=4)  # fmt: skip
    before = agent.test(reasoning_env)
    for _ in range(40):
        prompts = reasoning_env.next_batch()
        completions = agent.get_action(prompts)
        agent.learn(Experience(completions, reasoning_env.rewards(prompts, completions)))
    after = agent.test(reasoning_env)
    assert after - before >= 0.4, (before, after)
    assert agent.fitness == [before, after]


#: The GRPO kin's settings beyond GRPO's test above: two epochs per batch, so the second
#: step is off-policy and the ratio (per sequence for GSPO, a clipped weight for CISPO)
#: is not 1; one epoch would give GRPO's gradient exactly.
KIN = {
    GSPO: {"group_size": 8, "update_epochs": 2, "importance_sampling_level": "trajectory"},
    CISPO: {"group_size": 8, "update_epochs": 2, "clip_coef": [0.8, 2.0]},
    LLMREINFORCE: {},
}


@pytest.mark.parametrize("cls", list(KIN), ids=lambda c: c.__name__)
def test_grpos_kin_raise_the_mean_test_reward_by_at_least_0_4(tokenizer, base, reasoning_env, cls):
    agent = _agent(cls, tokenizer, base, lr=3e-3, beta=0.0, temperature=1.0,
                   max_output_tokens=4, **KIN[cls])  # fmt: skip
    before = agent.test(reasoning_env)
    steps = 30 if KIN[cls] else 40
    for _ in range(steps):
        prompts = reasoning_env.next_batch()
        completions = agent.get_action(prompts)
        metrics = agent.learn(Experience(completions, reasoning_env.rewards(prompts, completions)))
    after = agent.test(reasoning_env)
    assert after - before >= 0.4, (before, after)
    assert set(metrics) == set(cls.learn_metrics)


def test_the_llm_constructors_are_bound_to_their_specs(tokenizer, base):
    # The signature shows the schema's defaults (GRPO's group_size it requires).
    params = inspect.signature(GRPO).parameters
    assert params["lr"].default == GRPOSpec.model_fields["lr"].default
    assert params["seed"].default == 42
    assert params["group_size"].default is inspect.Parameter.empty
    assert inspect.signature(LLMPPO).parameters["lr_actor"].default == 5e-06
    assert "lr" not in inspect.signature(LLMPPO).parameters  # the actor's, derived
    with pytest.raises(TypeError, match="unexpected keyword argument 'learning_rate'"):
        _agent(GRPO, tokenizer, base, learning_rate=1e-3)
    with pytest.raises(TypeError, match="missing required keyword argument: 'group_size'"):
        GRPO(tokenizer=tokenizer, actor_network=base)
    # The spec's seed is the agent's seed: the sampling stream's and the checkpoint's.
    agent = _agent(DPO, tokenizer, base, seed=7)
    assert agent.seed == 7 and "seed" in DPO.init_args
    assert _agent(SFT, tokenizer, base).seed == 42
    # A null lr_critic is the actor's rate; CISPO's clip may be a pair.
    assert _agent(LLMPPO, tokenizer, base, lr_actor=1e-4, lr_critic=None).lr_critic == 1e-4
    assert _agent(CISPO, tokenizer, base, clip_coef=[0.1, 2.0]).clip_coef == [0.1, 2.0]


def test_gspo_refuses_a_token_level_ratio(tokenizer, base):
    # GSPO's schema allows no token level (its ratio is one per sequence).
    match = r"GSPO\(importance_sampling_level='token'\): must be one of 'turn', 'trajectory'"
    with pytest.raises(ValueError, match=match):
        _agent(GSPO, tokenizer, base, importance_sampling_level="token")


def test_cispo_takes_a_coefficient_or_a_pair_of_bounds(tokenizer, base):
    assert _agent(CISPO, tokenizer, base, clip_coef=[0.5, 3.0]).clip_coef == [0.5, 3.0]
    assert _agent(CISPO, tokenizer, base, clip_coef=1.5).clip_coef == 1.5  # no upper bound
    for bad, message in (([2.0, 0.8], "clip_coef: the bounds"), ([0.1], "clip_coef must be a"),
                         (-0.1, "clip_coef must be non-negative")):  # fmt: skip
        with pytest.raises(ValueError, match=message):
            _agent(CISPO, tokenizer, base, clip_coef=bad)


def test_llm_reinforce_samples_one_completion_per_prompt(tokenizer, base, reasoning_env):
    agent = _agent(LLMREINFORCE, tokenizer, base, max_output_tokens=3)
    prompts = reasoning_env.next_batch()
    assert len(agent.get_action(prompts)) == len(prompts)


def test_llm_reinforces_action_granularity_alias_overrides_with_a_warning(tokenizer, base):
    with pytest.warns(DeprecationWarning, match="action_granularity is a deprecated alias"):
        agent = _agent(LLMREINFORCE, tokenizer, base, action_granularity="turn")
    one_turn = torch.ones(3, dtype=torch.long)
    assert agent.granularity(one_turn) == "turn"
    assert _agent(LLMREINFORCE, tokenizer, base).granularity(one_turn) == "token"  # auto


def test_dpo_prefers_the_chosen_response_on_90_percent_of_held_out_pairs(
    tokenizer, base, preference_env
):
    agent = _agent(DPO, tokenizer, base, lr=3e-3, beta=0.1)
    for _ in range(30):
        agent.learn(preference_env.next_batch())
    assert agent.test(preference_env) >= 0.9


def test_sft_halves_held_out_perplexity(tokenizer, base, sft_env):
    agent = _agent(SFT, tokenizer, base, lr=3e-3)
    before = agent.perplexity(sft_env)
    for _ in range(60):
        metrics = agent.learn(sft_env.next_batch())
    after = agent.perplexity(sft_env)
    assert after <= before / 2, (before, after)
    assert agent.test(sft_env) == pytest.approx(1 / after)
    assert math.isfinite(metrics["perplexity"]) and metrics["loss"] > 0


# -- LLM-PPO -------------------------------------------------------------------------------
def _ppo(tokenizer, base, **kwargs):
    return _agent(LLMPPO, tokenizer, base, **kwargs)


def test_llm_ppo_raises_the_mean_test_reward_by_at_least_0_4(tokenizer, base, reasoning_env):
    agent = _ppo(tokenizer, base, lr_actor=3e-3, lr_critic=3e-3, beta=0.0, temperature=1.0,
                 max_output_tokens=4)  # fmt: skip
    before = agent.test(reasoning_env)
    for _ in range(30):
        prompts = reasoning_env.next_batch()
        completions = agent.get_action(prompts)
        metrics = agent.learn(Experience(completions, reasoning_env.rewards(prompts, completions)))
    after = agent.test(reasoning_env)
    assert after - before >= 0.4, (before, after)
    assert set(metrics) == set(LLMPPO.learn_metrics)


def test_llm_ppos_value_head_fits_the_returns_of_a_fixed_batch(tokenizer, base, reasoning_env):
    # The actor does not move (lr_actor 0); with gamma = lambda = 1 the returns are the
    # Monte-Carlo ones whatever the values, so the critic has a fixed target to fit.
    agent = _ppo(tokenizer, base, lr_actor=0.0, lr_critic=1e-2, beta=0.0, gamma=1.0,
                 gae_lambda=1.0, clip_coef=1.0, max_output_tokens=4, min_output_tokens=4)  # fmt: skip
    prompts = reasoning_env.next_batch()
    completions = agent.get_action(prompts)
    rewards = reasoning_env.rewards(prompts, completions) + torch.arange(len(prompts))[:, None] / 8
    experience = Experience(completions, rewards)
    mask = completions.loss_mask.float()
    returns = mask.flip(1).cumsum(1).flip(1) * rewards.reshape(-1, 1) * mask  # R * tokens left

    def value_error():
        values = agent.values(completions.ids, completions.attention_mask)
        return float(((values - returns) ** 2 * mask).sum() / mask.sum())

    variance = float(returns[mask.bool()].var())
    before = value_error()
    for _ in range(60):
        agent.learn(experience)
    after = value_error()
    assert after < 0.15 * variance < before, (before, after, variance)


def _two_turn_experience(agent, prompts):
    """Each completion of 6 tokens cut into turn 0 (2 tokens), one feedback token (not an
    action) and turn 1 (3 tokens); rows 0 and 1 stop after turn 0."""
    completions = agent.get_action(prompts)
    p = completions.prompt_length
    turn_ids = torch.full_like(completions.loss_mask, -1, dtype=torch.long)
    turn_ids[:, p - 1 : p + 1] = 0
    turn_ids[:, p + 2 : p + 5] = 1
    turn_ids[:2, p + 2 :] = -1
    completions.turn_ids = turn_ids
    completions.loss_mask = turn_ids >= 0
    turn_rewards = torch.tensor([[1.0, 0.0], [0.0, 0.0]]).repeat(len(prompts) // 2, 1)
    turn_rewards[2:, 1] = torch.linspace(0.0, 1.0, len(prompts) - 2)
    turn_rewards[:2, 1] = 0.0
    return Experience(completions, turn_rewards.sum(1), turn_rewards)


def test_llm_ppo_learns_multi_turn_experience_per_turn(tokenizer, base, reasoning_env):
    agent = _ppo(tokenizer, base, lr_actor=0.0, lr_critic=0.0, beta=0.0, gamma=0.9,
                 gae_lambda=0.8, max_output_tokens=6, min_output_tokens=6)  # fmt: skip
    experience = _two_turn_experience(agent, reasoning_env.next_batch())
    c = experience.completions
    turns = L.turn_values(torch.zeros(c.loss_mask.shape), c.turn_ids, 2)[1].sum(1)
    assert agent.granularity(turns) == "turn" and agent.ratio_level("turn") == "turn"
    metrics = agent.learn(experience)
    # At rate 0 the values stay the old ones: the value loss is vf_coef / 2 times the
    # mean over played turns of (G - V)^2, G from turn GAE on the last tokens' values.
    values = agent.values(c.ids, c.attention_mask)
    turn_v, played = L.turn_values(values, c.turn_ids, 2)
    _, returns = L.turn_gae(experience.turn_rewards, turn_v, played, 0.9, 0.8)
    expected = 0.5 * 0.5 * float(((returns - turn_v) ** 2 * played).sum() / played.sum())
    assert metrics["vf_loss"] == pytest.approx(expected, rel=1e-4)
    # Ratios are 1 and the advantages whitened over the played turns: the mean is 0.
    assert metrics["pg_loss"] == pytest.approx(0.0, abs=1e-5)
    assert metrics["clip_fraction"] == 0.0
    # The same completions as one turn each: token granularity.
    single = torch.ones(len(c), dtype=torch.long)
    assert agent.granularity(single) == "token"
    assert _ppo(tokenizer, base, turn_level_clip=False).ratio_level("turn") == "token"


def test_llm_ppos_checkpoint_holds_the_critic_and_both_optimisers(
    tiny_llm, tokenizer, base, reasoning_env, tmp_path
):
    agent = _ppo(tokenizer, base, lr_actor=1e-2, lr_critic=2e-2, max_output_tokens=3)
    prompts = reasoning_env.next_batch()
    completions = agent.get_action(prompts)
    agent.learn(Experience(completions, reasoning_env.rewards(prompts, completions)))
    agent.save_checkpoint(tmp_path / "agent.ckpt")
    other = _ppo(tokenizer, base, lr_actor=1e-3, lr_critic=None)
    assert other.lr_critic == 1e-3  # null: the actor's rate
    other.load_checkpoint(tmp_path / "agent.ckpt")
    assert (other.lr_actor, other.lr_critic, other.updates) == (1e-2, 2e-2, 1)
    assert set(agent.state_dict()["networks"]) == {"actor", "critic"}
    saved = agent.critic.state_dict()
    assert any(k.startswith("head.") for k in saved) and any(
        k.startswith("adapter.") for k in saved
    )
    for key, value in other.critic.state_dict().items():
        torch.testing.assert_close(value, saved[key])
    for attr in ("optimizer", "critic_optimizer"):
        mine, theirs = (getattr(a, attr).state_dict() for a in (agent, other))
        torch.testing.assert_close(theirs["state"][0]["exp_avg"], mine["state"][0]["exp_avg"])
        assert theirs["param_groups"][0]["lr"] == mine["param_groups"][0]["lr"]
    # The saved adapter is the actor's alone, as peft loads it.
    agent.save_adapter(tmp_path / "adapter")
    loaded = PeftModel.from_pretrained(
        load_causal_lm(tiny_llm / "model"), str(tmp_path / "adapter")
    )
    with torch.no_grad(), agent._policy() as model:
        mine = model(input_ids=prompts.input_ids).logits
        theirs = loaded.eval()(input_ids=prompts.input_ids).logits
    torch.testing.assert_close(theirs, mine)


def test_llm_ppos_mutated_learning_rates_reach_their_optimisers(tokenizer, base):
    ranges = {"lr_actor": {"min": 1e-5, "max": 1e-1}, "lr_critic": {"min": 1e-5, "max": 1e-1}}
    agent = _ppo(tokenizer, base, lr_actor=1e-3, lr_critic=1e-3, hp_config=ranges)
    seen = set()
    for _ in range(8):
        name, old, new = agent.mutate_hyperparameter(agent.rng)
        seen.add(name)
        attr = {"lr_actor": "optimizer", "lr_critic": "critic_optimizer"}[name]
        assert getattr(agent, attr).param_groups[0]["lr"] == new != old
    assert seen == set(ranges)
    clone = agent.clone(index=1)
    assert clone.critic_optimizer.param_groups[0]["lr"] == agent.lr_critic


def test_the_llm_ppo_spec_builds_its_algorithm(tokenizer, base):
    spec = LLMPPOSpec(lr_actor=1e-4, lr_critic=None, gradient_checkpointing=False)
    agent = spec.build_algorithm(tokenizer=tokenizer, index=0, actor_network=base)
    assert isinstance(agent, LLMPPO) and (agent.lr_actor, agent.lr_critic) == (1e-4, 1e-4)
    assert agent.samples_per_prompt == 1


def test_llm_ppos_chunked_loss_equals_unchunked_for_actor_and_critic(
    tokenizer, base, reasoning_env
):
    # Each of the three terms is a mean over its own units of the whole batch, whatever
    # the rows per chunk; both optimisers' gradients agree (rates 0: nothing moves).
    kwargs = {"lr_actor": 0.0, "lr_critic": 0.0, "beta": 0.1, "seed": 3, "max_output_tokens": 4}
    whole = _ppo(tokenizer, base, **kwargs)
    chunked = _ppo(tokenizer, base, fused_loss_chunk_rows=3, **kwargs)
    chunked.critic.load_state_dict(whole.critic.state_dict())
    with torch.no_grad():  # off the reference, so the KL term has a gradient
        for param in whole.actor.parameters():
            param.add_(0.05 * torch.randn_like(param))
    chunked.actor.load_state_dict(whole.actor.state_dict())
    prompts = reasoning_env.next_batch()
    completions = whole.get_action(prompts)
    experience = Experience(completions, reasoning_env.rewards(prompts, completions))
    metrics = [agent.learn(experience) for agent in (whole, chunked)]
    assert metrics[0] == pytest.approx(metrics[1], rel=1e-4, abs=1e-6)
    for attr in ("optimizer", "critic_optimizer"):
        grads = [
            [p.grad for p in getattr(agent, attr).param_groups[0]["params"]]
            for agent in (whole, chunked)
        ]
        assert any(g.abs().max() > 0 for g in grads[0])
        for a, b in zip(*grads, strict=True):
            torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-4)
