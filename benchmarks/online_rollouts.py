"""ASET-v1's and OINC-v0's online references against their strongest heuristics: means, paired diffs, decision time.

    python -m benchmarks.online_rollouts env=ASET-v1                          # lambda = 60, 10 held-out instances
    python -m benchmarks.online_rollouts env=ASET-v1 lam=100
    python -m benchmarks.online_rollouts env=ASET-v1 split=tuning instances=4 horizon=6 samples=8   # tune here only
    python -m benchmarks.online_rollouts env=OINC-v0 instances=10
    python -m benchmarks.online_rollouts env=OINC-v0 split=tuning instances=5 horizon=3 samples=4

Every policy plays the same episodes (``offline.protocol.episode_seed``: the same workloads / arrivals, the same
policy seed) through ``offline.protocol.run_episode(..., time_decisions=True)``, on the ladder's setting
(``offline/aset/ladder.py``: full-edge, theta = 0, 60 windows; ``offline/oinc/ladder.py``: the extended
observation, each pair with its controller and tuned share). ``split`` picks what is played (``offline.partition``):
``held_out`` (instances 100.., evaluation seeds), ``training`` (instance 0) or ``tuning`` (instances 900.., tuning
seeds: the only split to choose parameters on). ``horizon`` and ``samples`` override the online reference's
defaults. Prints one row per policy: the mean metric (ASET: query-weighted success rate, higher is better; OINC:
``slo_weighted_sum``, lower is better; ``share=`` sets the online pair's retraining share), the paired difference with the reference policy (``ref=``, default the first
of ``policies``) and its 95 % CI (``offline.stats.mean_ci95``), and the decision time (mean and p99, ms; the first
decision of each episode left out as warm-up). Rows also go to ``outputs/benchmarks/online_rollouts.csv``.
"""

from __future__ import annotations

import csv
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from offline import partition
from offline.protocol import decision_ms, episode_seed, run_episode
from offline.stats import mean_ci95

ENVS = ("ASET-v1", "OINC-v0")
SPLITS = ("held_out", "training", "tuning")
DEFAULT_POLICIES = {
    "ASET-v1": ("threshold_switch", "periodic_switch", "aset_rollout"),
    "OINC-v0": ("slo_liu+ekya", "slo_liu_ls+ekya", "oinc_rollout+ekya"),
}
OUT = Path("outputs/benchmarks/online_rollouts.csv")


def parse(argv: list[str]) -> dict[str, Any]:
    """``key=value`` arguments; bad keys or values raise ValueError naming them and the allowed values."""
    opts: dict[str, Any] = {"env": "ASET-v1", "split": "held_out", "instances": 10, "episodes": 1, "lam": 60.0}
    keys = {"env", "split", "policies", "ref", "instances", "episodes", "lam", "horizon", "samples", "base",
            "min_gain", "miss_weight", "share"}
    for arg in argv:
        key, sep, value = arg.partition("=")
        if not sep or key not in keys:
            raise ValueError(f"argument {arg!r} is invalid: expected key=value with key in {sorted(keys)}")
        if key == "env" and value not in ENVS:
            raise ValueError(f"env={value!r} is invalid: expected one of {list(ENVS)}")
        if key == "split" and value not in SPLITS:
            raise ValueError(f"split={value!r} is invalid: expected one of {list(SPLITS)}")
        if key == "policies":
            opts[key] = [p for p in value.strip("[]").split(",") if p]
        elif key in ("instances", "episodes", "horizon", "samples"):
            try:
                opts[key] = int(value)
            except ValueError:
                raise ValueError(f"{key}={value!r} is invalid: expected a positive integer") from None
            if opts[key] < 1:
                raise ValueError(f"{key}={value!r} is invalid: expected a positive integer")
        elif key in ("lam", "min_gain", "miss_weight", "share"):
            try:
                opts[key] = float(value)
            except ValueError:
                raise ValueError(f"{key}={value!r} is invalid: expected a number") from None
        else:
            opts[key] = value
    opts.setdefault("policies", list(DEFAULT_POLICIES[opts["env"]]))
    opts.setdefault("ref", opts["policies"][0])
    if opts["ref"] not in opts["policies"]:
        raise ValueError(f"ref={opts['ref']!r} is invalid: expected one of {opts['policies']}")
    return opts


def evaluation_set(opts: dict[str, Any]) -> partition.EvaluationSet:
    if opts["split"] == "tuning":
        return partition.tuning_set(opts["instances"], opts["episodes"])
    if opts["split"] == "training":
        return partition.training_instance(opts["episodes"])
    return partition.held_out_instances(opts["instances"], opts["episodes"])


def online_kwargs(opts: dict[str, Any]) -> dict[str, Any]:
    keys = ("horizon", "samples", "base", "min_gain") if opts["env"] == "ASET-v1" else ("horizon", "samples",
                                                                                      "miss_weight")
    return {k: opts[k] for k in keys if k in opts}


def play_aset(opts: dict[str, Any], name: str, inst_seed: int, ep_seed: int) -> tuple[float, list[float]]:
    """One ASET-v1 episode of ``name`` on the ladder's setting: (success rate, decision seconds)."""
    from envs.aset.env import ASETEnvV1
    from offline.aset.ladder import ENV_KWARGS
    from offline.aset.policies import EpisodeTally
    from offline.registry import make_policy

    env = ASETEnvV1(**{**ENV_KWARGS, "lam": opts["lam"]}, instance_seed=inst_seed)
    kwargs = online_kwargs(opts) if name == "aset_rollout" else {}
    policy = make_policy("ASET-v1", name, env, **kwargs)
    tally = EpisodeTally(env.instance.num_apps)
    result = run_episode(env, policy, seed=ep_seed, on_step=tally, time_decisions=True)
    return tally.metrics(env.instance.app_names)["success_rate"], result.decision_seconds


def play_oinc(opts: dict[str, Any], name: str, inst_seed: int, ep_seed: int) -> tuple[float, list[float]]:
    """One OINC-v0 episode of the pair ``name`` on the ladder's setting: (slo_weighted_sum, decision seconds)."""
    from envs.oinc.env import OINCEnv
    from offline.oinc.evaluation import CONTROLLER_KWARGS, resolve_pair, slo_weighted_sum
    from offline.oinc.heuristics import pair_defaults
    from offline.registry import make_policy

    label, controller, inference, _ = resolve_pair(name, None, "aret")
    kwargs = dict(pair_defaults(label))
    if inference == "oinc_rollout":
        kwargs.update(online_kwargs(opts))
        if "share" in opts:  # the online pair's retraining share (default: the local-search pair's tuned one)
            kwargs["retraining_share"] = opts["share"]
    controller_kwargs = {key: kwargs.pop(key) for key in CONTROLLER_KWARGS if key in kwargs}
    env = OINCEnv(observation="extended", retraining=controller, instance_seed=inst_seed, **controller_kwargs)
    policy = make_policy("OINC-v0", inference, env, **kwargs)
    result = run_episode(env, policy, seed=ep_seed, time_decisions=True)
    info = result.final_info
    return slo_weighted_sum(info["weighted_sum"], info["slo_hit_rate"]), result.decision_seconds


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    opts = parse(sys.argv[1:] if argv is None else argv)
    import offline.aset
    import offline.oinc  # noqa: F401  (both register their policies)

    chosen = evaluation_set(opts)
    play = play_aset if opts["env"] == "ASET-v1" else play_oinc
    scores: dict[str, list[float]] = {p: [] for p in opts["policies"]}
    seconds: dict[str, list[float]] = {p: [] for p in opts["policies"]}
    start = time.perf_counter()
    for index, inst_seed in enumerate(chosen.instance_seeds()):
        for episode in range(chosen.episodes):
            ep_seed = episode_seed(chosen.seed, index, episode)
            for name in opts["policies"]:
                value, secs = play(opts, name, inst_seed, ep_seed)
                scores[name].append(value)
                seconds[name].extend(secs[1:])  # the first decision of each episode is warm-up
    ref = np.asarray(scores[opts["ref"]])
    rows = []
    print(f"{opts['env']} split={opts['split']} ({chosen.instances} x {chosen.episodes}) "
          f"{'lam=' + str(opts['lam']) + ' ' if opts['env'] == 'ASET-v1' else ''}{online_kwargs(opts)} "
          f"wall {time.perf_counter() - start:.0f} s")
    for name in opts["policies"]:
        values = np.asarray(scores[name])
        mean, half = mean_ci95(values)
        diff, diff_half = mean_ci95(values - ref)
        ms, p99 = decision_ms([0.0, *seconds[name]])
        row = {"env": opts["env"], "split": opts["split"], "lam": opts["lam"] if opts["env"] == "ASET-v1" else "",
               "policy": name, "n": values.size, "mean": mean, "ci95": half, "diff_vs_ref": diff,
               "diff_ci95": diff_half, "ratio_vs_ref": mean / float(ref.mean()), "decision_ms": ms,
               "decision_ms_p99": p99, **online_kwargs(opts)}
        rows.append(row)
        print(f"  {name:24s} {mean:9.4f} ± {half:7.4f}   diff vs {opts['ref']}: {diff:+8.4f} ± {diff_half:7.4f}"
              f"   ratio {row['ratio_vs_ref']:.4f}   decision {ms:8.2f} ms (p99 {p99:8.2f})")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    new = not OUT.exists()
    fields = ["env", "split", "lam", "policy", "n", "mean", "ci95", "diff_vs_ref", "diff_ci95", "ratio_vs_ref",
              "decision_ms", "decision_ms_p99", "horizon", "samples", "base", "min_gain", "miss_weight"]
    with OUT.open("a", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields, extrasaction="ignore")
        if new:
            writer.writeheader()
        writer.writerows(rows)
    return rows


if __name__ == "__main__":
    main()
