"""CoRaiS non-learning policies, the exact MILP (HiGHS) and the evaluation hooks.

Importing this package registers for ``CoRaiS-v0`` and ``CoRaiS-v1`` (``offline.registry``;
``offline.corais.policies``):

| name                                   | policy                                                        |
|----------------------------------------|---------------------------------------------------------------|
| exact (kwarg ``time_limit``, def. 10)  | MILP of eqs. (6)-(15) solved by HiGHS under a time limit      |
| exact_0.02s, exact_0.05s, exact_1s, exact_5s, exact_10s | the same with the paper's time limits        |
| local                                  | every request at its source edge                              |
| predicted                              | at its predicted edge if that is in the region, else source   |
| random1, random100, random500, random1k | best of k uniform dispatches (kwarg ``samples``)             |
| list_greedy                            | requests by decreasing size, each to the earliest-completing edge |
| list_greedy_ls                         | list_greedy, then move/swap local search (``greedy``)         |
| ils_50ms, ils_100ms, ils_1s, ils_5s, ils_30s, ils_60s | anytime iterated local search, wall-clock budget (``search``) |
| ils_it6, ils_it18, ils_it260, ils_it1600, ils | the same with a fixed kick budget: load-independent twins |
| milp_1s, milp_10s, milp_30s, milp_60s  | the MILP's incumbent at that time limit (best found, not an optimum) |

All of them read the instance (``env.unwrapped.instance``) and act through ``env.step``. The learned
attention dispatcher (``corais_greedy``, ``corais_10`` ... ``corais_1k``) is registered by
``agents.corais`` and resolved by ``agents.loading.resolve_policy``.

Modules: ``milp`` (:func:`solve_exact`, :func:`build_milp`), ``greedy`` (:func:`list_greedy`,
:func:`local_search`), ``policies`` (the policies above),
``evaluation`` (``HOOK`` for :func:`offline.runner.evaluate`: the paper's Gap-M against the exact
solver with a 10 s limit, ``exact_time_limit`` changes it, e.g. for CPU tests; ``evaluate_policies``).
"""

from __future__ import annotations

from offline.corais import policies  # noqa: F401  (registers the policies)
from offline.corais.evaluation import DEFAULT_EVALUATION, HOOK, HOOK_V1, evaluate_policies
from offline.corais.greedy import fluid_bound, list_greedy, list_greedy_ls, local_search
from offline.corais.milp import SolveResult, build_milp, solve_exact
from offline.corais.policies import (
    ENV_ID,
    ENV_IDS,
    ExactPolicy,
    ListGreedyPolicy,
    LocalPolicy,
    PredictedPolicy,
    RandomBestPolicy,
    best_of_random,
    local_dispatch,
    predicted_dispatch,
    reference_costs,
)

__all__ = [
    "DEFAULT_EVALUATION",
    "ENV_ID",
    "ENV_IDS",
    "HOOK",
    "HOOK_V1",
    "ExactPolicy",
    "ListGreedyPolicy",
    "LocalPolicy",
    "PredictedPolicy",
    "RandomBestPolicy",
    "SolveResult",
    "best_of_random",
    "build_milp",
    "evaluate_policies",
    "fluid_bound",
    "list_greedy",
    "list_greedy_ls",
    "local_dispatch",
    "local_search",
    "predicted_dispatch",
    "reference_costs",
    "solve_exact",
]
