"""OINC-v0 inference policies: ``greedy``, ``liu``, ``nearest`` and ``random`` (registered for "OINC-v0").

They choose only the inference action; the retraining controller is the env's ``retraining=`` kwarg, so a
Table II "algorithm" is a pair (``offline.oinc.evaluation``). See ``offline.oinc``'s docstring for what
each policy does and how continuous shares are mapped to the W = 4 levels.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from envs.oinc import dynamics as dyn
from envs.oinc.env import OINCEnv
from offline.registry import register_policy

ENV_ID = "OINC-v0"
#: Inference policies a pair may name (``slo_liu`` is ours, registered by ``offline.oinc.heuristics``).
INFERENCE_POLICIES = ("greedy", "liu", "nearest", "random", "slo_liu", "slo_liu_ls",
                      "oinc_rollout")  # the online reference, registered by offline.oinc.online


# ----------------------------------------------------------------------------- inference policies
class _HeuristicPolicy:
    """Base: keeps the unwrapped env; subclasses build (edge, compute share, bandwidth share)."""

    name = "heuristic"

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        self.env: OINCEnv = env.unwrapped  # type: ignore[assignment]
        inst = self.env.instance
        self.num_edges = inst.num_edges
        self.rng = np.random.default_rng(seed)

    def act(self, obs: Any, info: dict[str, Any]) -> np.ndarray:
        edge, z, v = self.plan()
        inst = self.env.instance
        d, c = self.env.current_tasks
        rate = inst.full_rate_bps[np.arange(inst.num_devices), edge]
        return self.env.action_from_shares(edge, z, v, compute_cost=c, bandwidth_cost=d / rate)

    def plan(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        raise NotImplementedError


def convex_split(data_bits: np.ndarray, cycles: np.ndarray, rate_bps: np.ndarray, edge: np.ndarray, num_edges: int):
    """Within-edge shares minimising sum_i c_i/(z_i F_j) + d_i/(v_i r_ij): z ∝ sqrt(c), v ∝ sqrt(d/r)."""
    return dyn.sqrt_split(cycles, edge, num_edges), dyn.sqrt_split(data_bits / rate_bps, edge, num_edges)


class GreedyPolicy(_HeuristicPolicy):
    """The paper's Greedy: SLO order, least-latency edge given the placed tasks, convex split."""

    name = "greedy"

    def plan(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        inst, env = self.env.instance, self.env
        d, c = env.current_tasks
        capacity = env.inference_share * inst.cpu_hz
        sqrt_c = np.sqrt(c)
        sqrt_tx = np.sqrt(d[:, None] / inst.full_rate_bps)  # (I, J)
        sum_c = np.zeros(inst.num_edges)
        sum_tx = np.zeros(inst.num_edges)
        edge = np.empty(inst.num_devices, dtype=np.int64)
        for i in np.argsort(inst.slo_s, kind="stable"):
            est = dyn.sqrt_split_latency(sqrt_tx[i], sum_tx + sqrt_tx[i], sqrt_c[i], sum_c + sqrt_c[i], capacity)
            j = int(np.argmin(est))
            edge[i] = j
            sum_c[j] += sqrt_c[i]
            sum_tx[j] += sqrt_tx[i, j]
        rate = inst.full_rate_bps[np.arange(inst.num_devices), edge]
        z, v = convex_split(d, c, rate, edge, inst.num_edges)
        return edge, z, v


class LiuPolicy(_HeuristicPolicy):
    """Liu et al. (TSC 2023) idea (paper not available here): min total latency of the KKT split.

    Objective of an assignment: sum_j (sum_{i on j} sqrt c_i)^2 / F_j + (sum_{i on j} sqrt(d_i / r_ij))^2
    (the optimal Lagrangian split's total latency). Tasks are inserted largest first at the edge of least
    marginal cost, then ``passes`` rounds of best-response moves improve it.
    """

    name = "liu"

    def __init__(self, passes: int = 2) -> None:
        self.passes = passes

    def plan(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        inst, env = self.env.instance, self.env
        d, c = env.current_tasks
        capacity = env.inference_share * inst.cpu_hz
        a = np.sqrt(c)
        b = np.sqrt(d[:, None] / inst.full_rate_bps)
        sum_a = np.zeros(inst.num_edges)
        sum_b = np.zeros(inst.num_edges)
        edge = np.full(inst.num_devices, -1, dtype=np.int64)

        def marginal(i: int) -> np.ndarray:
            return dyn.sqrt_split_total_increase(b[i], sum_b, a[i], sum_a, capacity)

        for i in np.argsort(-(a / capacity.max() + b.min(axis=1)), kind="stable"):
            j = int(np.argmin(marginal(i)))
            edge[i] = j
            sum_a[j] += a[i]
            sum_b[j] += b[i, j]
        for _ in range(self.passes):
            moved = False
            for i in range(inst.num_devices):
                j0 = edge[i]
                sum_a[j0] -= a[i]
                sum_b[j0] -= b[i, j0]
                j = int(np.argmin(marginal(i)))
                if j != j0:
                    moved = True
                edge[i] = j
                sum_a[j] += a[i]
                sum_b[j] += b[i, j]
            if not moved:
                break
        rate = inst.full_rate_bps[np.arange(inst.num_devices), edge]
        z, v = convex_split(d, c, rate, edge, inst.num_edges)
        return edge, z, v


class NearestPolicy(_HeuristicPolicy):
    """Each task to its nearest edge with equal compute and bandwidth shares."""

    name = "nearest"

    def plan(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        inst = self.env.instance
        edge = np.argmin(inst.distance_km, axis=1)
        ones = np.ones(inst.num_devices)
        return edge, ones, ones


class RandomPolicy:
    """Uniform over the MultiDiscrete action space (own seeded generator)."""

    name = "random"

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        self.nvec = env.action_space.nvec
        self.rng = np.random.default_rng(seed)

    def act(self, obs: Any, info: dict[str, Any]) -> np.ndarray:
        return self.rng.integers(0, self.nvec).astype(np.int64)


@register_policy(ENV_ID, "greedy")
def _greedy(env: gym.Env, **kwargs: Any) -> GreedyPolicy:
    return GreedyPolicy()


@register_policy(ENV_ID, "liu")
def _liu(env: gym.Env, passes: int = 2, **kwargs: Any) -> LiuPolicy:
    return LiuPolicy(passes=passes)


@register_policy(ENV_ID, "nearest")
def _nearest(env: gym.Env, **kwargs: Any) -> NearestPolicy:
    return NearestPolicy()


@register_policy(ENV_ID, "random")
def _random(env: gym.Env, **kwargs: Any) -> RandomPolicy:
    return RandomPolicy()
