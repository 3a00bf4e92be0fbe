"""What the PPO-loss cohort tests share (PPO agents, IPPO teams): a small network and
each member its own hyperparameters."""

#: A network of 16-wide layers.
NET = {
    "latent_dim": 16,
    "encoder_config": {"hidden_size": [16]},
    "head_config": {"hidden_size": [16]},
}
#: Each member its own hyperparameters (member 2 unclipped gradients, one more epoch).
OWN = [
    {"lr": 1e-3, "gamma": 0.99, "gae_lambda": 0.95, "clip_coef": 0.2, "ent_coef": 0.01,
     "vf_coef": 0.5, "max_grad_norm": 0.5},
    {"lr": 3e-3, "gamma": 0.9, "gae_lambda": 0.8, "clip_coef": 0.1, "ent_coef": 0.05,
     "vf_coef": 1.0, "max_grad_norm": 0.1},
    {"lr": 5e-4, "gamma": 0.95, "gae_lambda": 1.0, "clip_coef": 0.3, "ent_coef": 0.0,
     "vf_coef": 0.25, "max_grad_norm": 0.0, "update_epochs": 3},
]  # fmt: skip
