"""Test helpers that ship with the library: :mod:`agilerl.testing.probe_envs`."""
