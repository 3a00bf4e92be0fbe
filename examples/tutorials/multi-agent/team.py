"""Multi-agent from Python: a PettingZoo environment factory straight into LocalTrainer,
then the trained team acting on one observation per agent.

Agents whose ids share a prefix form a group with one set of networks (``seer_0`` ->
``seer``); the table and history report each group's share of the team's return.
"""

from agilerl import LocalTrainer
from agilerl.models import MADDPGSpec
from agilerl.testing.cooperative import cue_game

trainer = LocalTrainer(
    MADDPGSpec(batch_size=64, learn_step=1, lr_actor=1e-3, lr_critic=1e-3),
    {"num_envs": 4, "sync": True, "config": {"num_actions": 2, "horizon": 4}},
    {"max_steps": 800, "evo_steps": 400, "pop_size": 2, "eval_loop": 2, "seed": 0},
    env=cue_game,  # a factory: called with environment.config, once per copy
    replay_buffer={"max_size": 10_000},
    network={
        "latent_dim": 32,
        "encoder_config": {"hidden_size": [32]},
        "head_config": {"hidden_size": [32]},
    },
)
trainer.train(verbose=False)
best = trainer.best_agent  # the best team ever evaluated (best 7, random 2)
print(best)
for generation in trainer.state.history:
    for a in generation["agents"]:
        groups = {k: v for k, v in a["metrics"].items() if k.startswith("fitness/")}
        print(f"generation {generation['generation']} team {a['index']}: {a['fitness']}", groups)

# One step of one game: a dict of observations in, a dict of actions out.
env = cue_game(num_actions=2, horizon=4)
observations, infos = env.reset(seed=3)
actions = best.predict(observations)  # no SB3 counterpart: the dict alone
print("observations", observations, "actions", actions)
