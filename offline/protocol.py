"""The one policy protocol every policy (learned or not) follows, and a rollout helper.

A policy is reset at the start of each episode with the env (non-learning policies may read
``env.unwrapped.instance``; they say so in their docstring) and then maps ``(obs, info)`` to an action.
They act only through ``env.step``, so every policy is measured by the same simulator on the same seeds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import gymnasium as gym
import numpy as np


@runtime_checkable
class Policy(Protocol):
    """What evaluate.py, the benchmarks and the tests call."""

    name: str

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        """Prepare for a new episode on ``env`` (already reset); ``seed`` seeds the policy's own randomness."""

    def act(self, obs: Any, info: dict[str, Any]) -> Any:
        """Return the action for the current decision."""


class MaskedRandomPolicy:
    """Uniform over the currently feasible actions (``info["action_mask"]``), for any Discrete env."""

    name = "random_feasible"

    def __init__(self) -> None:
        self._rng = np.random.default_rng()

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        self._rng = np.random.default_rng(seed)

    def act(self, obs: Any, info: dict[str, Any]) -> int:
        feasible = np.flatnonzero(info["action_mask"])
        return int(feasible[self._rng.integers(feasible.size)])


def episode_seed(seed: int, instance: int, episode: int) -> int:
    """Reset seed of episode ``episode`` on instance ``instance`` of an evaluation seeded ``seed``; every
    policy gets the same one (common random numbers). Used by the OINC and ASET evaluations."""
    return 1_000_003 * (seed + instance) + episode


@dataclass
class EpisodeResult:
    """What one episode of one policy produced: the return, the decision count, the final info."""

    total_reward: float
    decisions: int
    decision_seconds: list[float] = field(default_factory=list)
    final_info: dict[str, Any] = field(default_factory=dict)
    step_infos: list[dict[str, Any]] = field(default_factory=list)


def run_episode(
    env: gym.Env,
    policy: Policy,
    *,
    seed: int | None,
    options: dict[str, Any] | None = None,
    policy_seed: int | None = None,
    time_decisions: bool = False,
    keep_step_infos: bool = False,
    on_step: Callable[[dict[str, Any]], None] | None = None,
) -> EpisodeResult:
    """Run one episode of ``policy`` on ``env`` reset with ``seed`` (common random numbers across policies)."""
    from time import perf_counter

    obs, info = env.reset(seed=seed, options=options)
    policy.reset(env, seed=policy_seed if policy_seed is not None else seed)
    result = EpisodeResult(total_reward=0.0, decisions=0)
    done = False
    while not done:
        if time_decisions:
            start = perf_counter()
            action = policy.act(obs, info)
            result.decision_seconds.append(perf_counter() - start)
        else:
            action = policy.act(obs, info)
        obs, reward, terminated, truncated, info = env.step(action)
        result.total_reward += float(reward)
        result.decisions += 1
        if keep_step_infos:
            result.step_infos.append(info)
        if on_step is not None:
            on_step(info)
        done = terminated or truncated
    result.final_info = info
    return result
