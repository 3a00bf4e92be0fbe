"""LLM fine-tuning support: local model and tokenizer loading, datasets as environments,
the tiny model builder for examples and tests, and the batch types the LLM algorithms and
the LLM training loop exchange (:mod:`agilerl.llm.batches`).

Everything here works offline: models, tokenizers and datasets come from local paths only.
"""
