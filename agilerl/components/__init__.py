"""Experience storage: the replay buffer (off-policy) and the rollout buffer (on-policy)."""
