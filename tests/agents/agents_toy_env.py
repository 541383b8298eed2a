"""A tiny masked Discrete env for the agent tests (contract 6 layout), registered as ``MaskedToy-v0``.

Each step shows a random "value" vector v ∈ [0, 1]^(n−1) over actions 1..n−1 plus reject (action 0,
always feasible, reward 0); a random subset of actions 1..n−1 is feasible. Taking a feasible action a
pays v[a]; an infeasible one is treated as reject. The best policy takes the feasible action of highest
value, so a learner that ignores the mask or the values is visibly worse. Episodes last ``horizon`` steps.
Observation = [v (n−1 entries), mask (n entries)], float32.

``gym.make("tests.agents.agents_toy_env:MaskedToy-v0")`` imports this module, which registers the id.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.envs.registration import register, registry


class MaskedToyEnv(gym.Env):
    metadata = {"render_modes": []}

    def __init__(self, n_actions: int = 5, horizon: int = 20, p_feasible: float = 0.5) -> None:
        self.n_actions, self.horizon, self.p_feasible = n_actions, horizon, p_feasible
        self.action_space = spaces.Discrete(n_actions)
        self.observation_space = spaces.Box(0.0, 1.0, shape=(2 * n_actions - 1,), dtype=np.float32)
        self._t = 0
        self._values = np.zeros(n_actions - 1)
        self._mask = np.ones(n_actions, dtype=np.int8)

    def _draw(self) -> None:
        self._values = self.np_random.random(self.n_actions - 1)
        self._mask = np.concatenate([[1], self.np_random.random(self.n_actions - 1) < self.p_feasible]).astype(np.int8)

    def _obs(self) -> np.ndarray:
        return np.concatenate([self._values, self._mask]).astype(np.float32)

    def action_masks(self) -> np.ndarray:
        return self._mask.astype(bool)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self._t = 0
        self._draw()
        return self._obs(), {"action_mask": self._mask.copy()}

    def step(self, action: int):
        action = int(action)
        feasible = bool(self._mask[action])
        reward = float(self._values[action - 1]) if action > 0 and feasible else 0.0
        self._t += 1
        self._draw()
        terminated = self._t >= self.horizon
        info = {"action_mask": self._mask.copy(), "invalid_action": not feasible, "profit": reward}
        return self._obs(), reward, terminated, False, info


if "MaskedToy-v0" not in registry:
    register(id="MaskedToy-v0", entry_point=MaskedToyEnv)
