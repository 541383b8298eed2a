"""Non-learning policies and solvers: RESCUE, exact (MI)LPs and the papers' heuristic baselines.

Every policy follows :class:`offline.protocol.Policy` and is created by name through
:func:`offline.registry.make_policy`, so evaluate.py runs all of them through the env on identical seeds.
"""
