"""Non-anticipative online reference for ASET-v0 / ASET-v1: rollout over sampled arrivals (``aset_rollout``).

``LookaheadOracle`` (``offline.aset.policies``) is a clairvoyant rollout: it simulates each candidate on a deep copy
of the env, so it sees the very arrivals the episode will bring. ``aset_rollout`` is its non-anticipative version
(Bertsekas' rollout, design/examples.md): every window it simulates each of the seven actions, followed by a base
policy, for ``horizon`` windows on ``samples`` forks of the env (``ASETEnv.fork``: the present streams and clock,
with the arrivals to come and the live streams' remaining lifetimes redrawn from the instance's distributions by
the policy's own rng). Every action is scored on the same forks (common random numbers), and the action with the
best query-weighted success over them is played. By default it is a parallel rollout over two bases
(``threshold_switch`` and the ``periodic_switch`` cycle; an action is worth what the better one makes of it). It
sees the instance, the present state and the past only. Measured in docs/envs/aset.md ("Online references").
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from envs.aset.types import POLICY_NAMES
from offline.aset.heuristics import (
    LEAST_IMPEDANCE,
    THRESHOLD_DEFAULTS,
    THRESHOLD_SWITCH,
    ThresholdSwitchPolicy,
)
from offline.aset.policies import ENV_IDS, PeriodicSwitchPolicy, simulate_windows
from offline.ladder_spec import tuned_params
from offline.registry import register_policy

ASET_ROLLOUT = "aset_rollout"
#: The base policies a rollout may follow after its first window.
BASES: tuple[str, ...] = ("threshold_switch", "periodic_switch", "both")
#: Defaults, chosen on the tuning instances 900.. only (offline.partition.tuning_set; see docs/envs/aset.md).
ROLLOUT_DEFAULTS: dict[str, Any] = {"horizon": 3, "samples": 10, "base": "both", "min_gain": 0.002,
                                    "actions": ("least_impedance", "farthest", "random_load", "load_balancing")}


def _check_int(name: str, value: Any, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not low <= value <= high:
        raise ValueError(f"{name}={value!r} is invalid: expected an integer in [{low}, {high}]")
    return int(value)


class AsetRolloutPolicy:
    """Rollout over sampled futures: each window, the action whose next ``horizon`` windows (the action, then
    ``base``) succeed best on average over ``samples`` forks of the env (module docstring). Non-anticipative:
    the forks' futures come from the policy's rng (seeded by ``reset(env, seed)``), never from the episode's.

    ``base``: "threshold_switch" (the tuned adaptive rule, its relief counter continued from the actions actually
    played), "periodic_switch" (the tuned cycle, at the position it has in the episode) or
    "both" (parallel rollout: each action scored by the better of the two bases, so it follows whichever base suits
    the load: threshold_switch was tuned at lambda = 60, the cycle is the strongest at 100). ``actions``: the
    candidate first actions (the base's own action is always one); ``min_gain``: how much better (success rate)
    another action must look than the base's to be played. Cost: candidates x bases x ``samples`` x ``horizon``
    simulated windows a decision.
    """

    name = ASET_ROLLOUT

    def __init__(self, horizon: int = ROLLOUT_DEFAULTS["horizon"], samples: int = ROLLOUT_DEFAULTS["samples"],
                 base: str = ROLLOUT_DEFAULTS["base"], min_gain: float = ROLLOUT_DEFAULTS["min_gain"],
                 actions: tuple[str, ...] | None = ROLLOUT_DEFAULTS["actions"],
                 threshold_params: dict[str, Any] | None = None,
                 cycle: tuple[str | int, ...] = ("least_impedance", "least_impedance", "farthest")) -> None:
        self.horizon = _check_int("horizon", horizon, 1, 360)
        self.samples = _check_int("samples", samples, 1, 256)
        if base not in BASES:
            raise ValueError(f"base={base!r} is invalid: expected one of {list(BASES)}")
        self.base = base
        if isinstance(min_gain, bool) or not isinstance(min_gain, (int, float)) or not 0.0 <= min_gain <= 1.0:
            raise ValueError(f"min_gain={min_gain!r} is invalid: expected a number in [0, 1]")
        self.min_gain = float(min_gain)
        names = POLICY_NAMES if actions is None else tuple(actions)
        if not names or any(a not in POLICY_NAMES for a in names):
            raise ValueError(f"actions={actions!r} is invalid: expected a non-empty list of {list(POLICY_NAMES)} "
                             "or None (all seven)")
        self.actions = sorted({POLICY_NAMES.index(a) for a in names})
        params = dict(threshold_params) if threshold_params is not None else \
            tuned_params(Path(__file__).parent, THRESHOLD_SWITCH, THRESHOLD_DEFAULTS)
        self._threshold = ThresholdSwitchPolicy(**params)
        self.cycle = PeriodicSwitchPolicy(cycle).sequence
        self._env: Any = None
        self._rng = np.random.default_rng()
        self._relief_run = 0
        self._window = 0
        #: the last decision's mean success per action (diagnostics; NaN for actions not simulated)
        self.last_scores = np.full(len(POLICY_NAMES), np.nan)

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        self._env = env.unwrapped
        self._rng = np.random.default_rng(seed)
        self._threshold.reset(env)
        self._relief_run = 0
        self._window = 0

    def _base_action(self, base: str, step: int, obs: Any, threshold: ThresholdSwitchPolicy) -> int:
        if base == "periodic_switch":  # the cycle goes on where the episode is
            return int(self.cycle[(self._window + step) % len(self.cycle)])
        return threshold.act(obs, {})

    def act(self, obs: Any, info: dict[str, Any]) -> int:
        if self._env is None:
            raise RuntimeError("reset(env) before act(): the rollout simulates forks of the env")
        # what each base would play now: always a candidate; the better base's is kept unless another action
        # beats it by min_gain
        bases = ["threshold_switch", "periodic_switch"] if self.base == "both" else [self.base]
        shadow = copy.copy(self._threshold)
        shadow._relief_run = self._relief_run
        own = {"periodic_switch": int(self.cycle[self._window % len(self.cycle)]),
               "threshold_switch": shadow.act(obs, {}) if "threshold_switch" in bases else LEAST_IMPEDANCE}
        own_score = dict.fromkeys(bases, -1.0)
        candidates = sorted({*self.actions, *(own[b] for b in bases)})
        seeds = self._rng.integers(0, 2**63 - 1, size=self.samples)
        scores = np.full(len(POLICY_NAMES), np.nan)
        for base in bases:  # parallel rollout: an action is worth what its best base makes of it
            for action in candidates:
                succeeded = queries = 0.0
                for seed in seeds:  # the same futures for every action and base: common random numbers
                    sim = self._env.fork(np.random.default_rng(int(seed)))
                    threshold = copy.copy(self._threshold)
                    threshold._relief_run = 0 if action == LEAST_IMPEDANCE else min(self._relief_run + 1,
                                                                                     threshold.max_relief_run)
                    succeeded, queries = simulate_windows(  # a fork ends where the episode would (truncated)
                        sim, action, lambda step, o, b=base, th=threshold: self._base_action(b, step, o, th),
                        self.horizon, succeeded, queries)
                score = succeeded / queries if queries > 0 else 1.0
                scores[action] = score if np.isnan(scores[action]) else max(scores[action], score)
                if action == own[base]:
                    own_score[base] = score
        self.last_scores = scores
        best = int(np.nanargmax(scores))  # ties: the lowest index, deterministic
        base_now = own[max(bases, key=own_score.__getitem__)]  # what the better-looking base plays (first on ties)
        if scores[best] < own_score[max(bases, key=own_score.__getitem__)] + self.min_gain:
            best = base_now
        self._relief_run = 0 if best == LEAST_IMPEDANCE else self._relief_run + 1
        self._window += 1
        return best


def _aset_rollout(env: gym.Env, **kwargs: Any) -> AsetRolloutPolicy:
    return AsetRolloutPolicy(**kwargs)


for _env_id in ENV_IDS:
    register_policy(_env_id, ASET_ROLLOUT)(_aset_rollout)
