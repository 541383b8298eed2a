"""What the suite's native vector envs share (``envs/<p>/vector.py``): construction checks, sub-env seeds, get_attr.

Each problem's vector env keeps its own batched dynamics; this base class holds only the contract every one of
them follows, the one Gymnasium's ``SyncVectorEnv`` follows: sub-env i reset with an int ``seed`` gets
``seed + i``, a list gives one seed per sub-env, ``autoreset_mode`` is NEXT_STEP or SAME_STEP, nothing renders.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv

from envs.common.validation import check_choice, check_in_range, check_seed

__all__ = ["SubEnvBatch", "VectorEnvClosedError"]


class VectorEnvClosedError(gym.error.ClosedEnvironmentError, RuntimeError):
    """``step``/``reset`` on a closed native vector env (Gymnasium's AsyncVectorEnv raises ClosedEnvironmentError
    there too); a RuntimeError as well, as before."""


class SubEnvBatch(VectorEnv):
    """Base of the native vector envs: ``envs`` holds one single env per sub-env (their instances and
    generators); the subclasses keep the episodes' state in arrays with a leading N axis."""

    envs: list[gym.Env]

    def _init_batch(self, num_envs: int, autoreset_mode: str | AutoresetMode, render_mode: str | None) -> None:
        """Check and set ``num_envs``, ``autoreset_mode`` (also in ``metadata``) and ``render_mode`` (None only)."""
        check_in_range("num_envs", num_envs, 1, 1_000_000, integer=True)
        if render_mode is not None:
            raise ValueError(f"render_mode={render_mode!r} is invalid: the vector env renders nothing (expected None)")
        mode = autoreset_mode.value if isinstance(autoreset_mode, AutoresetMode) else autoreset_mode
        mode = check_choice("autoreset_mode", mode, (AutoresetMode.NEXT_STEP.value, AutoresetMode.SAME_STEP.value))
        self.autoreset_mode = AutoresetMode(mode)
        self.metadata = {**self.metadata, "autoreset_mode": self.autoreset_mode}
        self.num_envs = int(num_envs)
        self.render_mode = None

    def check_open(self, method: str) -> None:
        """Raise :class:`VectorEnvClosedError` when ``close()`` was called: a closed vector env stays closed."""
        if self.closed:
            raise VectorEnvClosedError(f"{method}() after close(): this {type(self).__name__} is closed; make a new "
                                       "one (gymnasium.make_vec) to play again")

    def sub_env_seeds(self, seed: int | Sequence[int | None] | None) -> list[int | None]:
        """The reset seed of each sub-env: an int gives ``seed + i``, a list one (checked) seed each, None None."""
        if seed is None:
            return [None] * self.num_envs
        if isinstance(seed, (list, tuple)):
            if len(seed) != self.num_envs:
                raise ValueError(f"seed has {len(seed)} entries: expected num_envs={self.num_envs} seeds")
            return [None if s is None else check_seed("seed", s) for s in seed]
        base = check_seed("seed", seed)
        return [base + i for i in range(self.num_envs)]

    def discrete_actions(self, actions: Any, n_actions: int) -> np.ndarray:
        """``actions`` of a Discrete(n_actions) env as an integer array of shape (N,); ValueError naming
        ``actions`` otherwise (the range is the caller's: a kernel may check it on the way)."""
        array = np.asarray(actions)
        if array.shape != (self.num_envs,) or array.dtype.kind not in "iu":
            raise ValueError(
                f"actions={actions!r} is invalid: expected {self.num_envs} integers in [0, {n_actions - 1}] "
                f"(an integer array of shape ({self.num_envs},))"
            )
        return array

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """Attribute ``name`` of each sub-env's single env (instance-level attributes: the episodes' state lives
        in the batch)."""
        return tuple(getattr(env, name) for env in self.envs)
