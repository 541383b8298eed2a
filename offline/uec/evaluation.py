"""Contract 3 for UEC-v0: run policies on the same instances and episode seeds, summarise, plot.

``evaluate_policies`` builds instance i with ``instance_seed = seed + i`` (what ``UECEnv`` would draw),
resets episode e of instance i with the same seed for every policy (common random numbers: the same
arrivals and the same duration uniforms), and seeds each policy's own randomness identically across
policies. It reports, per policy, the mean realised profit with its 95 % CI, OPT(LP) and Σ_k B_k(1) of
RESCUE's offline stage, the empirical competitive ratio (profit_mean / lp_bound), the ratio to the best
baseline, the UEC utilisation and the median decision time, and writes per-episode CSV rows and plots
(profit per policy; cumulative profit and UEC utilisation over time, as in the paper's Fig. 5).
"""

from __future__ import annotations

import csv
from pathlib import Path
from time import perf_counter
from typing import Any

import gymnasium as gym
import numpy as np

from envs.uec.types import Instance
from offline.stats import mean_ci95
from offline.uec.values import rescue_solution

ENV_ID = "UEC-v0"
#: The paper's baselines (Section VI-A); ``vs_best_baseline`` divides by the best of those evaluated.
BASELINE_NAMES: tuple[str, ...] = ("pickconfigs", "srs", "sumita", "cvs", "random")
#: What ``python evaluate.py env=uec-v0`` runs when the command line does not say.
DEFAULT_EVALUATION: dict[str, Any] = {
    "policies": ["rescue", *BASELINE_NAMES],
    "instances": 3,
    "episodes": 20,
}


def episode_seeds(seed: int, instance_index: int, episode: int) -> tuple[int, int]:
    """(env reset seed, policy seed) of one episode: the same for every policy (common random numbers)."""
    state = np.random.SeedSequence([seed, instance_index, episode]).generate_state(2, dtype=np.uint32)
    return int(state[0]), int(state[1])


def reserved_load(instance: Instance) -> np.ndarray:
    """(K, T) reserved demand spread over each window in proportion to capacity (sums to the demands)."""
    res = instance.reserved
    load = np.zeros_like(instance.capacity)
    for i in range(len(res)):
        k, a, b = int(res.server[i]), int(res.start[i]), int(res.end[i])
        window = instance.capacity[k, a : b + 1]
        load[k, a : b + 1] += res.demand[i] * window / window.sum()
    return load


def rollout(env: gym.Env, policy: Any, *, seed: int, policy_seed: int) -> dict[str, Any]:
    """One episode: final info, per-slot profit and retraining work (T,), and each decision's act() time."""
    obs, info = env.reset(seed=seed)
    policy.reset(env, seed=policy_seed)
    inst: Instance = env.unwrapped.instance
    horizon, num_profiles = inst.horizon, inst.num_profiles
    profit = np.zeros(horizon)
    work = np.zeros(horizon)
    act_seconds = []
    done = False
    while not done:
        t = int(info["time"])
        start = perf_counter()
        action = policy.act(obs, info)
        act_seconds.append(perf_counter() - start)
        obs, reward, terminated, truncated, info = env.step(action)
        profit[t] += reward
        duration = int(info["duration"])
        if duration > 0:
            server = (int(action) - 1) // num_profiles
            end = min(t + duration, horizon)
            work[t:end] += inst.capacity[server, t:end]
        done = terminated or truncated
    return {"info": info, "profit": profit, "work": work, "act_seconds": act_seconds}


def evaluate_policies(
    env_kwargs: dict,
    policies: list[str],
    *,
    instances: int,
    episodes: int,
    seed: int,
    out_dir: Path,
    progress: bool = True,
    policy_kwargs: dict[str, dict[str, Any]] | None = None,
    plots: bool = True,
) -> list[dict]:
    """Evaluate ``policies`` (registered names or training run folders) on UEC-v0; one summary row each.

    Columns: policy, profit_mean, profit_ci95 (95 % CI half-width over all episodes), lp_bound (mean
    OPT(LP) over instances), value_bound (mean Σ_k B_k(1)), competitive_ratio (profit_mean / lp_bound),
    vs_best_baseline (profit_mean / best baseline's profit_mean), uec_utilisation, accepted,
    invalid_actions, reserved_met (share of episodes meeting every reserved task), decision_us (median
    act() time), decisions_per_s. Writes ``uec_episodes.csv``, ``uec_over_time.csv`` and, with ``plots``,
    ``uec_profit.png`` and ``uec_over_time.png`` into ``out_dir``.
    """
    from offline.registry import resolve_policy

    for name, value in (("instances", instances), ("episodes", episodes)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name}={value!r} is invalid: expected an integer >= 1")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed={seed!r} is invalid: expected an integer >= 0")
    if not policies:
        raise ValueError("policies is empty: name at least one policy")
    policy_kwargs = dict(policy_kwargs or {})
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    kwargs = dict(env_kwargs or {})
    kwargs["resample_instance"] = False

    records: list[dict[str, Any]] = []
    series: dict[str, dict[str, np.ndarray]] = {}
    bounds: list[tuple[float, float]] = []
    act_times: dict[str, list[float]] = {name: [] for name in policies}
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=instances * episodes * len(policies), desc=ENV_ID, unit="ep", leave=False)
    for i in range(instances):
        env = gym.make(ENV_ID, **{**kwargs, "instance_seed": seed + i})
        inst: Instance = env.unwrapped.instance
        solution = rescue_solution(inst)
        bounds.append((solution.lp_bound, solution.value_bound))
        uec = np.cumsum((inst.capacity - reserved_load(inst)).sum(axis=0))
        made = {name: resolve_policy(ENV_ID, name, env, **policy_kwargs.get(name, {})) for name in policies}
        for name, policy in made.items():
            acc = series.setdefault(name, {"profit": 0.0, "work": 0.0, "count": 0})
            for e in range(episodes):
                env_seed, pol_seed = episode_seeds(seed, i, e)
                out = rollout(env, policy, seed=env_seed, policy_seed=pol_seed)
                info = out["info"]
                act_times[name] += out["act_seconds"]
                acc["profit"] = acc["profit"] + np.cumsum(out["profit"])
                acc["work"] = acc["work"] + np.cumsum(out["work"]) / np.maximum(uec, 1e-12)
                acc["count"] += 1
                records.append(
                    {
                        "policy": name,
                        "instance": i,
                        "episode": e,
                        "seed": env_seed,
                        "profit": float(info["episode_profit"]),
                        "lp_bound": solution.lp_bound,
                        "value_bound": solution.value_bound,
                        "uec_utilisation": float(info["uec_utilisation"]),
                        "accepted": int(info["accepted"]),
                        "rejected": int(info["rejected"]),
                        "invalid_actions": int(info["invalid_actions"]),
                        "reserved_met": bool(info["reserved_completed"] == info["reserved_total"]),
                        "decisions": len(out["act_seconds"]),
                        "act_seconds_total": float(np.sum(out["act_seconds"])),
                        "act_seconds_median": float(np.median(out["act_seconds"])),
                    }
                )
                if bar is not None:
                    bar.update(1)
        env.close()
    if bar is not None:
        bar.close()

    lp_bound = float(np.mean([b[0] for b in bounds]))
    value_bound = float(np.mean([b[1] for b in bounds]))
    rows = []
    for name in policies:
        recs = [r for r in records if r["policy"] == name]
        mean, half = mean_ci95([r["profit"] for r in recs])
        decisions = sum(r["decisions"] for r in recs)
        act_total = sum(r["act_seconds_total"] for r in recs)
        rows.append(
            {
                "policy": name,
                "profit_mean": mean,
                "profit_ci95": half,
                "lp_bound": lp_bound,
                "value_bound": value_bound,
                "competitive_ratio": mean / lp_bound if lp_bound > 0 else float("nan"),
                "vs_best_baseline": float("nan"),
                "uec_utilisation": float(np.mean([r["uec_utilisation"] for r in recs])),
                "accepted": float(np.mean([r["accepted"] for r in recs])),
                "invalid_actions": float(np.mean([r["invalid_actions"] for r in recs])),
                "reserved_met": float(np.mean([r["reserved_met"] for r in recs])),
                "decision_us": float(np.median(act_times[name]) * 1e6),
                "decisions_per_s": decisions / act_total if act_total > 0 else float("inf"),
            }
        )
    baseline_profits = [row["profit_mean"] for row in rows if row["policy"] in BASELINE_NAMES]
    if baseline_profits and max(baseline_profits) > 0:
        best = max(baseline_profits)
        for row in rows:
            row["vs_best_baseline"] = row["profit_mean"] / best

    _write_csv(out_dir / "uec_episodes.csv", records)
    horizon = next(iter(series.values()))["profit"].size
    over_time = []
    for t in range(horizon):
        row: dict[str, Any] = {"slot": t}
        for name, acc in series.items():
            row[f"{name}:cumulative_profit"] = float(acc["profit"][t] / acc["count"])
            row[f"{name}:uec_utilisation"] = float(acc["work"][t] / acc["count"])
        over_time.append(row)
    _write_csv(out_dir / "uec_over_time.csv", over_time)
    if plots:
        plot_profit(rows, out_dir / "uec_profit.png")
        plot_over_time(series, lp_bound, out_dir / "uec_over_time.png")
    return rows


def _write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_profit(rows: list[dict[str, Any]], path: Path) -> None:
    """Bars of mean profit (95 % CI) per policy, with OPT(LP) and Σ_k B_k(1) as lines."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    names = [Path(r["policy"]).name for r in rows]
    ax.bar(names, [r["profit_mean"] for r in rows], yerr=[r["profit_ci95"] for r in rows], capsize=4, color="tab:blue")
    ax.axhline(rows[0]["lp_bound"], color="tab:red", ls="--", label="OPT(LP)")
    ax.axhline(rows[0]["value_bound"], color="tab:green", ls=":", label=r"$\sum_k B_k(1)$")
    ax.set_ylabel("profit per episode")
    ax.set_title("UEC-v0: mean realised profit (95 % CI)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_over_time(series: dict[str, dict[str, Any]], lp_bound: float, path: Path) -> None:
    """Fig. 5: cumulative profit and time-averaged UEC utilisation over the horizon, per policy."""
    plt = _pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for name, acc in series.items():
        slots = np.arange(1, acc["profit"].size + 1)
        left.plot(slots, acc["profit"] / acc["count"], label=Path(name).name)
        right.plot(slots, acc["work"] / acc["count"], label=Path(name).name)
    left.axhline(lp_bound, color="k", ls="--", lw=1, label="OPT(LP)")
    left.set(xlabel="slot", ylabel="cumulative profit", title="cumulative profit")
    right.set(xlabel="slot", ylabel="retraining work / UEC capacity so far", title="UEC utilisation")
    left.legend(fontsize=8)
    right.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
