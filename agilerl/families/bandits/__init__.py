"""Contextual bandits from labelled tables (:class:`BanditEnv`), trained by NeuralUCB
and NeuralTS (:mod:`agilerl.algorithms.neural_bandit`) through
:func:`agilerl.families.bandits.loop.train_bandits`."""

from agilerl.families.bandits.env import BanditEnv, BanditTableError, disjoint_contexts, load_tables

__all__ = ["BanditEnv", "BanditTableError", "disjoint_contexts", "load_tables"]
