"""ASET's evaluation hooks for :func:`offline.runner.evaluate` (contract 3): ``HOOK`` (ASET-v0), ``HOOK_V1`` (ASET-v1).

Instance i is ``ASETEnv(instance_seed=seed + i)`` (``ASETEnvV1`` for v1); episode e of instance i is reset with
``offline.protocol.episode_seed(seed, i, e)`` for every policy. Each episode's query counts are summed
over its windows (:class:`offline.aset.policies.EpisodeTally`, the per-step tally). ``best_static_hindsight``
is computed from the seven static policies' own episodes (the best success rate per episode; they are
run when it is requested), the same numbers as playing the policy, without the extra simulation.

Rows: success / failed / rejected rates of the queries (each episode's query-weighted fraction, then mean
and 95 % CI half-width over all episodes), the success rate per application class, and the mean
episode length in windows. ``per_episode.csv`` also has ``share_<policy>``: the share of the episode's
windows in which each static policy was played (what a learner actually does). Files: ``per_episode.csv`` and ``success_over_time.csv`` (mean success
fraction per window index).
"""

from __future__ import annotations

import csv
import pathlib
from typing import Any

import gymnasium as gym
import numpy as np

from envs.aset.env import ASETEnv, ASETEnvV1
from envs.aset.types import POLICY_NAMES
from offline.aset.policies import ENV_ID, HINDSIGHT, EpisodeTally
from offline.protocol import run_episode
from offline.runner import Entry, EvaluationHook, Resolver, Run, evaluate, group_by_policy
from offline.stats import mean_ci95

RATE_COLUMNS = ("success_rate", "failed_rate", "rejected_rate")

#: What ``python evaluate.py env=aset-v0`` runs when policies / instances / episodes are not given.
DEFAULT_EVALUATION: dict[str, Any] = {
    "policies": [*POLICY_NAMES, "random_switch", "periodic_switch", HINDSIGHT],
    "instances": 2,
    "episodes": 2,
}


class ASETHook(EvaluationHook):
    """ASET's parts of :func:`offline.runner.evaluate` (see the module docstring), for one env version."""
    key_columns = {
        'success_rate': 'share of queries answered in time',
        'success_rate_ci95': 'its 95 % CI half-width',
        'failed_rate': 'answered too late',
        'rejected_rate': 'no feasible worker',
        'windows': 'windows per episode',
    }

    env_id = ENV_ID
    score_metric = "success_rate"
    higher_is_better = True
    default_evaluation = DEFAULT_EVALUATION
    episodes_csv = "per_episode.csv"

    def __init__(self, env_cls: type[ASETEnv] = ASETEnv) -> None:
        super().__init__(env_cls.env_id)
        self.env_cls = env_cls

    def prepare(self, run: Run) -> None:
        run.env_kwargs = {k: v for k, v in run.env_kwargs.items() if k != "instance_seed"}
        run.state.update(curves={}, app_names=())

    def entries(self, run: Run) -> list[Entry]:
        """The requested policies except ``best_static_hindsight``, plus the static ones it needs."""
        names = list(dict.fromkeys(p for p in run.policies if p != HINDSIGHT))
        if HINDSIGHT in run.policies:
            names += [p for p in POLICY_NAMES if p not in names]
        return [Entry(name, name, dict(run.policy_kwargs.get(name, {}))) for name in names]

    def make_env(self, run: Run, instance: int, entry: Entry) -> gym.Env:
        env = self.env_cls(**run.env_kwargs, instance_seed=run.instance_seed(instance))
        run.state["app_names"] = env.instance.app_names
        return env

    def play(self, run: Run, env: gym.Env, policy: Any, entry: Entry, instance: int, episode: int,
             context: Any) -> dict[str, Any]:
        inst = env.unwrapped.instance
        tally = EpisodeTally(inst.num_apps)
        reset_seed = self.seeds(run, instance, episode)[0]
        result = run_episode(env, policy, seed=reset_seed, on_step=tally)
        run.state["curves"].setdefault(entry.name, []).append(tally.window_success)
        return {"policy": entry.name, "instance": instance, "episode": episode, "seed": reset_seed,
                **tally.metrics(inst.app_names),
                "return": result.total_reward}

    def episode_rows(self, run: Run, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Grouped by policy (run order), then ``best_static_hindsight``'s rows with their ``best_policy``."""
        per_episode = group_by_policy(records)
        if HINDSIGHT in run.policies:
            hindsight = []
            for j in range(run.instances * run.episodes):
                best = max(POLICY_NAMES, key=lambda p: per_episode[p][j]["success_rate"])
                hindsight.append({**per_episode[best][j], "policy": HINDSIGHT, "best_policy": best})
            per_episode[HINDSIGHT] = hindsight
        return [row for rows in per_episode.values() for row in rows]

    def summary_rows(self, run: Run, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        per_episode = group_by_policy(records)
        return [_summary_row(name, per_episode[name], run.state["app_names"]) for name in run.policies]

    def finish(self, run: Run, rows: list[dict[str, Any]], records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        curves = run.state["curves"]
        _write_curves(run.out_dir / "success_over_time.csv", curves, [p for p in run.policies if p in curves])
        return rows


#: ASET-v0's and ASET-v1's evaluation hooks (``Problem.evaluation``).
HOOK = ASETHook(ASETEnv)
HOOK_V1 = ASETHook(ASETEnvV1)


def evaluate_policies(
    env_kwargs: dict,
    policies: list[str],
    *,
    instances: int,
    episodes: int,
    seed: int,
    out_dir: pathlib.Path,
    progress: bool = True,
    resolve: Resolver | None = None,
    env_id: str = ENV_ID,
    policy_kwargs: dict[str, dict[str, Any]] | None = None,
) -> list[dict]:
    """Run every policy on the same instances (seeds seed, seed+1, ...) and episode seeds
    (:func:`offline.runner.evaluate`) of ``env_id`` (ASET-v0 or ASET-v1); one row per policy (see the
    module docstring); ``policy_kwargs`` maps a name to its factory kwargs (e.g. periodic_switch's sequence)."""
    return evaluate(env_id, env_kwargs, policies, instances=instances, episodes=episodes, seed=seed,
                    out_dir=out_dir, progress=progress, resolve=resolve, policy_kwargs=policy_kwargs)


def _summary_row(name: str, episodes: list[dict[str, float]], app_names: tuple[str, ...]) -> dict[str, Any]:
    row: dict[str, Any] = {"policy": name}
    for col in (*RATE_COLUMNS, *(f"success_{a}" for a in app_names)):
        values = np.array([ep[col] for ep in episodes], dtype=float)
        values = values[np.isfinite(values)]
        mean, half = mean_ci95(values) if values.size else (float("nan"), float("nan"))
        row[col] = mean
        row[f"{col}_ci95"] = half
    row["windows"] = float(np.mean([ep["windows"] for ep in episodes]))
    return row


def _write_curves(path: pathlib.Path, curves: dict[str, list[list[float]]], names: list[str]) -> None:
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["policy", "window", "success_mean", "episodes_alive"])
        for name in names:
            longest = max((len(c) for c in curves[name]), default=0)
            for t in range(longest):
                vals = [c[t] for c in curves[name] if len(c) > t]
                writer.writerow([name, t, float(np.mean(vals)), len(vals)])
