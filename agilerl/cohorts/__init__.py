"""Cohorts: a population that trains as one.

Agents of one algorithm whose networks share an architecture form a cohort
(:func:`~agilerl.cohorts.learners.form_cohorts`, re-formed every generation, so after a
mutation that changes an agent's architecture it joins the cohort of its new shape or
trains alone). For the length of a generation's training a cohort holds its agents'
parameters, target networks and optimiser states stacked along a leading population
dimension (:mod:`~agilerl.cohorts.stacking`, :class:`~agilerl.algorithms.optim.StackedAdam`): acting is one
forward for all agents, learning one loss and one step per optimiser, while each agent
keeps its own hyperparameters (learning rates, gamma, tau, its exploration or noisy
layers' noise, DDPG's and TD3's ``policy_freq``, learn step, batch size). The agents step
their own environments together, each reset with the seeds its own turn would use, and
learn from their own views of the shared replay buffers, with their own priorities and
n-step sums (:mod:`~agilerl.cohorts.replay`). When the generation's training ends every agent's
weights and optimiser state are written back into it: evaluation, selection, mutation,
cloning and every saved file see agents exactly as when they train one at a time.

Which algorithms learn in cohorts, each algorithm declares (``learns_in_cohorts``, read
by :func:`~agilerl.cohorts.learners.can_join`). A cohort of one trains on the plain
path, and ``training.cohorts: false`` keeps every agent on it.
"""
