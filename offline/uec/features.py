"""Observation features of UEC-v0 computed by our offline code (observation wrappers).

``LPFeatures(gym.make("UEC-v0"))`` inserts, before the action mask that ends UEC-v0's observation,
A_jkl(t) for the arriving device j (K·L entries) and B_k(t+1) (K entries), both divided by the largest
A of the instance and clipped to [0, 1]. The LP is solved once per instance (``rescue_solution``'s
cache), so the wrapper costs one small copy per step.

``NetScoreFeatures(env)`` inserts what the strongest tuned heuristic (``lp_bid_price``) maximises at this
decision: R_jkl(t) − θ·(LP-dual bid price of the capacity SSP (k, l) takes), divided by the instance's
largest R and clipped to [−1, 1], and −1 on SSPs the heuristic may not choose (unsafe or R = 0). A learner
that adds a multiple of it to its logits starts as that heuristic (``agents.uec.sac_head``).

The mask stays the observation's tail, so the learners' mask handling (contract 6) is unchanged. In a
Hydra env config: ``wrappers: [offline.uec.features:LPFeatures]`` (both: LPFeatures first).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from envs.uec.env import ObservationLayout, UECEnv
from envs.uec.types import Instance
from offline.uec.values import rescue_solution


def lp_feature_tables(instance: Instance) -> tuple[np.ndarray, np.ndarray]:
    """(T, J, K·L) scaled A_jkl(t) and (T, K) scaled B_k(t+1) of ``instance`` (one LP solve, cached)."""
    solution = rescue_solution(instance)
    K, L, T = instance.num_servers, instance.num_profiles, instance.horizon
    scale = max(float(solution.activation.max()), 1e-12)
    activation = solution.activation.transpose(3, 0, 1, 2).reshape(T, instance.num_devices, K * L)
    return np.clip(activation / scale, 0, 1), np.clip(solution.baseline[:, 1:].T / scale, 0, 1)


class _InsertBeforeMask(gym.Wrapper):
    """UEC-v0 with extra observation entries inserted just before the action mask (layout part ``part``)."""

    observation_ends_with_action_mask = True
    part: str

    def __init__(self, env: gym.Env, **layout_flags: bool) -> None:
        super().__init__(env)
        if not isinstance(env.unwrapped, UECEnv):
            raise ValueError(f"{type(self).__name__} wraps UEC-v0 only, got {type(env.unwrapped).__name__}")
        inner = env.get_wrapper_attr("layout")
        if inner.score_features:
            raise ValueError(f"apply {type(self).__name__} before NetScoreFeatures (the layout puts {self.part!r} "
                             "before 'score')")
        flags = {"lp_features": inner.lp_features, "score_features": inner.score_features, **layout_flags}
        self.layout = ObservationLayout(inner.num_servers, inner.num_devices, inner.num_profiles, **flags)
        low = np.zeros(self.layout.size, dtype=np.float32)
        low[self.layout.slices.get("score", slice(0, 0))] = -1.0
        self.observation_space = spaces.Box(low, 1.0, shape=(self.layout.size,), dtype=np.float32)
        self._mask_start = inner.offset("action_mask")
        self._instance: Instance | None = None

    def _extra(self, info: dict[str, Any]) -> np.ndarray:
        """The inserted entries at this decision (zeros in the terminal observation, which has no task)."""
        raise NotImplementedError

    def _on_instance(self, instance: Instance) -> None:
        """Precompute per instance (called once per new instance)."""

    def _augment(self, obs: np.ndarray, info: dict[str, Any]) -> np.ndarray:
        instance = self.env.unwrapped.instance
        if instance is not self._instance:  # new instance (resample or options["instance"]): new tables
            self._instance = instance
            self._on_instance(instance)
        return np.concatenate([obs[: self._mask_start], self._extra(info), obs[self._mask_start :]])

    def observation_for(self, obs: np.ndarray, info: dict[str, Any]) -> np.ndarray:
        """This wrapper's observation for the inner env's ``obs`` and ``info`` (lets a policy trained under the
        wrapper play the bare env: ``agents.loading.FeatureWrappers``)."""
        return self._augment(obs, info)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        return self._augment(obs, info), info

    def step(self, action: Any):
        obs, reward, terminated, truncated, info = self.env.step(action)
        return self._augment(obs, info), reward, terminated, truncated, info

    def action_masks(self) -> np.ndarray:
        """The wrapped env's mask (sb3-contrib's MaskablePPO calls this)."""
        return self.env.unwrapped.action_masks()


class LPFeatures(_InsertBeforeMask):
    """UEC-v0 with RESCUE's A_jkl(t) and B_k(t+1) in the observation (layout part ``lp``).

    The wrapped observation is ``layout.split``-able with :attr:`layout` (``lp_features=True``); the
    terminal observation, which has no arriving task, carries zeros there.
    """

    part = "lp"

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env, lp_features=True)
        self._tables: tuple[np.ndarray, np.ndarray] | None = None

    def _on_instance(self, instance: Instance) -> None:
        self._tables = lp_feature_tables(instance)

    def _extra(self, info: dict[str, Any]) -> np.ndarray:
        activation, baseline = self._tables
        num_ssp = activation.shape[2]
        lp = np.zeros(num_ssp + baseline.shape[1], dtype=np.float32)
        device = int(info["device"])
        if device >= 0:
            t = int(info["time"])
            lp[:num_ssp] = activation[t, device]
            lp[num_ssp:] = baseline[t]
        return lp


class NetScoreFeatures(_InsertBeforeMask):
    """UEC-v0 with a net-score greedy's scores in the observation (layout part ``score``).

    :param heuristic: a net-score greedy of :mod:`offline.uec.heuristics` (its tuned weight), by registry name
    """

    part = "score"

    def __init__(self, env: gym.Env, heuristic: str = "lp_bid_price") -> None:
        super().__init__(env, score_features=True)
        from offline.registry import make_policy
        from offline.uec.heuristics import NetScoreGreedyPolicy

        self.heuristic = make_policy("UEC-v0", heuristic, env.unwrapped)
        if not isinstance(self.heuristic, NetScoreGreedyPolicy):
            raise ValueError(f"heuristic={heuristic!r} is invalid: expected a net-score greedy "
                             "(lp_bid_price, value_bid_price, opportunity_greedy)")
        self._scale = 1.0

    def _on_instance(self, instance: Instance) -> None:
        self.heuristic.reset(self.env.unwrapped)
        self._scale = max(float(instance.expected_profit.max()), 1e-12)

    def _extra(self, info: dict[str, Any]) -> np.ndarray:
        if int(info["device"]) < 0:
            return np.zeros(self.layout.sizes["score"], dtype=np.float32)
        scores = np.where(self.heuristic.candidates(info), self.heuristic.scores(info) / self._scale, -1.0)
        return np.clip(scores, -1.0, 1.0).astype(np.float32)
