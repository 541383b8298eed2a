"""UEC-v0's online references against lp_bid_price: profit, paired difference, ratio and decision time.

    python -m benchmarks.uec_online                                   # training instance 0, 30 held-out episodes
    python -m benchmarks.uec_online split=held_out instances=10 episodes=3
    python -m benchmarks.uec_online split=tuning instances=3 episodes=4 futures=256 width=6   # tune here only
    python -m benchmarks.uec_online policies=lp_bid_price,uec_rollout episodes=5

Every policy plays the same episodes (``offline.uec.evaluation.episode_seeds``: the same arrivals and durations,
the same policy seed) through ``offline.protocol.run_episode(..., time_decisions=True)``. ``split`` picks what is
played (``offline.partition``): ``training`` (instance 0, evaluation seeds), ``held_out`` (instances 100..,
evaluation seeds) or ``tuning`` (instances 900.., tuning seeds: the only split to choose parameters on).
``futures``, ``width``, ``horizon`` (rollouts), ``every``, ``window`` (lp_resolve) and ``scale`` (their base's θ) override the
policies' defaults.
Prints one row per policy: mean profit, the paired difference with lp_bid_price and its 95 % CI
(``offline.stats.mean_ci95``), the ratio of means and the decision time (mean and p99, ms; the first decision of
each episode left out as warm-up). Rows also go to ``outputs/benchmarks/uec_online.csv``.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import edge_sched_gym  # noqa: F401  (registers the envs)
from offline import partition
from offline.protocol import decision_ms, run_episode
from offline.registry import make_policy
from offline.stats import mean_ci95
from offline.uec.evaluation import episode_seeds

SPLITS = ("training", "held_out", "tuning")
DEFAULT_POLICIES = ("lp_bid_price", "lp_resolve", "uec_rollout", "uec_rollout_preempt")
#: Keys passed to the policies that take them (others keep their defaults).
POLICY_KEYS = {"uec_rollout": ("futures", "width", "horizon", "scale"),
               "uec_rollout_preempt": ("futures", "width", "horizon", "scale"), "lp_resolve": ("every", "window", "scale")}
OUT = Path("outputs/benchmarks/uec_online.csv")


def parse(argv: list[str]) -> dict[str, Any]:
    """``key=value`` arguments; bad keys or values raise ValueError naming them and the allowed values."""
    opts: dict[str, Any] = {"split": "training", "episodes": 30, "instances": 1, "policies": list(DEFAULT_POLICIES)}
    ints = {"episodes", "instances", "futures", "width", "horizon", "every", "window"}
    for arg in argv:
        key, sep, value = arg.partition("=")
        if not sep or key not in {"split", "policies", "scale", *ints}:
            raise ValueError(f"argument {arg!r} is invalid: expected key=value with key in "
                             f"{sorted({'split', 'policies', 'scale', *ints})}")
        if key == "split":
            if value not in SPLITS:
                raise ValueError(f"split={value!r} is invalid: expected one of {list(SPLITS)}")
            opts[key] = value
        elif key == "policies":
            opts[key] = [p for p in value.strip("[]").split(",") if p]
        elif key == "scale":
            try:
                opts[key] = float(value)
            except ValueError:
                raise ValueError(f"scale={value!r} is invalid: expected a number >= 0") from None
        else:
            try:
                number = int(value)
            except ValueError:
                raise ValueError(f"{key}={value!r} is invalid: expected an integer") from None
            if number < 1:
                raise ValueError(f"{key}={value!r} is invalid: expected an integer >= 1")
            opts[key] = number
    if "lp_bid_price" not in opts["policies"]:
        opts["policies"].insert(0, "lp_bid_price")
    return opts


def evaluation_set(opts: dict[str, Any]) -> partition.EvaluationSet:
    if opts["split"] == "training":
        return partition.training_instance(opts["episodes"])
    if opts["split"] == "held_out":
        return partition.held_out_instances(opts["instances"], opts["episodes"])
    return partition.tuning_set(opts["instances"], opts["episodes"])


def run(opts: dict[str, Any]) -> list[dict[str, Any]]:
    """Play every policy on the set's episodes; one summary row per policy."""
    spec = evaluation_set(opts)
    profits: dict[str, list[float]] = {p: [] for p in opts["policies"]}
    seconds: dict[str, list[float]] = {p: [] for p in opts["policies"]}
    for index, instance_seed in enumerate(spec.instance_seeds()):
        env = gym.make("UEC-v0", instance_seed=instance_seed)
        policies = {}
        for name in opts["policies"]:
            kwargs = {k: opts[k] for k in POLICY_KEYS.get(name, ()) if k in opts}
            policies[name] = make_policy("UEC-v0", name, env, **kwargs)
        for episode in range(spec.episodes):
            env_seed, policy_seed = episode_seeds(spec.seed, index, episode)
            for name, policy in policies.items():
                result = run_episode(env, policy, seed=env_seed, policy_seed=policy_seed, time_decisions=True)
                profits[name].append(result.total_reward)
                seconds[name].extend(result.decision_seconds[1:])
        env.close()
    base = np.asarray(profits["lp_bid_price"])
    rows = []
    for name in opts["policies"]:
        values = np.asarray(profits[name])
        diff, half = mean_ci95(values - base)
        ms_mean, ms_p99 = decision_ms([0.0, *seconds[name]])
        rows.append({"policy": name, "split": spec.name, "episodes": values.size, "profit": values.mean(),
                     "diff": diff, "diff_ci95": half, "ratio": values.mean() / base.mean(),
                     "decision_ms": ms_mean, "decision_ms_p99": ms_p99})
    return rows


def main(argv: list[str]) -> None:
    opts = parse(argv)
    rows = run(opts)
    print(f"| policy | split | episodes | profit | diff vs lp_bid_price (95 % CI) | ratio | ms mean | ms p99 |  "
          f"({' '.join(argv) or 'defaults'})")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['policy']} | {r['split']} | {r['episodes']} | {r['profit']:.2f} | {r['diff']:+.2f} ± "
              f"{r['diff_ci95']:.2f} | {r['ratio']:.4f} | {r['decision_ms']:.1f} | {r['decision_ms_p99']:.1f} |")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    new = not OUT.exists()
    with OUT.open("a", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=[*rows[0], "args"])
        if new:
            writer.writeheader()
        for r in rows:
            writer.writerow({**r, "args": " ".join(argv)})


if __name__ == "__main__":
    main(sys.argv[1:])
