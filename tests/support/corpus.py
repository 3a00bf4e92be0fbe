"""What this project refuses of AgileRL's own manifests (``tests/agilerl_manifests``),
shared by the manifest, corpus-training and multi-agent tests."""

#: Corpus manifests we refuse, with the reason the error must give. Everything else in
#: the corpus must validate; AgileRL's old spellings of keys (``replay_buffer.memory_size``)
#: with a warning (agilerl/models/legacy.py). (docs/concepts/manifests.md: "Compatibility
#: with AgileRL's manifests".)
MINARI = "environment.minari_dataset_id: unknown key"
REFUSED = {
    "configs/cqn.yaml": MINARI,
    "configs/cqn_mfpbt.yaml": MINARI,
    "configs/llm_finetuning/cispo.yaml": "algorithm.name: unknown algorithm",
    "configs/llm_finetuning/cispo_gemma4_group5.yaml": "algorithm.name: unknown algorithm",
    "configs/llm_finetuning/cispo_quant_bench.yaml": "algorithm.name: unknown algorithm",
    "configs/llm_finetuning/cispo_quant_bench_qwen.yaml": "algorithm.name: unknown algorithm",
    "configs/llm_finetuning/gspo.yaml": "algorithm.name: unknown algorithm (did you mean 'GRPO'?)",
    "configs/llm_finetuning/ppo_llm.yaml": "algorithm.name: unknown algorithm",
    "configs/llm_finetuning/ppo_llm_quant_bench.yaml": "algorithm.name: unknown algorithm",
    "configs/llm_finetuning/reinforce_llm.yaml": "algorithm.name: unknown algorithm",
    "configs/llm_finetuning/reinforce_quant_bench.yaml": "algorithm.name: unknown algorithm",
    "configs/llm_finetuning/grpo_multiturn.yaml": "environment.env_type: Input should be 'reasoning'",
    "tests/cqn.yaml": MINARI,
}
