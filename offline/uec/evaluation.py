"""UEC-v0's evaluation hook for :func:`offline.runner.evaluate` (contract 3), plots, and the LP bound.

Instance i is built with ``instance_seed = seed + i`` (what ``UECEnv`` would draw); episode e of instance i
is reset with the same seed for every policy (common random numbers: the same arrivals and the same
duration uniforms, :func:`episode_seeds`), and each policy's own randomness is seeded identically across
policies. The summary reports, per policy, the mean realised profit with its 95 % CI, OPT(LP) and
Σ_k B_k(1) of RESCUE's offline stage, the empirical competitive ratio (profit_mean / lp_bound), the ratio
to the best baseline, the UEC utilisation and the median decision time; the files are per-episode CSV
rows, the per-slot series and plots (profit per policy; cumulative profit and UEC utilisation over time,
as in the paper's Fig. 5).

:class:`LPBound` is UEC-v0's ``Problem.episode_bound`` (OPT(LP) for the learning curves).
"""

from __future__ import annotations

import logging
from pathlib import Path
from time import perf_counter
from typing import Any

import gymnasium as gym
import numpy as np

from envs.uec.types import Instance
from offline.protocol import policy_env
from offline.runner import Entry, EvaluationHook, Resolver, Run, evaluate, group_by_policy, pyplot, write_csv
from offline.stats import mean_ci95
from offline.uec.values import rescue_solution

log = logging.getLogger(__name__)

ENV_ID = "UEC-v0"
#: The paper's baselines (Section VI-A); ``vs_best_baseline`` divides by the best of those evaluated.
BASELINE_NAMES: tuple[str, ...] = ("pickconfigs", "srs", "sumita", "cvs", "random")
#: What ``python evaluate.py env=uec-v0`` runs when the command line does not say.
DEFAULT_EVALUATION: dict[str, Any] = {
    "policies": ["rescue", "rescue_fallback", *BASELINE_NAMES],
    "instances": 4,
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
    policy.reset(policy_env(env, policy), seed=policy_seed)
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


class UECHook(EvaluationHook):
    """UEC-v0's parts of :func:`offline.runner.evaluate` (see the module docstring)."""
    key_columns = {
        'profit_mean': 'mean profit per episode',
        'profit_ci95': 'its 95 % CI half-width',
        'competitive_ratio': 'profit / OPT(LP)',
        'vs_best_baseline': "profit / the best paper baseline's",
        'uec_utilisation': 'share of UEC capacity used',
        'preemptions': 'tasks stopped by reserved work per episode',
        'decision_us': 'median µs per decision',
    }

    env_id = ENV_ID
    score_metric = "profit_mean"
    higher_is_better = True
    default_evaluation = DEFAULT_EVALUATION
    episodes_csv = "uec_episodes.csv"
    options = {"plots": True}

    def prepare(self, run: Run) -> None:
        run.env_kwargs = {**run.env_kwargs, "resample_instance": False}
        run.state.update(series={}, bounds=[], act_times={name: [] for name in run.policies})

    def make_env(self, run: Run, instance: int, entry: Entry) -> gym.Env:
        return gym.make(ENV_ID, **{**run.env_kwargs, "instance_seed": run.instance_seed(instance)})

    def seeds(self, run: Run, instance: int, episode: int) -> tuple[int, int]:
        return episode_seeds(run.seed, instance, episode)

    def instance_context(self, run: Run, instance: int, env: gym.Env) -> dict[str, Any]:
        """RESCUE's offline stage on the instance (OPT(LP), Σ_k B_k(1)) and its cumulative UEC capacity."""
        inst: Instance = env.unwrapped.instance
        solution = rescue_solution(inst)
        run.state["bounds"].append((solution.lp_bound, solution.value_bound))
        uec = np.cumsum((inst.capacity - reserved_load(inst)).sum(axis=0))
        return {"solution": solution, "uec": uec}

    def play(self, run: Run, env: gym.Env, policy: Any, entry: Entry, instance: int, episode: int,
             context: dict[str, Any]) -> dict[str, Any]:
        name, solution, uec = entry.name, context["solution"], context["uec"]
        env_seed, pol_seed = self.seeds(run, instance, episode)
        out = rollout(env, policy, seed=env_seed, policy_seed=pol_seed)
        info = out["info"]
        run.state["act_times"][name] += out["act_seconds"]
        acc = run.state["series"].setdefault(name, {"profit": 0.0, "work": 0.0, "count": 0})
        acc["profit"] = acc["profit"] + np.cumsum(out["profit"])
        acc["work"] = acc["work"] + np.cumsum(out["work"]) / np.maximum(uec, 1e-12)
        acc["count"] += 1
        return {
            "policy": name,
            "instance": instance,
            "episode": episode,
            "seed": env_seed,
            "profit": float(info["episode_profit"]),
            "lp_bound": solution.lp_bound,
            "value_bound": solution.value_bound,
            "uec_utilisation": float(info["uec_utilisation"]),
            "accepted": int(info["accepted"]),
            "rejected": int(info["rejected"]),
            "invalid_actions": int(info["invalid_actions"]),
            "preemptions": int(info["preemptions"]),
            "reserved_met": bool(info["reserved_completed"] == info["reserved_total"]),
            "decisions": len(out["act_seconds"]),
            "act_seconds_total": float(np.sum(out["act_seconds"])),
            "act_seconds_median": float(np.median(out["act_seconds"])),
        }

    def summary_rows(self, run: Run, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        bounds = run.state["bounds"]
        lp_bound = float(np.mean([b[0] for b in bounds]))
        value_bound = float(np.mean([b[1] for b in bounds]))
        run.state["lp_bound"] = lp_bound
        by_name = group_by_policy(records)
        rows = []
        for name in run.policies:
            recs = by_name[name]
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
                    "competitive_ratio_ci95": half / lp_bound if lp_bound > 0 else float("nan"),
                    "value_ratio": value_bound / lp_bound if lp_bound > 0 else float("nan"),
                    "vs_value_bound": mean / value_bound if value_bound > 0 else float("nan"),
                    "vs_best_baseline": float("nan"),
                    "vs_rescue": float("nan"),
                    "uec_utilisation": float(np.mean([r["uec_utilisation"] for r in recs])),
                    "accepted": float(np.mean([r["accepted"] for r in recs])),
                    "invalid_actions": float(np.mean([r["invalid_actions"] for r in recs])),
                    "preemptions": float(np.mean([r["preemptions"] for r in recs])),
                    "reserved_met": float(np.mean([r["reserved_met"] for r in recs])),
                    "decision_us": float(np.median(run.state["act_times"][name]) * 1e6),
                    "decisions_per_s": decisions / act_total if act_total > 0 else float("inf"),
                }
            )
        return rows

    def finish(self, run: Run, rows: list[dict[str, Any]], records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``vs_best_baseline``, ``uec_over_time.csv`` and (option ``plots``) the two figures."""
        baseline_profits = [row["profit_mean"] for row in rows if row["policy"] in BASELINE_NAMES]
        if baseline_profits and max(baseline_profits) > 0:
            best = max(baseline_profits)
            for row in rows:
                row["vs_best_baseline"] = row["profit_mean"] / best
        rescue = [row["profit_mean"] for row in rows if row["policy"] == "rescue"]
        if rescue and rescue[0] > 0:
            for row in rows:
                row["vs_rescue"] = row["profit_mean"] / rescue[0]
        series = run.state["series"]
        horizon = next(iter(series.values()))["profit"].size
        over_time = []
        for t in range(horizon):
            row: dict[str, Any] = {"slot": t}
            for name, acc in series.items():
                row[f"{name}:cumulative_profit"] = float(acc["profit"][t] / acc["count"])
                row[f"{name}:uec_utilisation"] = float(acc["work"][t] / acc["count"])
            over_time.append(row)
        write_csv(run.out_dir / "uec_over_time.csv", over_time)
        if run.options["plots"]:
            plot_profit(rows, run.out_dir / "uec_profit.png")
            plot_over_time(series, run.state["lp_bound"], run.out_dir / "uec_over_time.png")
        return rows


#: UEC-v0's evaluation hook (``Problem.evaluation``).
HOOK = UECHook()


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
    resolve: Resolver | None = None,
) -> list[dict]:
    """Evaluate ``policies`` on UEC-v0 (:func:`offline.runner.evaluate`); one summary row each.

    Columns: policy, profit_mean, profit_ci95 (95 % CI half-width over all episodes), lp_bound (mean
    OPT(LP) over instances), value_bound (mean Σ_k B_k(1)), competitive_ratio (profit_mean / lp_bound) and
    its CI half-width, value_ratio (value_bound / lp_bound: RESCUE's expected share of OPT(LP), Theorem 1
    says ≥ ½), vs_value_bound (profit_mean / value_bound: for RESCUE, realised over expected),
    vs_best_baseline (profit_mean / best baseline's profit_mean), vs_rescue (profit_mean / RESCUE's, when
    rescue is evaluated), uec_utilisation, accepted, invalid_actions, preemptions (mean per episode: tasks
    stopped without profit because reserved work reclaimed their server), reserved_met (share of episodes meeting every reserved task), decision_us (median
    act() time), decisions_per_s. Writes ``uec_episodes.csv``, ``uec_over_time.csv`` and, with ``plots``,
    ``uec_profit.png`` and ``uec_over_time.png`` into ``out_dir``.
    """
    return evaluate(ENV_ID, env_kwargs, policies, instances=instances, episodes=episodes, seed=seed,
                    out_dir=out_dir, progress=progress, resolve=resolve, policy_kwargs=policy_kwargs, plots=plots)


class LPBound:
    """OPT(P1-LP) of the UEC-v0 instance an episode ran on (RESCUE's upper bound, uec.md item 4).

    ``Problem.episode_bound`` of UEC-v0: the learning curves' ``env/competitive_ratio`` = realised profit
    / OPT(LP). Solved once per instance and cached, so it costs one LP per instance. Returns None (ratio
    not logged) if the LP fails.
    """

    def __init__(self) -> None:
        self._cache: list[tuple[Any, float | None]] = []

    def __call__(self, env: gym.Env) -> float | None:
        instance = getattr(env.unwrapped, "instance", None)
        if instance is None:
            return None
        for cached, value in self._cache:
            if cached is instance:
                return value
        try:
            value: float | None = float(rescue_solution(instance).lp_bound)  # cached, shared with RESCUE
        except Exception as err:  # the bound is a nicety: never stop training for it
            log.warning("competitive ratio not logged: the UEC LP bound failed (%s)", err)
            value = None
        self._cache = [*self._cache[-7:], (instance, value)]
        return value


def plot_profit(rows: list[dict[str, Any]], path: Path) -> None:
    """Bars of mean profit (95 % CI) per policy, with OPT(LP) and Σ_k B_k(1) as lines."""
    plt = pyplot()
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
    plt = pyplot()
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
