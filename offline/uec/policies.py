"""UEC-v0 policies: RESCUE's online rule (Alg. 1) and the common base of every UEC heuristic.

All of them read the instance (``env.unwrapped.instance``) when reset, precompute per-instance lookup
tables (indexed by slot t, device j and SSP index k·L + l), and act only through ``env.step`` with the
env's action encoding (0 = reject, 1 + k·L + l = SSP (k, l)). Their randomness comes from the seed given
to ``reset(env, seed)``. An action is proposed only if ``info["action_mask"]`` allows it.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from envs.uec.types import Instance
from offline.registry import register_policy
from offline.uec.values import rescue_solution

ENV_ID = "UEC-v0"


class UECPolicy:
    """Base: keeps the env's instance, re-prepares tables only when the instance changes, seeds an rng."""

    name = "uec_policy"

    def __init__(self) -> None:
        self._rng = np.random.default_rng()
        self._instance: Instance | None = None

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        """Read ``env.unwrapped.instance`` (the env must be reset) and seed the policy's own randomness."""
        instance = env.unwrapped.instance
        if not isinstance(instance, Instance):
            raise ValueError(f"{self.name} needs a UEC-v0 env (env.unwrapped.instance is {type(instance).__name__})")
        self._rng = np.random.default_rng(seed)
        if instance is not self._instance:
            self._prepare(instance)
            self._instance = instance

    @property
    def instance(self) -> Instance:
        """The instance the policy was last reset on."""
        if self._instance is None:
            raise RuntimeError(f"{self.name}: reset(env) first")
        return self._instance

    def _prepare(self, instance: Instance) -> None:
        """Build the per-instance tables (called once per instance)."""

    def act(self, obs: Any, info: dict[str, Any]) -> int:
        raise NotImplementedError


def selection_cdf(y: np.ndarray, arrival_prob: np.ndarray) -> np.ndarray:
    """(T, J, N) cumulative selection probabilities y*(t, j, n) / p_j(t) over N options (last axis).

    ``y`` is (J, N, T) (N = K·L SSPs or K servers). A uniform u picks option ``searchsorted(cdf, u, 'right')``;
    index N (u beyond the last cumulative value) means "no option": reject with the remaining probability.
    Slots where device j cannot arrive get an all-zero row (always reject).
    """
    prob = np.transpose(y, (2, 0, 1))  # (T, J, N)
    p = arrival_prob[:, :, None]  # (T, J, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(p > 0, prob / np.where(p > 0, p, 1.0), 0.0)
    cdf = np.cumsum(ratio, axis=2)
    # y* satisfies Σ y ≤ p up to solver tolerance; a sum above 1 would only shrink the reject share
    return np.minimum(cdf, 1.0)


class RescuePolicy(UECPolicy):
    """RESCUE's online stage (Alg. 1); reads the instance and its cached offline solution.

    On an arrival of device j at slot t: draw SSP (k, l) with probability y*_jkl(t)/p_j(t) (reject with
    the remaining probability); accept iff A_jkl(t) > B_k(t+1) and the env's mask allows (k, l) ("k is
    available": free, and the reserved tasks stay feasible). Otherwise reject.
    """

    name = "rescue"

    def _prepare(self, instance: Instance) -> None:
        solution = rescue_solution(instance)
        J, K, L, T = solution.y.shape
        self._num_ssp = K * L
        self._cdf = np.ascontiguousarray(selection_cdf(solution.y.reshape(J, K * L, T), instance.arrival_prob))
        threshold = solution.baseline[:, 1:]  # (K, T): B_k(t + 1)
        accept = solution.activation > threshold[None, :, None, :]  # (J, K, L, T)
        self._accept = np.ascontiguousarray(accept.reshape(J, K * L, T).transpose(2, 0, 1))  # (T, J, K·L)

    def act(self, obs: Any, info: dict[str, Any]) -> int:
        t, j = info["time"], info["device"]
        ssp = int(np.searchsorted(self._cdf[t, j], self._rng.random(), side="right"))
        if ssp < self._num_ssp and self._accept[t, j, ssp] and info["action_mask"][1 + ssp]:
            return 1 + ssp
        return 0


@register_policy(ENV_ID, "rescue")
def make_rescue(env: gym.Env, **kwargs: Any) -> RescuePolicy:
    """RESCUE (LP + value functions + Alg. 1)."""
    if kwargs:
        raise ValueError(f"rescue takes no options, got {sorted(kwargs)}")
    return RescuePolicy()


class RescueFallbackPolicy(RescuePolicy):
    """RESCUE with a fallback server — OURS, not the paper's Algorithm 1 (reads the instance and y*).

    As :class:`RescuePolicy`, except when the drawn SSP (k, l) passes the threshold A_jkl(t) > B_k(t+1)
    but server k is not available: then the other SSPs (k', l'), k' ≠ k, are tried in decreasing
    y*_jk'l'(t) (only those with y* > 0), and the first that is available and passes its own threshold
    is taken. About a third of RESCUE's arrivals are rejected for a busy server on the default preset;
    this variant asks how much of that loss a second choice recovers.
    """

    name = "rescue_fallback"

    def _prepare(self, instance: Instance) -> None:
        super()._prepare(instance)
        solution = rescue_solution(instance)
        J, K, L, T = solution.y.shape
        y = np.ascontiguousarray(solution.y.reshape(J, K * L, T).transpose(2, 0, 1))  # (T, J, K·L)
        self._order = np.argsort(-y, axis=2, kind="stable")
        self._positive = y > 0
        self._num_profiles = L

    def act(self, obs: Any, info: dict[str, Any]) -> int:
        t, j = info["time"], info["device"]
        ssp = int(np.searchsorted(self._cdf[t, j], self._rng.random(), side="right"))
        if ssp >= self._num_ssp or not self._accept[t, j, ssp]:
            return 0
        mask = info["action_mask"]
        if mask[1 + ssp]:
            return 1 + ssp
        server = ssp // self._num_profiles
        for other in self._order[t, j]:
            if not self._positive[t, j, other]:
                break
            if other // self._num_profiles != server and self._accept[t, j, other] and mask[1 + other]:
                return 1 + int(other)
        return 0


@register_policy(ENV_ID, "rescue_fallback")
def make_rescue_fallback(env: gym.Env, **kwargs: Any) -> RescueFallbackPolicy:
    """RESCUE + a fallback server by y* when the drawn one is busy (ours, not the paper's)."""
    if kwargs:
        raise ValueError(f"rescue_fallback takes no options, got {sorted(kwargs)}")
    return RescueFallbackPolicy()
