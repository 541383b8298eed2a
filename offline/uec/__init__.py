"""UEC-v0 non-learning policies and solvers: RESCUE (P1-LP + value functions + Alg. 1) and the baselines.

Importing this package registers, for ``UEC-v0`` (``offline.registry``):

| name          | policy                                                                        |
|---------------|-------------------------------------------------------------------------------|
| ``rescue``      | RESCUE's online rule on its cached offline solution (``offline.uec.policies``) |
| ``rescue_fallback`` | ours, not the paper's: RESCUE, trying the next SSP by y* when the drawn server is busy |
| ``pickconfigs`` | greedy highest R_jkl(t)                                                       |
| ``srs``         | greedy highest R_jkl(t)/E[d_l]                                                |
| ``sumita``      | server from y*, then the best profile on it                                   |
| ``cvs``         | greedy highest R_jkl(t)/(E[d_l]·c̄_k)                                          |
| ``random``      | accept w.p. ½, uniform safe SSP                                               |
| ``opportunity_greedy`` | ours: safe SSP maximising R − λ·(expected tera-MAC held), tuned λ        |
| ``value_bid_price`` | ours: safe SSP maximising R − θ·(opportunity cost from RESCUE's B_k), tuned θ |
| ``lp_bid_price`` | ours: safe SSP maximising R − θ·(occupancy priced by the duals of RESCUE's P1-LP), tuned θ |
| ``lp_resolve``, ``uec_rollout``, ``uec_rollout_preempt`` | ours, online references (``offline.uec.online``): P1-LP re-solved from the present state; rollouts of lp_bid_price over sampled futures |

The baselines consider only SSPs that keep every reserved task satisfiable (``info["safe_action_mask"]``).

``rescue_solution(instance)`` gives the offline stage (y*, x*, A, B, OPT(LP), Σ_k B_k(1), timings), cached
per instance. Modules: ``lp`` (P1-LP), ``values`` (value functions, the offline stage), ``policies``
(RESCUE), ``baselines``, ``bruteforce`` (hindsight optimum of tiny instances), ``evaluation`` (``HOOK``
for :func:`offline.runner.evaluate`, ``evaluate_policies``, and ``LPBound``, the episode bound of the
learning curves).
"""

from __future__ import annotations

from offline.uec import baselines, heuristics, online, policies  # noqa: F401  (registers the policies)
from offline.uec.evaluation import DEFAULT_EVALUATION, HOOK, LPBound, evaluate_policies
from offline.uec.lp import RescueLPError, build_lp, solve_lp
from offline.uec.values import RescueSolution, compute_rescue_solution, rescue_solution, value_functions

__all__ = [
    "DEFAULT_EVALUATION",
    "HOOK",
    "LPBound",
    "RescueLPError",
    "RescueSolution",
    "build_lp",
    "compute_rescue_solution",
    "evaluate_policies",
    "rescue_solution",
    "solve_lp",
    "value_functions",
]
