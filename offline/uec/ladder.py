"""UEC-v0's reference ladder (``SPEC``, design/ladder.md): the rungs, the metric, the bounds, the tuning.

Metric: ``profit`` of the hook's ``uec_episodes.csv`` (the episode's realised profit; higher is better).
Rows: random = the paper's Random; papers = Section VI-A's baselines and RESCUE; ours =
``offline.uec.heuristics`` (bid-price control on P1-LP's capacity duals, tuned across loads; opportunity-cost
greedy and bid-price control on RESCUE's value functions, tuned at the default load; all on instances 900..); bounds = ``offline.uec.bounds``: the LP relaxation of the episode's hindsight MILP
(proven, per episode) and RESCUE's OPT(P1-LP) (bounds the *expected* profit, so a reference per episode).
Variants: the mean arrival probability P̄ (``scenario_overrides.mean_arrival_prob``, default 0.45) at 0.2 (the
paper's lowest) and 0.9 (beyond the paper's 0.7; P(t) = P̄·(1 + 0.5·sin) is then clipped at 1 in part of the day).
Sizes: 30 held-out episodes of the training instance, 10 held-out instances x 2 episodes, and the same 10 x 2
for each variant (quick: 4 episodes, 3 x 1 per set). RESCUE's LP (about 2-3 s per instance, solved by the hook,
whose ``lp_bound`` column is the ``opt_lp`` row) takes most of the time.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from offline.ladder_spec import LadderSpec, TuningSpec
from offline.uec import relaxation
from offline.uec.bounds import BOUND_NAMES, episode_bounds
from offline.uec.evaluation import BASELINE_NAMES
from offline.uec.policies import ENV_ID

#: The paper's baselines (Section VI-A) and RESCUE itself; ``random`` is rung 1.
PAPER_POLICIES: tuple[str, ...] = ("rescue", *(name for name in BASELINE_NAMES if name != "random"))
#: Ours (``offline.uec.heuristics`` and ``rescue_fallback`` of ``offline.uec.policies``).
OUR_POLICIES: tuple[str, ...] = ("lp_bid_price", "opportunity_greedy", "value_bid_price", "rescue_fallback")
#: Online references (``offline.uec.online``): non-anticipative, compute per decision bought for quality.
ONLINE_POLICIES: tuple[str, ...] = ("lp_resolve", "uec_rollout", "uec_rollout_preempt")
#: The loads ``lp_bid_price`` is tuned across (mean arrival probability: the paper's lowest, the default, beyond
#: the paper's highest), each played on the same tuning instances in every trial.
TUNING_LOADS: tuple[float, ...] = (0.2, 0.45, 0.9)


def price_space(trial: Any) -> dict[str, Any]:
    """λ of ``opportunity_greedy``: profit per tera-MAC held (0 is PickConfigs)."""
    return {"price": trial.suggest_float("price", 0.002, 0.03, log=True)}


def scale_space(trial: Any) -> dict[str, Any]:
    """θ of ``value_bid_price``: the weight of RESCUE's value-function opportunity cost (1: A − B)."""
    return {"scale": trial.suggest_float("scale", 0.3, 2.0)}


def lp_scale_space(trial: Any) -> dict[str, Any]:
    """θ of ``lp_bid_price``: the weight of P1-LP's capacity duals (1: the LP's own reduced-cost test)."""
    return {"scale": trial.suggest_float("scale", 0.3, 2.0)}


def ladder_bounds(env_kwargs: dict[str, Any], instance_seed: int, reset_seed: int) -> dict[str, float]:
    """Per episode: the hindsight LP bound (every policy, every episode) and the information-relaxation bound
    (``offline.uec.relaxation``: its mean bounds the mean of every online policy)."""
    return {**episode_bounds(env_kwargs, instance_seed, reset_seed),
            **relaxation.episode_relaxation_bounds(env_kwargs, instance_seed, reset_seed)}


def mean_log_profit_per_setting(rows: list[dict[str, Any]]) -> float:
    """Σ over settings of log(mean profit) / #settings: the geometric mean of the per-load mean profits, so a
    1 % gain counts the same at every load (the plain mean would be dominated by the busiest load)."""
    settings = sorted({row["setting"] for row in rows})
    means = [np.mean([float(r["profit"]) for r in rows if r["setting"] == s]) for s in settings]
    return float(np.mean(np.log(np.maximum(means, 1e-9))))


SPEC = LadderSpec(
    env_id=ENV_ID,
    metric="profit",
    higher_is_better=True,
    random="random",
    papers=PAPER_POLICIES,
    ours=OUR_POLICIES,
    online=ONLINE_POLICIES,
    bounds=ladder_bounds,
    bound_names=(*BOUND_NAMES, *relaxation.RELAXATION_BOUND_NAMES, "opt_lp"),
    bound_columns={"lp_bound": "opt_lp"},  # the hook solves RESCUE's LP once per instance already
    # the relaxation bounds every online policy's mean (not each episode, not the clairvoyant references)
    proven_bounds=("clairvoyant_hindsight_lp_bound", relaxation.RELAXATION_BOUND_NAMES[0]),
    descriptions={
        "lp_bid_price": "ours: bid-price control on the duals of RESCUE's P1-LP: the safe SSP maximising R_jkl(t) - "
                        "theta * sum_s S_l(s) mu_k(t+s-1) (mu = dual price of server k's capacity at slot t, zero "
                        "where the LP leaves it idle, so the price follows the load), accepted if positive; theta "
                        "tuned on instances 900.. at mean arrival probabilities 0.2, 0.45 and 0.9",
        "opportunity_greedy": "ours: the safe SSP maximising R_jkl(t) - lambda * expected tera-MAC the task holds "
                              "within the horizon, accepted if positive; one price lambda tuned on instances 900..",
        "value_bid_price": "ours: bid-price control on RESCUE's value functions, deterministic: the safe SSP "
                           "maximising R_jkl(t) - theta * (B_k(t+1) - E[B_k(t+d_l)]), accepted if positive; theta "
                           "tuned on instances 900..",
        "rescue_fallback": "ours: RESCUE, trying the next SSP by y* when the drawn server is busy",
        "lp_resolve": "online reference: lp_bid_price's rule on the duals of P1-LP re-solved from the present state "
                      "(busy servers, reserved work already served) every 10 slots over the next 60",
        "uec_rollout": "online reference: rollout over 512 sampled futures (common random numbers) with lp_bid_price "
                       "as base policy; candidates reject, the base's action and the 16 best safe SSPs by its score",
        "uec_rollout_preempt": "online reference: uec_rollout that may also choose SSPs reserved work can pre-empt "
                               "(the env's default reserved_priority='preempt'), simulated faithfully",
        "clairvoyant_hindsight_lp_bound": "proven per-episode bound: LP relaxation of the hindsight MILP on the "
                                          "episode's realised arrivals and durations (fixed at reset), with the "
                                          "env's one-task-per-server and reserved-task (Hall interval) constraints",
        relaxation.RELAXATION_BOUND_NAMES[0]: relaxation.DESCRIPTION,
        "opt_lp": "RESCUE's OPT(P1-LP) of the instance: bounds the expected profit of every non-anticipative policy "
                  "(Lemma 1), not each episode; the paper's empirical competitive ratio divides by it",
    },
    training_episodes=30,
    held_out_instances=10,
    held_out_episodes=2,
    quick_training_episodes=4,
    quick_held_out_instances=3,
    quick_held_out_episodes=1,
    quick_variants=(),  # the CI size plays the default load only
    variant_skip=ONLINE_POLICIES,  # ~4 s an episode each: the online references play the default load's sets
    variants={
        "p=0.2": {"scenario_overrides": {"mean_arrival_prob": 0.2}},
        "p=0.9": {"scenario_overrides": {"mean_arrival_prob": 0.9}},
    },
    tuning=(
        TuningSpec(policy="lp_bid_price", space=lp_scale_space, trials=10, instances=3, episodes=4, quick_trials=3,
                   objective=mean_log_profit_per_setting,
                   settings=tuple({"scenario_overrides": {"mean_arrival_prob": p}} for p in TUNING_LOADS)),
        TuningSpec(policy="opportunity_greedy", space=price_space, trials=16, instances=4, episodes=5, quick_trials=3),
        TuningSpec(policy="value_bid_price", space=scale_space, trials=12, instances=4, episodes=5, quick_trials=3),
    ),
)
