"""The environment side of multi-agent training: PettingZoo parallel environments built
from a :class:`~agilerl.models.env.PzEnvSpec` (:mod:`.envs`), vectorised over
``num_envs`` copies (:mod:`.vector`), and the replay and rollout storage of the
multi-agent loops (:mod:`.buffers`). Everything per agent is a dict keyed by agent id
(strings inside the engine)."""
