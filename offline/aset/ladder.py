"""ASET-v1's reference ladder (design/ladder.md): how every policy of ASET-v1 is placed, scored per episode by the
query-weighted success rate (``success_rate`` of ``offline/aset/evaluation.py``'s ``per_episode.csv``).

| rung | policies |
|---|---|
| random | ``random_switch`` (a uniformly random static policy per window, the paper's random switching) |
| papers | the seven static policies of the paper (Section III-C), each held for the episode |
| ours | ``periodic_switch`` (best state-blind cycle), ``threshold_switch`` (tuned adaptive rule) |
| online | ``aset_rollout`` (rollout over sampled futures, ``offline.aset.online``) |
| references | ``best_static_hindsight``, ``lookahead_oracle``, ``clairvoyant_beam`` (all see the episode's future) |

No proven bound: the one valid bound we found (each stream's best no-wait success over the workers it may be bound
to, summed over its queries) is exactly 1.0 on both loads, so it says nothing; see ``SPEC.descriptions``.

Setting: ASET-v1 on full-edge at lambda = 60 (the training load of the shipped agents), ``theta = 0`` (no
termination, as every ASET study of docs/envs/aset.md), episodes of 60 windows (10 minutes, ten mean stream
lifetimes) so that the clairvoyant references fit the ladder's time budget; variant ``lam100``: the stress load.
"""

from __future__ import annotations

from typing import Any

from envs.aset.types import POLICY_NAMES
from offline.aset.heuristics import RELIEF_CHOICES, THRESHOLD_SWITCH
from offline.aset.policies import CLAIRVOYANT_BEAM, HINDSIGHT
from offline.ladder_spec import LadderSpec, TuningSpec

#: Windows per ladder episode (10 minutes; the clairvoyant beam costs 7 x width windows per window).
LADDER_HORIZON = 60
ENV_KWARGS: dict[str, Any] = {"topology": "full-edge", "lam": 60.0, "theta": 0.0, "horizon": LADDER_HORIZON}


def threshold_space(trial: Any) -> dict[str, Any]:
    """The search space of ``threshold_switch`` (an ``optuna.Trial``)."""
    return {
        "co_threshold": trial.suggest_float("co_threshold", 0.6, 1.0),
        "cloud_threshold": trial.suggest_float("cloud_threshold", 0.1, 1.0),
        "recent_subwindows": trial.suggest_int("recent_subwindows", 1, 20),
        "relief": trial.suggest_categorical("relief", list(RELIEF_CHOICES)),
        "hot_relief": trial.suggest_categorical("hot_relief", list(RELIEF_CHOICES)),
        "max_relief_run": trial.suggest_int("max_relief_run", 1, 3),
    }


SPEC = LadderSpec(
    env_id="ASET-v1",
    metric="success_rate",
    higher_is_better=True,
    random="random_switch",
    papers=tuple(POLICY_NAMES),
    ours=("periodic_switch", THRESHOLD_SWITCH),
    online=("aset_rollout",),
    references=(HINDSIGHT, "lookahead_oracle", CLAIRVOYANT_BEAM),
    descriptions={
        "aset_rollout": "online reference: each window, every action followed by threshold_switch and by the cycle "
                        "over 3 windows on 10 forks of the env (unrevealed arrivals, choices and stream lifetimes "
                        "redrawn; common random numbers), the base's own action kept unless another gains 0.002",
        "periodic_switch": "ours: the best state-blind cycle of up to three windows (least_impedance, "
                           "least_impedance, farthest; offline.aset.policies.best_cycle on ASET-v1)",
        THRESHOLD_SWITCH: "ours: least_impedance until the central offices' load passes a tuned threshold, then one "
                          "relief window (farthest, or random_load when the cloud is loaded); thresholds tuned "
                          "at lambda = 60",
        HINDSIGHT: "reference (clairvoyant): the best of the seven static policies on that very episode",
        "lookahead_oracle": "reference (clairvoyant): each window, the policy whose next 6 windows succeed best, "
                            "the periodic_switch cycle after the first, simulated on copies that see the arrivals",
        CLAIRVOYANT_BEAM: "reference (clairvoyant): beam search (width 6) over the whole episode's windows on "
                          "copies that see the arrivals, then the best sequence found is played",
    },
    env_kwargs=ENV_KWARGS,
    training_episodes=10,
    held_out_instances=10,
    held_out_episodes=1,
    quick_training_episodes=1,
    quick_held_out_instances=2,
    quick_held_out_episodes=1,
    variants={"lam100": {**ENV_KWARGS, "lam": 100.0}},
    quick_variants=(),  # the CI size plays lambda = 60 only
    tuning=(TuningSpec(policy=THRESHOLD_SWITCH, space=threshold_space, trials=40, instances=4, episodes=2,
                       quick_trials=3),),
)
