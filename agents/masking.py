"""Action masks read from the observation (contract 6) and masked exploration for the learners.

Masked envs put the mask (1 = feasible) in the LAST ``mask_dim`` entries of their flat float32
observation, so an off-policy learner recovers the mask of any replayed transition from the observation
alone. ``mask_dim`` is the number of actions (Discrete) or the sum of the head sizes (MultiDiscrete,
heads concatenated in order); 0 means "no mask".
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
from gymnasium import spaces


def action_dims(action_space: spaces.Space) -> list[int]:
    """Choices per head: ``[n]`` for Discrete, ``nvec`` for MultiDiscrete (flattened)."""
    if getattr(action_space, "start", None) is not None and np.any(np.asarray(action_space.start) != 0):
        raise ValueError(f"action space {action_space} must start at 0 (got start={action_space.start})")
    if isinstance(action_space, spaces.Discrete):
        return [int(action_space.n)]
    if isinstance(action_space, spaces.MultiDiscrete):
        return [int(n) for n in np.asarray(action_space.nvec).ravel()]
    raise ValueError(
        f"action space {action_space} is not supported; valid action spaces: Discrete, MultiDiscrete"
    )


def infer_mask_dim(env: gym.Env, mode: str = "auto") -> int:
    """How many trailing observation entries are the action mask.

    ``mode="auto"`` uses the mask when the unwrapped env declares
    ``observation_ends_with_action_mask = True`` (contract 6; UEC-v0 does). Having ``action_masks()``
    is not enough: ASET-v0 offers one (all ones) while its observation ends with state features.
    ``"none"`` disables masking.
    """
    if mode not in ("auto", "none"):
        raise ValueError(f"mask={mode!r} is not valid; valid values: ['auto', 'none']")
    if mode == "none" or not getattr(env.unwrapped, "observation_ends_with_action_mask", False):
        return 0
    mask_dim = int(sum(action_dims(env.action_space)))
    obs_dim = int(np.prod(env.observation_space.shape))
    if obs_dim < mask_dim:
        raise ValueError(
            f"the observation ({obs_dim} entries) cannot end with an action mask of {mask_dim} entries"
        )
    return mask_dim


def mask_from_obs(obs: th.Tensor, mask_dim: int) -> th.Tensor | None:
    """Boolean ``[B, mask_dim]`` feasibility from a batch of observations, or None without masking."""
    if mask_dim <= 0:
        return None
    return obs.reshape(obs.shape[0], -1)[:, -mask_dim:] > 0.5


def sample_feasible(action_space: spaces.Space, obs: np.ndarray, mask_dim: int) -> np.ndarray:
    """Uniform random actions over the feasible ones for a batch of raw observations ``[n_envs, ...]``.

    Uses the action space's own (seeded) generator, so SB3's seeding keeps runs reproducible. A head
    whose mask is all zero (e.g. a terminal observation) is sampled unmasked.
    """
    n_envs = obs.shape[0]
    if mask_dim <= 0:
        return np.array([action_space.sample() for _ in range(n_envs)])
    masks = obs.reshape(n_envs, -1)[:, -mask_dim:] > 0.5
    dims = action_dims(action_space)
    rng = action_space.np_random
    actions: list[Any] = []
    for row in masks:
        heads = np.split(row, np.cumsum(dims)[:-1])
        choice = [int(rng.choice(np.flatnonzero(h))) if h.any() else int(rng.integers(h.size)) for h in heads]
        if isinstance(action_space, spaces.Discrete):
            actions.append(choice[0])
        else:
            actions.append(np.asarray(choice, dtype=action_space.dtype).reshape(action_space.shape))
    return np.array(actions)


class FeasibleWarmupMixin:
    """For SB3 off-policy algorithms with a ``mask_dim``: warm-up actions (before ``learning_starts``) are
    uniform over the feasible actions instead of the whole space; later ones come from ``predict``."""

    mask_dim: int

    def _sample_action(self, learning_starts: int, action_noise: Any = None, n_envs: int = 1):
        if self.num_timesteps < learning_starts:
            action = sample_feasible(self.action_space, np.asarray(self._last_obs), self.mask_dim)
        else:
            action, _ = self.predict(self._last_obs, deterministic=False)
        return action, action
