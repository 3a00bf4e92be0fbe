"""What this project refuses of AgileRL's own manifests (``tests/agilerl_manifests``),
shared by the manifest, corpus-training and multi-agent tests."""

#: Corpus manifests we refuse, with the reason the error must give. Everything else in
#: the corpus must validate; AgileRL's old spellings of keys (``replay_buffer.memory_size``)
#: with a warning (agilerl/models/legacy.py). (docs/concepts/manifests.md: "Compatibility
#: with AgileRL's manifests".)
#: Multi-turn LLM environments named by a GEM id (env_name) validate, but GEM needs the
#: gem-llm package and its assets: a run trains a Python class named by entrypoint only.
GEM = "is a GEM environment, which needs the gem-llm package"
LATER_FIELDS = "algorithm.chunk_rows: unknown key"
REFUSED = {
    # fields of a later AgileRL than the seeds' LLMAlgorithmSpec (which has
    # fused_logprobs_chunk_rows and fused_loss_chunk_rows), for multi-turn runs on CUDA
    "configs/llm_finetuning/cispo_gemma4_group5.yaml": LATER_FIELDS,
    "configs/llm_finetuning/cispo_quant_bench.yaml": LATER_FIELDS,
    "configs/llm_finetuning/cispo_quant_bench_qwen.yaml": LATER_FIELDS,
}

#: The corpus manifests of image observations (channels last), trained by
#: tests/families/test_channels_first.py rather than beside the others of their algorithm.
IMAGES = {
    "configs/ppo/ppo_image.yaml",
    "tests/ppo_cnn.yaml",
    "tests/ippo_cnn.yaml",
    "configs/multi_agent/ippo_pong.yaml",
}

#: Corpus manifests that validate (AgileRL's schema, read as theirs) but that every run
#: refuses before its first step (``agilerl validate`` says so), with the reason.
RUN_REFUSED = {
    "configs/llm_finetuning/grpo_multiturn.yaml": GEM,
    "configs/llm_finetuning/reinforce_quant_bench.yaml": GEM,
}
