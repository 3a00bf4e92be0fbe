"""The LLM fine-tuning family: the LLM gyms (:mod:`.environments`), the run's shared base
model (:mod:`.setup`), the training loop (:mod:`.loop`), the pre-flight
(:mod:`.preflight`) and the family object (:mod:`.family`). transformers loads only
when one of them is imported."""
