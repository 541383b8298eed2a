"""Non-learning policies and solvers: RESCUE, exact (MI)LPs and the papers' heuristic baselines.

Every policy follows :class:`offline.protocol.Policy` and is created by name through
:func:`offline.registry.make_policy`; :mod:`offline.runner` runs any set of them through the env on
identical seeds. One package per problem (``offline/<p>/``), same module names for all four.
"""

import envs as _envs

if getattr(_envs, "SUITE", None) != "edge-sched-gym":  # a foreign package named 'envs' shadows ours
    raise ImportError(
        f"the module 'envs' imported from {getattr(_envs, '__file__', '?')} is not edge-sched-gym's: another "
        "distribution or folder named 'envs' is installed or shadows it. `import edge_sched_gym` first loads the "
        "suite's own envs even then; to repair an install, run `pip uninstall envs`, then reinstall edge-sched-gym "
        "(in a clone `pip install -e .`; from a wheel `pip install --force-reinstall --no-deps edge-sched-gym`)."
    )
