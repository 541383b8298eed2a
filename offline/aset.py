"""Non-learning policies for ASET-v0 and its evaluation function (contract 3).

Registered for "ASET-v0":

* ``closest``, ``load_balancing``, ``farthest``, ``cheaper``, ``random_latency``, ``random_load``,
  ``least_impedance``: that static policy held for the whole episode (paper Section III-C);
* ``random_switch``: a uniformly random static policy in every window;
* ``periodic_switch``: a fixed cycle of static policies, by default (least_impedance, least_impedance,
  farthest): a hand-found, non-adaptive reference showing how much mere mixing of two static
  policies gains (see README, section ASET).

* ``best_static_hindsight``: per episode, the best of the seven static policies on that same episode
  (an upper bound no single static policy reaches). As a policy it replays the episode seed with each
  static policy on a copy of the env at reset (7x the cost); ``evaluate_policies`` computes it from
  the static policies' own episodes instead (same numbers, no extra simulation).
"""

from __future__ import annotations

import csv
import pathlib
from collections import defaultdict
from typing import Any

import gymnasium as gym
import numpy as np

from envs.aset.env import ASETEnv
from envs.aset.types import POLICY_NAMES
from offline.protocol import episode_seed, run_episode
from offline.registry import register_policy, resolve_policy
from offline.stats import mean_ci95

ENV_ID = "ASET-v0"
HINDSIGHT = "best_static_hindsight"
RATE_COLUMNS = ("success_rate", "failed_rate", "rejected_rate")

#: What ``python evaluate.py env=aset-v0`` runs when policies / instances / episodes are not given.
DEFAULT_EVALUATION: dict[str, Any] = {
    "policies": [*POLICY_NAMES, "random_switch", "periodic_switch", HINDSIGHT],
    "instances": 2,
    "episodes": 2,
}


class StaticPolicy:
    """Always the same static scheduling policy (one of the seven actions)."""

    def __init__(self, index: int) -> None:
        self.index = int(index)
        self.name = POLICY_NAMES[self.index]

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        """Nothing to prepare: the choice never changes."""

    def act(self, obs: Any, info: dict[str, Any]) -> int:
        return self.index


class RandomSwitchPolicy:
    """A uniformly random static policy in every window (the paper's random-switching baseline)."""

    name = "random_switch"

    def __init__(self) -> None:
        self._rng = np.random.default_rng()

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        self._rng = np.random.default_rng(seed)

    def act(self, obs: Any, info: dict[str, Any]) -> int:
        return int(self._rng.integers(len(POLICY_NAMES)))


def _register_static(index: int) -> None:
    @register_policy(ENV_ID, POLICY_NAMES[index])
    def factory(env: gym.Env, **kwargs: Any) -> StaticPolicy:
        return StaticPolicy(index)


for _index in range(len(POLICY_NAMES)):
    _register_static(_index)


@register_policy(ENV_ID, "random_switch")
def _random_switch(env: gym.Env, **kwargs: Any) -> RandomSwitchPolicy:
    return RandomSwitchPolicy()


class PeriodicSwitchPolicy:
    """Cycles through a fixed sequence of static policies, one per window (no state is read)."""

    name = "periodic_switch"

    def __init__(self, sequence: tuple[str | int, ...] = ("least_impedance", "least_impedance", "farthest")) -> None:
        if len(sequence) == 0:
            raise ValueError(f"sequence=() is invalid: expected a non-empty list of {list(POLICY_NAMES)}")
        self.sequence = [POLICY_NAMES.index(p) if isinstance(p, str) and p in POLICY_NAMES else p for p in sequence]
        for p in self.sequence:
            if not isinstance(p, (int, np.integer)) or not 0 <= p < len(POLICY_NAMES):
                raise ValueError(f"sequence entry {p!r} is invalid: expected one of {list(POLICY_NAMES)} or 0..6")
        self._t = 0

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        self._t = 0

    def act(self, obs: Any, info: dict[str, Any]) -> int:
        action = int(self.sequence[self._t % len(self.sequence)])
        self._t += 1
        return action


class BestStaticHindsightPolicy:
    """Plays the static policy with the best success rate on this very episode (reads the future).

    At reset it runs each of the seven static policies on a copy of ``env`` (same instance, same reset
    seed, so the same arrivals) and then holds the best one. Needs the episode's reset seed.
    """

    name = HINDSIGHT

    def __init__(self) -> None:
        self.choice = 0
        self.success_by_policy: dict[str, float] = {}

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        if seed is None:
            raise ValueError("seed=None is invalid for best_static_hindsight: expected the episode's reset seed")
        base = env.unwrapped
        copy = ASETEnv(**base.init_kwargs)
        options = {"instance": base.instance}
        for index, name in enumerate(POLICY_NAMES):
            tally = _EpisodeTally(base.instance.num_apps)
            run_episode(copy, StaticPolicy(index), seed=seed, options=options, on_step=tally)
            self.success_by_policy[name] = tally.metrics(base.instance.app_names)["success_rate"]
        self.choice = POLICY_NAMES.index(max(POLICY_NAMES, key=self.success_by_policy.__getitem__))

    def act(self, obs: Any, info: dict[str, Any]) -> int:
        return self.choice


@register_policy(ENV_ID, HINDSIGHT)
def _best_static_hindsight(env: gym.Env, **kwargs: Any) -> BestStaticHindsightPolicy:
    return BestStaticHindsightPolicy()


@register_policy(ENV_ID, "periodic_switch")
def _periodic_switch(env: gym.Env, **kwargs: Any) -> PeriodicSwitchPolicy:
    return PeriodicSwitchPolicy(**kwargs)


# ------------------------------------------------------------------------------------ evaluation
class _EpisodeTally:
    """Query counts of one episode, summed over its windows from the step infos."""

    def __init__(self, num_apps: int) -> None:
        self.queries = 0.0
        self.succeeded = 0.0
        self.failed = 0.0
        self.rejected = 0.0
        self.app_queries = np.zeros(num_apps)
        self.app_succeeded = np.zeros(num_apps)
        self.window_success: list[float] = []

    def __call__(self, info: dict[str, Any]) -> None:
        q = float(info["queries"])
        self.queries += q
        self.succeeded += info["success"] * q
        self.failed += info["failed"] * q
        self.rejected += info["rejected"] * q
        self.app_queries += info["class_queries"]
        self.app_succeeded += info["class_success"] * info["class_queries"]
        self.window_success.append(float(info["success"]))

    def metrics(self, app_names: tuple[str, ...]) -> dict[str, float]:
        denom = self.queries if self.queries > 0 else 1.0
        out = {
            "success_rate": self.succeeded / denom if self.queries > 0 else 1.0,
            "failed_rate": self.failed / denom,
            "rejected_rate": self.rejected / denom,
            "windows": float(len(self.window_success)),
        }
        for a, name in enumerate(app_names):
            q = self.app_queries[a]
            out[f"success_{name}"] = self.app_succeeded[a] / q if q > 0 else float("nan")
        return out


def evaluate_policies(
    env_kwargs: dict,
    policies: list[str],
    *,
    instances: int,
    episodes: int,
    seed: int,
    out_dir: pathlib.Path,
    progress: bool = True,
) -> list[dict]:
    """Run every policy on the same instances (seeds seed, seed+1, ...) and episode seeds.

    Returns one row per policy: success / failed / rejected rates of the queries (each episode's
    query-weighted fraction, then mean and 95 % CI half-width over all episodes), the success rate per
    application class, and the mean episode length in windows. Writes ``per_episode.csv`` and
    ``success_over_time.csv`` (mean success fraction per window index) into ``out_dir``.
    """
    if instances < 1 or episodes < 1:
        raise ValueError(f"instances={instances}, episodes={episodes} are invalid: expected integers >= 1")
    if not policies:
        raise ValueError("policies=[] is invalid: expected at least one policy name or run folder")
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    run_names = list(dict.fromkeys(p for p in policies if p != HINDSIGHT))
    if HINDSIGHT in policies:
        run_names += [p for p in POLICY_NAMES if p not in run_names]
    kwargs = {k: v for k, v in dict(env_kwargs).items() if k != "instance_seed"}

    per_episode: dict[str, list[dict[str, float]]] = defaultdict(list)
    curves: dict[str, list[list[float]]] = defaultdict(list)
    total = instances * episodes * len(run_names)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=total, desc="ASET episodes", leave=False)
    app_names: tuple[str, ...] = ()
    for i in range(instances):
        env = ASETEnv(**kwargs, instance_seed=seed + i)
        app_names = env.instance.app_names
        for name in run_names:
            policy = resolve_policy(ENV_ID, name, env)
            for e in range(episodes):
                tally = _EpisodeTally(env.instance.num_apps)
                result = run_episode(env, policy, seed=episode_seed(seed, i, e), on_step=tally)
                row = {"instance": i, "episode": e, **tally.metrics(app_names), "return": result.total_reward}
                per_episode[name].append(row)
                curves[name].append(tally.window_success)
                if bar is not None:
                    bar.update(1)
        env.close()
    if bar is not None:
        bar.close()

    if HINDSIGHT in policies:
        n_ep = instances * episodes
        for j in range(n_ep):
            best = max(POLICY_NAMES, key=lambda p: per_episode[p][j]["success_rate"])
            per_episode[HINDSIGHT].append({**per_episode[best][j], "best_policy": best})

    rows = [_summary_row(name, per_episode[name], app_names) for name in policies]
    _write_per_episode(out_dir / "per_episode.csv", per_episode, list(per_episode))
    _write_curves(out_dir / "success_over_time.csv", curves, [p for p in policies if p in curves])
    return rows


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


def _write_per_episode(path: pathlib.Path, per_episode: dict[str, list[dict]], names: list[str]) -> None:
    rows = [{"policy": n, **ep} for n in names for ep in per_episode[n]]
    if not rows:
        return
    columns = list(dict.fromkeys(k for r in rows for k in r))
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)


def _write_curves(path: pathlib.Path, curves: dict[str, list[list[float]]], names: list[str]) -> None:
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["policy", "window", "success_mean", "episodes_alive"])
        for name in names:
            longest = max((len(c) for c in curves[name]), default=0)
            for t in range(longest):
                vals = [c[t] for c in curves[name] if len(c) > t]
                writer.writerow([name, t, float(np.mean(vals)), len(vals)])
