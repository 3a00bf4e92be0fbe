"""Behaviour of the generated ``ReplayBufferSpec``: the buffers it describes.

The buffers are the engine's (torch): they are built by the family of the algorithm
(:meth:`agilerl.families.base.Family.replay_memory`), looked up by name, so the spec
layer imports no engine module and a run and these methods build the same buffers.
"""

from __future__ import annotations

from typing import Any

from agilerl.models.base import AlgorithmBase, SpecBase, engine_attribute


class ReplayBufferBase(SpecBase):
    """Behaviour of ``ReplayBufferSpec`` (AgileRL's ``init_buffer`` and
    ``init_n_step_buffer``)."""

    def _memory(self, algo_spec: Any, device: Any) -> Any:
        if not isinstance(algo_spec, AlgorithmBase):
            raise TypeError(
                f"algo_spec: expected an algorithm spec instance (e.g. DQNSpec()), "
                f"got {algo_spec!r}"
            )
        family_for = engine_attribute(
            "agilerl.families",
            "family_for",
            "replay buffers are built by the torch engine (agilerl.families), which this "
            "installation lacks",
        )
        return family_for(algo_spec).replay_memory(self, algo_spec, device)

    def init_buffer(self, algo_spec: Any, device: Any = "cpu") -> Any:
        """The main replay buffer this section describes for ``algo_spec``, empty, as a
        run of it makes it: uniform, or prioritised with ``per_buffer`` (RainbowDQN);
        a multi-agent team's, a bandit's memory of pulls, an offline dataset's. None
        for an algorithm that keeps no replay buffer (on-policy and LLM ones).

        A combination the algorithm cannot use (``per_buffer`` or ``n_step_buffer`` for
        an algorithm that does not learn from it, an ``n_step`` other than the
        algorithm's) is a ValueError naming the key.
        """
        return self._memory(algo_spec, device).replay

    def init_n_step_buffer(self, algo_spec: Any, device: Any = "cpu") -> Any:
        """The n-step buffer filled beside the main one (``n_step_buffer``; RainbowDQN,
        whose ``n_step`` it must equal), empty; None without ``n_step_buffer``. The main
        buffer is :meth:`init_buffer`'s either way (AgileRL makes an n-step buffer the
        main one when ``per_buffer`` is off: docs/differences.md)."""
        return self._memory(algo_spec, device).n_step
