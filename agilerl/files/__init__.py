"""The files the project reads and writes: every write atomic (:mod:`.atomic`), the
checkpoint format, data only and verified (:mod:`.checkpoints`), YAML/JSON documents in
the project's one dialect (:mod:`.documents`), and the canonical JSON Schemas they are
validated against at run time (:mod:`.schema`)."""
