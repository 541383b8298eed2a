"""Non-learning policies for ASET-v0 / ASET-v1 and their evaluation hooks.

Registered for "ASET-v0" and "ASET-v1" (``offline.aset.policies``):

* ``closest``, ``load_balancing``, ``farthest``, ``cheaper``, ``random_latency``, ``random_load``,
  ``least_impedance``: that static policy held for the whole episode (paper Section III-C);
* ``random_switch``: a uniformly random static policy in every window;
* ``periodic_switch``: a fixed cycle of static policies, by default (least_impedance, least_impedance,
  farthest): a hand-found, non-adaptive reference showing how much mere mixing of two static
  policies gains (see docs/envs/aset.md).

* ``lookahead_oracle``: clairvoyant rollout over the cycle (each window, the policy whose next ``horizon``
  windows, simulated on copies of the env with the arrivals to come, succeed best): a reference for the room
  an adaptive choice has above the cycle, not a fair opponent.
* ``threshold_switch`` (ours, ``offline.aset.heuristics``): least_impedance until the central offices' recent
  load passes a tuned threshold, then a relief policy chosen by the cloud's load (tuned on instances 900..,
  ``offline/aset/tuned.yaml``);
* ``aset_rollout`` (``offline.aset.online``): the non-anticipative online reference, a rollout over sampled
  arrivals on forks of the env (``ASETEnv.fork``), threshold_switch and the periodic_switch cycle as bases;
* ``clairvoyant_beam``: clairvoyant beam search over the episode's windows on env copies that see the arrivals
  (a reference for the ladder, not a bound and not a baseline);
* ``best_static_hindsight``: per episode, the best of the seven static policies on that same episode
  (an upper bound no single static policy reaches). As a policy it replays the episode seed with each
  static policy on a copy of the env at reset (7x the cost); the evaluation (``offline.aset.evaluation``,
  ``HOOK`` for :func:`offline.runner.evaluate`, and ``evaluate_policies``) computes it from the static
  policies' own episodes instead (same numbers, no extra simulation).
"""

from __future__ import annotations

from offline.aset import (
    heuristics,  # noqa: F401  (registers our tuned adaptive rule, threshold_switch)
    online,  # noqa: F401  (registers the non-anticipative online reference, aset_rollout)
    policies,  # noqa: F401  (registers the policies)
)
from offline.aset.evaluation import DEFAULT_EVALUATION, HOOK, HOOK_V1, RATE_COLUMNS, evaluate_policies
from offline.aset.policies import (
    ENV_ID,
    ENV_IDS,
    HINDSIGHT,
    BestStaticHindsightPolicy,
    EpisodeTally,
    LookaheadOracle,
    PeriodicSwitchPolicy,
    RandomSwitchPolicy,
    StaticPolicy,
)

__all__ = [
    "DEFAULT_EVALUATION",
    "ENV_ID",
    "ENV_IDS",
    "HINDSIGHT",
    "HOOK",
    "HOOK_V1",
    "RATE_COLUMNS",
    "BestStaticHindsightPolicy",
    "EpisodeTally",
    "LookaheadOracle",
    "PeriodicSwitchPolicy",
    "RandomSwitchPolicy",
    "StaticPolicy",
    "evaluate_policies",
]
