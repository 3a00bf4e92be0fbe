"""Experience storage: the replay buffers of off-policy algorithms (uniform
``replay_buffer``, ``prioritized_replay`` on a ``sum_tree``, ``n_step_replay``) and the
rollout buffer of on-policy ones."""
