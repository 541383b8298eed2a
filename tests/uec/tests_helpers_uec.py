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


def edf_slot_by_slot(available, start, end, demand) -> np.ndarray:
    """The literal EDF rule, slot by slot: each slot's capacity to the released unfinished task with the
    earliest deadline, the rest to the next. A deliberately naive reference for the tests."""
    order = sorted(range(len(demand)), key=lambda i: (end[i], start[i]))
    remaining = [float(demand[i]) for i in range(len(demand))]
    served = [0.0] * len(demand)
    for t in range(len(available)):
        cap = float(available[t])
        for i in order:
            if cap <= 0:
                break
            if start[i] <= t <= end[i] and remaining[i] > 0:
                give = min(cap, remaining[i])
                remaining[i] -= give
                served[i] += give
                cap -= give
    return np.array(served)
