"""The composition root's parts, one container per side (dependency-injector's multiple-containers
layout): `core` (settings, clock, store, processes), `reads` (observer, reads, killer), `waits` (waiter),
`submit` (providers, submitter, work), `notices` (terminal notices), `upkeep` (doctor, prune).
`entrypoints.container.Container` composes them; a side's module is imported on its first use.
"""
