"""The base classes of the algorithm families: :class:`~.evolvable.EvolvableAlgorithm`
(hyperparameters, declared networks and optimisers, clone, save and load), and below it
:class:`~.rl_algorithm.RLAlgorithm` (single-agent), :class:`~.multi_agent.MultiAgentRLAlgorithm`
and :class:`~.llm.LLMAlgorithm`; :mod:`.protocols` types what the generation loop needs of
an agent."""
