"""Rollout helpers shared by the UEC tests."""

from __future__ import annotations

import numpy as np


def random_feasible_rollout(env, seed: int, policy_seed: int) -> list[tuple[np.ndarray, float, dict]]:
    """Roll out a uniformly random feasible policy; return (obs, reward, info) per step."""
    rng = np.random.default_rng(policy_seed)
    obs, info = env.reset(seed=seed)
    trace, done = [], False
    while not done:
        feasible = np.flatnonzero(info["action_mask"])
        obs, reward, terminated, truncated, info = env.step(int(feasible[rng.integers(feasible.size)]))
        trace.append((obs, reward, info))
        done = terminated or truncated
    return trace
