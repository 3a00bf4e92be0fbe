"""Offline RL: datasets of transitions in local HDF5 files (:mod:`.datasets`), recording
them from an environment (:mod:`.collect`) and the trainer's set-up of an offline run
(:mod:`.family`). Nothing here downloads anything."""
