"""What this project refuses of AgileRL's own manifests (``tests/agilerl_manifests``),
shared by the manifest, corpus-training and multi-agent tests."""

#: Corpus manifests we refuse, with the reason the error must give. Everything else in
#: the corpus must validate. (docs/concepts/manifests.md: "Compatibility with AgileRL's manifests".)
RENAMED_MEMORY = "replay_buffer.memory_size: unknown key (renamed: use 'max_size')"
MINARI = "environment.minari_dataset_id: unknown key"
#: Multi-turn LLM environments (GEM games) are not implemented yet.
MULTI_TURN = "environment.env_type: Input should be 'reasoning'"
REFUSED = {
    "configs/cqn.yaml": MINARI,
    "configs/cqn_mfpbt.yaml": MINARI,
    "configs/llm_finetuning/cispo_gemma4_group5.yaml": MULTI_TURN,
    "configs/llm_finetuning/cispo_quant_bench.yaml": MULTI_TURN,
    "configs/llm_finetuning/cispo_quant_bench_qwen.yaml": MULTI_TURN,
    "configs/llm_finetuning/ppo_llm.yaml": "algorithm.name: unknown algorithm",
    "configs/llm_finetuning/ppo_llm_quant_bench.yaml": "algorithm.name: unknown algorithm",
    "configs/llm_finetuning/reinforce_quant_bench.yaml": MULTI_TURN,
    "configs/llm_finetuning/grpo_multiturn.yaml": MULTI_TURN,
    "tests/cqn.yaml": MINARI,
    "tests/ddpg.yaml": RENAMED_MEMORY,
    "tests/ddpg_simba.yaml": RENAMED_MEMORY,
    "tests/dqn.yaml": "tournament_selection: unknown key (renamed: use 'selection_strategy')",
    "tests/maddpg.yaml": RENAMED_MEMORY,
    "tests/matd3.yaml": RENAMED_MEMORY,
    "tests/neural_ts.yaml": RENAMED_MEMORY,
    "tests/neural_ucb.yaml": RENAMED_MEMORY,
    "tests/rainbow_dqn.yaml": RENAMED_MEMORY,
    "tests/td3.yaml": RENAMED_MEMORY,
}
