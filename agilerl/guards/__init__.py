"""User code and the guards around it: the one call into code a manifest names
(:mod:`.user_code`, with :mod:`.time_limit`), the listing of that code before anything
is imported (:mod:`.manifest_code`), and the gate in front of code an agent file
records (:mod:`.recorded_code`). Nothing here imports torch."""
