"""RESCUE's value functions as observation features of UEC-v0 (an observation wrapper).

``LPFeatures(gym.make("UEC-v0"))`` inserts, before the action mask that ends UEC-v0's observation,
A_jkl(t) for the arriving device j (K·L entries) and B_k(t+1) (K entries), both divided by the largest
A of the instance and clipped to [0, 1]. The LP is solved once per instance (``rescue_solution``'s
cache), so the wrapper costs one small copy per step. The mask stays the observation's tail, so the
learners' mask handling (contract 6) is unchanged. In a Hydra env config:
``wrappers: [offline.uec.features:LPFeatures]``.
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


class LPFeatures(gym.Wrapper):
    """UEC-v0 with RESCUE's A_jkl(t) and B_k(t+1) in the observation (layout part ``lp``).

    The wrapped observation is ``layout.split``-able with :attr:`layout` (``lp_features=True``); the
    terminal observation, which has no arriving task, carries zeros there.
    """

    observation_ends_with_action_mask = True

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        base = env.unwrapped
        if not isinstance(base, UECEnv):
            raise ValueError(f"LPFeatures wraps UEC-v0 only, got {type(base).__name__}")
        inner = base.layout
        self.layout = ObservationLayout(inner.num_servers, inner.num_devices, inner.num_profiles, True)
        self.observation_space = spaces.Box(0.0, 1.0, shape=(self.layout.size,), dtype=np.float32)
        self._mask_start = inner.offset("action_mask")
        self._instance: Instance | None = None
        self._tables: tuple[np.ndarray, np.ndarray] | None = None

    def _augment(self, obs: np.ndarray, info: dict[str, Any]) -> np.ndarray:
        instance = self.env.unwrapped.instance
        if instance is not self._instance:  # new instance (resample or options["instance"]): new tables
            self._instance, self._tables = instance, lp_feature_tables(instance)
        activation, baseline = self._tables
        num_ssp = activation.shape[2]
        lp = np.zeros(num_ssp + baseline.shape[1], dtype=np.float32)
        device = int(info["device"])
        if device >= 0:
            t = int(info["time"])
            lp[:num_ssp] = activation[t, device]
            lp[num_ssp:] = baseline[t]
        return np.concatenate([obs[: self._mask_start], lp, obs[self._mask_start :]])

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        return self._augment(obs, info), info

    def step(self, action: Any):
        obs, reward, terminated, truncated, info = self.env.step(action)
        return self._augment(obs, info), reward, terminated, truncated, info

    def action_masks(self) -> np.ndarray:
        """The wrapped env's mask (sb3-contrib's MaskablePPO calls this)."""
        return self.env.unwrapped.action_masks()
