"""LLM fine-tuning support: model and tokenizer loading, datasets as environments,
the tiny model builder for examples and tests, and the batch types the LLM algorithms and
the LLM training loop exchange (:mod:`agilerl.llm.batches`).

Models, tokenizers and datasets come from local paths or Hugging Face hub ids
(:mod:`agilerl.llm.hub`: which is which, the offline settings and the caches honoured).
"""
