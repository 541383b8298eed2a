"""OINC-v0 inference baselines, the Table II pairings and the evaluation hook.

Inference policies (registered for "OINC-v0" by ``offline.oinc.policies``; they choose only the
inference action, the retraining controller is the env's ``retraining=`` kwarg, so a Table II
"algorithm" is a pair):

* ``greedy`` -- the paper's Greedy: tasks in increasing SLO order each take the edge of least estimated
  latency given the tasks already placed, then the closed-form convex split (z ∝ sqrt(c), v ∝
  sqrt(d / rate), the KKT solution of min sum c/(z f) + d/(v r)), mapped to the discrete levels.
* ``liu`` -- Liu et al. (TSC 2023) idea, their paper is not available here: assignment that minimises
  the total latency of the optimal (Lagrangian / KKT) split, sum_j (sum sqrt c)^2 / F_j +
  (sum sqrt(d / r_j))^2, by marginal-cost insertion (largest tasks first) and best-response moves.
* ``nearest`` -- each task to its nearest edge, equal compute and bandwidth shares.
* ``random`` -- uniform over the action space.
* ``slo_liu`` -- ours (``offline.oinc.heuristics``): Liu's assignment with an SLO-first compute split, the
  inference side of the ladder's rung-3 pair ``slo_liu+ekya`` (tuned retraining share).

Continuous shares go to the W = 4 levels with ``dynamics.levels_for_shares``: the log2-nearest level of
8·share/largest share of the edge, with the rounding offset per edge (8 candidates) that minimises the
split's objective sum c/z (resp. sum d/(v r)) -- within 1.4 % of the best discrete levels in the tests.
Non-learning policies read ``env.unwrapped.instance`` and the current tasks (``current_tasks``,
``inference_share``) and act only through ``env.step``.

Table II pairings (``offline.oinc.evaluation.TABLE2``): ``oinc`` = trained SAC run + ``aret``; ``ekya`` =
nearest + ekya controller; ``kalmia`` = greedy (urgent-first = SLO order) + kalmia; ``greedy_aret``;
``liu_aret``; ``ainf_dedas`` / ``ainf_zhang`` = A_inf + dedas / zhang, where A_inf is the trained run
when one is given and otherwise the ``liu`` heuristic as a stand-in (labelled in the ``inference``
column). Any ``<inference>+<controller>`` pair (e.g. ``greedy+kalmia``, ``runs/x+aret``) is accepted too,
and a bare inference policy or run folder runs with the env config's controller (``retraining``, default
aret). ``python evaluate.py env=oinc-v0`` runs Table II (``HOOK`` of ``offline.oinc.evaluation``);
``markdown_table`` prints rows next to the paper's numbers.
"""

from __future__ import annotations

from offline.oinc import heuristics, online, policies  # noqa: F401  (registers the policies; online: oinc_rollout)
from offline.oinc.evaluation import (
    A_INF_STAND_IN,
    DEFAULT_EVALUATION,
    HOOK,
    METRICS,
    PAPER_TABLE2,
    TABLE2,
    check_policy_names,
    evaluate_policies,
    markdown_table,
    resolve_pair,
)
from offline.oinc.policies import (
    ENV_ID,
    INFERENCE_POLICIES,
    GreedyPolicy,
    LiuPolicy,
    NearestPolicy,
    RandomPolicy,
    convex_split,
)

__all__ = [
    "A_INF_STAND_IN",
    "DEFAULT_EVALUATION",
    "ENV_ID",
    "HOOK",
    "INFERENCE_POLICIES",
    "METRICS",
    "PAPER_TABLE2",
    "TABLE2",
    "GreedyPolicy",
    "LiuPolicy",
    "NearestPolicy",
    "RandomPolicy",
    "check_policy_names",
    "convex_split",
    "evaluate_policies",
    "markdown_table",
    "resolve_pair",
]
