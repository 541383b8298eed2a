"""A Gymnasium ``VectorEnv`` as a stable-baselines3 ``VecEnv`` (e.g. UEC-v0's native numpy-batched env).

SB3 and sb3-contrib train on their own ``VecEnv`` API: ``reset()`` returns the observations only,
``step_wait()`` returns ``(obs, rewards, dones, infos)`` with a list of per-env info dicts, a finished
env is reset at once and its last observation is in ``infos[i]["terminal_observation"]``, and
MaskablePPO reads masks through ``env_method("action_masks")``. :class:`GymnasiumVectorToSB3` gives a
Gymnasium vector env with ``AutoresetMode.SAME_STEP`` (which has exactly those semantics) that API::

    venv = make_vec_env("UEC-v0", num_envs=8, scenario="paper")     # or GymnasiumVectorToSB3(gym.make_vec(...))
    MaskablePPO("MlpPolicy", venv).learn(10_000)

The infos match SB3's ``DummyVecEnv`` over ``gym.make`` envs: the step's info keys, plus
``terminal_observation`` and ``TimeLimit.truncated``; a reset's infos are in ``reset_infos``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode
from stable_baselines3.common.vec_env import VecEnv
from stable_baselines3.common.vec_env.base_vec_env import VecEnvIndices, VecEnvStepReturn

__all__ = ["GymnasiumVectorToSB3", "make_vec_env"]


class GymnasiumVectorToSB3(VecEnv):
    """SB3 ``VecEnv`` view of a Gymnasium ``VectorEnv`` whose autoreset mode is SAME_STEP.

    ``env_method("action_masks")`` returns the rows of ``venv.action_masks()`` (sb3-contrib's
    ``get_action_masks``); other methods and ``set_attr`` are not offered (the sub-envs' state lives in
    the batch). ``get_attr`` reads the vector env's ``get_attr`` (per sub-env) when it has one, else the
    vector env's own attribute for every index.
    """

    def __init__(self, venv: gym.vector.VectorEnv) -> None:
        mode = venv.metadata.get("autoreset_mode")
        if mode != AutoresetMode.SAME_STEP:
            raise ValueError(
                f"venv has autoreset_mode={mode!r}: expected AutoresetMode.SAME_STEP (SB3 resets a finished env "
                "within the same step), e.g. gym.make_vec(..., vectorization_mode='vector_entry_point', "
                "autoreset_mode='SameStep')"
            )
        self.venv = venv
        self._actions: np.ndarray | None = None
        super().__init__(venv.num_envs, venv.single_observation_space, venv.single_action_space)

    # --- VecEnv API ------------------------------------------------------------------------------
    def reset(self) -> np.ndarray:
        """Reset every env with the seeds of ``seed()`` and the options of ``set_options()`` (then cleared)."""
        seeds = None if all(s is None for s in self._seeds) else list(self._seeds)
        options = self._options[0]
        if any(o != options for o in self._options):
            raise ValueError("set_options() with different options per env is not supported by a Gymnasium vector env")
        obs, info = self.venv.reset(seed=seeds, options=dict(options) or None)
        self.reset_infos = _split(info, self.num_envs)
        self._reset_seeds()
        self._reset_options()
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions)

    def step_wait(self) -> VecEnvStepReturn:
        if self._actions is None:
            raise RuntimeError("call step_async() before step_wait()")
        obs, rewards, terminated, truncated, info = self.venv.step(self._actions)
        self._actions = None
        dones = terminated | truncated
        infos = _split(info, self.num_envs)
        if dones.any():
            final_info = info.get("final_info", {})
            finals = _split(final_info, self.num_envs)
            for i in np.flatnonzero(dones):
                self.reset_infos[i] = infos[i]
                infos[i] = {**finals[i], "terminal_observation": info["final_obs"][i]}
        for i, item in enumerate(infos):
            item["TimeLimit.truncated"] = bool(truncated[i] and not terminated[i])
        return obs, rewards.astype(np.float32), dones, infos

    def close(self) -> None:
        self.venv.close()

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        getter = getattr(self.venv, "get_attr", None)
        if attr_name == "action_masks":  # a bound method per env, reading the batched mask
            if not callable(getattr(self.venv, "action_masks", None)):  # e.g. OINC, CoRaiS: no masks
                raise AttributeError(f"{type(self.venv).__name__} has no action_masks()")
            return [_MaskOf(self.venv, i) for i in self._get_indices(indices)]
        if getter is not None:
            values = getter(attr_name)
            return [values[i] for i in self._get_indices(indices)]
        value = getattr(self.venv, attr_name)
        return [value for _ in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        raise NotImplementedError(f"set_attr({attr_name!r}) is not supported: the sub-envs' state lives in the batch")

    def env_method(self, method_name: str, *method_args: Any, indices: VecEnvIndices = None,
                   **method_kwargs: Any) -> list[Any]:
        if method_name == "action_masks" and self.has_attr("action_masks"):
            masks = self.venv.action_masks()
            return [masks[i] for i in self._get_indices(indices)]
        raise NotImplementedError(f"env_method({method_name!r}) is not supported; supported: ['action_masks']")

    def env_is_wrapped(self, wrapper_class: type[gym.Wrapper], indices: VecEnvIndices = None) -> list[bool]:
        return [False for _ in self._get_indices(indices)]

    def has_attr(self, attr_name: str) -> bool:
        if attr_name == "action_masks":
            return callable(getattr(self.venv, "action_masks", None))
        return super().has_attr(attr_name)

    def get_images(self) -> Sequence[np.ndarray | None]:
        return [None for _ in range(self.num_envs)]


def make_vec_env(env_id: str, num_envs: int, **kwargs: Any) -> GymnasiumVectorToSB3:
    """``gym.make_vec(env_id, num_envs, "vector_entry_point", autoreset_mode=SAME_STEP, **kwargs)`` for SB3."""
    venv = gym.make_vec(env_id, num_envs=num_envs, vectorization_mode="vector_entry_point",
                        autoreset_mode=AutoresetMode.SAME_STEP, **kwargs)
    return GymnasiumVectorToSB3(venv)


class _MaskOf:
    """``action_masks()`` of sub-env ``i`` of a vector env (what ``get_attr("action_masks")`` returns)."""

    def __init__(self, venv: gym.vector.VectorEnv, index: int) -> None:
        self.venv, self.index = venv, index

    def __call__(self) -> np.ndarray:
        return self.venv.action_masks()[self.index]


def _split(info: dict[str, Any], num_envs: int) -> list[dict[str, Any]]:
    """Gymnasium's batched info dict as one dict per env (a key only where its ``_key`` mask is set)."""
    out: list[dict[str, Any]] = [{} for _ in range(num_envs)]
    for key, value in info.items():
        if key.startswith("_") or key in ("final_obs", "final_info"):
            continue
        present: Iterable[int] = np.flatnonzero(info.get("_" + key, np.ones(num_envs, bool)))
        if isinstance(value, dict):
            for i, item in enumerate(_split(value, num_envs)):
                if item:
                    out[i][key] = item
            continue
        for i in present:
            item = value[i]
            out[i][key] = item.item() if isinstance(item, np.generic) else item
    return out
