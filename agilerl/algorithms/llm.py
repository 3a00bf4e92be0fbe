"""``LLMAlgorithm``: the contract of the LLM fine-tuning family.

An LLM agent is a pretrained ``transformers`` causal language model with ``peft``
adapters. Only the adapters train and evolve: clones share the frozen base model, and
there is no architecture, activation or weight-noise mutation (a mutation of those kinds
changes nothing and says so); hyperparameters (learning rate, ``beta``, group size, ...)
mutate as every family's do. Everything else comes from
:class:`~agilerl.algorithms.evolvable.EvolvableAlgorithm`.

The algorithms of the family (GRPO, DPO, SFT) fill in the methods marked "to implement";
the shapes below are the contract the LLM training loop uses.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from agilerl.algorithms.evolvable import EvolvableAlgorithm


class LLMAlgorithm(EvolvableAlgorithm):
    """Base of LLM fine-tuning algorithms (see the module docstring)."""

    # -- no architecture mutation ----------------------------------------------------------
    def architecture_mutations(self, new_layer: bool | None = None) -> list[str]:
        """None: a pretrained model's architecture is fixed."""
        return []

    def mutate_architecture(self, name: str, seed: int) -> dict[str, Any]:
        raise ValueError(f"{self.name}: a pretrained model has no architecture mutation {name!r}")

    def mutate_activation(self, rng: np.random.Generator) -> dict[str, Any]:
        """Nothing: a pretrained model's activations are fixed."""
        return {}

    def mutate_parameters(self, rng: np.random.Generator, mutation_sd: float) -> int:
        """Nothing: noise on a fine-tuned adapter's weights would undo its training."""
        return 0

    # -- to implement (the LLM training loop calls these) ---------------------------------
    def get_action(self, prompts: Any, training: bool = True) -> Any:
        """Completions (token ids and masks) for a batch of tokenised prompts; sampled
        when ``training``, greedy otherwise."""
        raise NotImplementedError

    def learn(self, experiences: Any) -> dict[str, float]:
        """One update of the adapters on a batch (completions with rewards, preference
        pairs or supervised targets); returns :attr:`learn_metrics`."""
        raise NotImplementedError

    def test(self, env: Any, loop: int = 1) -> float:
        """Mean reward on the environment's test split; appended to ``fitness``."""
        raise NotImplementedError

    def save_adapter(self, path: Any) -> None:
        """Write the adapter in the form peft / the Hugging Face ecosystem loads."""
        raise NotImplementedError
