"""The single-agent online family: Gymnasium environments (:mod:`.envs`), the off- and
on-policy training turns (:mod:`.off_policy`, :mod:`.on_policy`), the pre-flight
(:mod:`.preflight`) and the family object (:mod:`.family`)."""
