"""ASET-v0 / ASET-v1 as a native batched ``gymnasium.vector.VectorEnv`` (``gym.make_vec(..., "vector_entry_point")``).

How it stays equal to ASETEnv. Each sub-env is an :class:`envs.aset.env.ASETEnv` (ASETEnvV1 for v1)
that owns its instance, State and generators: resets go through its own ``reset`` (instance draws,
seeding, reset options, all unchanged), and a step advances it with the same
``envs.aset.dynamics.simulate_window`` call ``ASETEnv.step`` makes, with the same generators, so every
draw and every sum is the single env's. What the batch does differently is everything after the
simulation: the observations come from one ``dynamics.observation_batch`` call over the (N, K, W)
stacked window results and the reward, outcome fractions and flags from one
``envs.aset.env.window_outcomes`` call; ASETEnv computes its own observation and info with these same
functions on a batch of one, and both are elementwise, so every number is bit-identical
(tests/aset/test_aset_vector.py). Infos are written straight into batched arrays (Gymnasium's
``info[key]`` + ``info["_key"]`` convention) instead of one dict per sub-env merged key by key.

Why the simulation itself is not batched: a window's cost (about 0.5 ms at the default load) is the
simulation (the compiled loops over live streams and sub-windows, which must keep their summation order
to stay bit-identical, scipy's normal CDF on the uncertain ones and numpy's draws from each sub-env's own
generators); the per-window Python work a batch can remove (ASETEnv.step's wrappers, observation and
info, SyncVectorEnv's info merging) is about a sixth of it, so this env is ~1.1x SyncVectorEnv, not more.
"""

from __future__ import annotations

import copy
from typing import Any, ClassVar

import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from envs.aset.dynamics import NUM_CLASS_BINS, observation_batch, simulate_window
from envs.aset.env import ASETEnv, ASETEnvV1, window_outcomes
from envs.aset.types import POLICY_NAMES, Instance
from envs.common.vector import SubEnvBatch

_N_ACTIONS = len(POLICY_NAMES)
#: Info keys with one float / int per sub-env (the others: action_mask, policy, class_*).
_FLOAT_KEYS = ("queries", "success", "failed", "rejected")
_INT_KEYS = ("window", "arrivals", "rejected_streams")
_CLASS_KEYS = ("class_queries", "class_success", "class_failed", "class_rejected")
#: The policy names as an object array, indexed by action (the ``policy`` info of a step).
_POLICY_OBJECTS = np.array(POLICY_NAMES, dtype=object)


class ASETVectorEnv(SubEnvBatch):
    """
    ## Description

    ``num_envs`` copies of :class:`envs.aset.env.ASETEnv` (ASET-v0: each window, the static policy
    binding the streams arriving next) stepped together:
    ``gym.make_vec("ASET-v0", num_envs=N, vectorization_mode="vector_entry_point", **kwargs)``.
    Sub-env ``i`` is the single env: reset with the seed ``seed + i`` (``reset(seed=int)``, Gymnasium's
    convention) it gives exactly the observations, rewards, flags, masks and infos of
    ``gym.make("ASET-v0", **kwargs)`` reset with ``seed + i`` and stepped with the same actions, across
    auto-resets (tests/aset/test_aset_vector.py). The stream simulation of each sub-env is ASETEnv's
    (numba-compiled, most of a step's time); the observations, rewards and infos are batched.

    ## Action Space

    ``MultiDiscrete([7] * N)`` (``batch_space`` of the single ``Discrete(7)``). Actions that are not an
    integer array of shape (N,) with entries in [0, 6] raise ValueError naming ``actions``.

    ## Observation Space

    ``Box(0, 10, (N, *single_shape), float32)``: row ``i`` is ASETEnv's observation (flat or 2-D
    following ``obs_layout``).

    ## Starting State, Rewards, Episode End

    As ASETEnv's, per sub-env: ``rewards`` is float64 ``(N,)`` (the windows' success fractions),
    ``terminated`` when it falls below ``theta``, ``truncated`` after ``horizon`` windows.

    ## Autoreset

    ``metadata["autoreset_mode"]`` is ``AutoresetMode.NEXT_STEP`` by default: the step that ends a
    sub-env's episode returns its terminal observation, and the next step resets it (its action is
    ignored; reward 0, flags False, the reset's observation and info). ``autoreset_mode=
    AutoresetMode.SAME_STEP`` (or ``"SameStep"``) returns the first observation of the next episode at
    once, with the terminal observation and info in ``infos["final_obs"]`` / ``infos["final_info"]``
    (rows of the sub-envs that did not end left empty, as ``SyncVectorEnv`` leaves them).
    Auto-resets reset the sub-env without a seed (from its own generator), like ``SyncVectorEnv``.

    ## Information

    ASETEnv's info keys batched the ``VectorEnv`` way (every sub-env has every key, so every
    ``infos["_" + key]`` is all True), with ``SyncVectorEnv``'s dtypes: ``action_mask`` ``(N, 7)`` int8
    ones; ``window``, ``arrivals``, ``rejected_streams`` int64; ``queries``, ``success``, ``failed``,
    ``rejected`` float64; the ``class_*`` keys ``(N, A)`` float64; ``policy`` an object array of names.
    :meth:`action_masks` returns the ``(N, 7)`` bool mask (all True). ``render`` is not offered.

    ## Arguments

    ASETEnv's arguments (validated by ASETEnv itself, with its errors) plus ``num_envs`` (≥ 1) and
    ``autoreset_mode`` (``AutoresetMode.NEXT_STEP`` / ``SAME_STEP`` or ``"NextStep"`` / ``"SameStep"``;
    ``DISABLED`` is not offered). ``reset(seed=..., options=...)`` takes an int (seeds ``seed + i``), a
    list of ``num_envs`` seeds or None; ``options`` (``"instance"``, ``"resample"``) go to every sub-env,
    as in ``SyncVectorEnv``.

    ## Version History

    * v0: initial version.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": [], "autoreset_mode": AutoresetMode.NEXT_STEP}
    #: The single env class of each sub-env.
    env_class: ClassVar[type[ASETEnv]] = ASETEnv

    def __init__(
        self,
        num_envs: int = 1,
        *,
        autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
        render_mode: str | None = None,
        **env_kwargs: Any,
    ) -> None:
        self._init_batch(num_envs, autoreset_mode, render_mode)
        first = self.env_class(**env_kwargs)
        # the other sub-envs start from the first one's instance (never mutated) and generator states,
        # exactly what N constructions with the same arguments would hold, without N instance draws
        self.envs: list[ASETEnv] = [first] + [_clone(first) for _ in range(self.num_envs - 1)]
        self.single_observation_space = first.observation_space
        self.single_action_space = first.action_space
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        n_w, k_sub, n_a = first.instance.num_workers, first.instance.sub_windows, first.instance.num_apps
        n = self.num_envs
        self._theta, self._horizon = first.theta, first.horizon
        # per sub-env instance constants of the observation (refreshed when its instance changes)
        self._instances: list[Instance | None] = [None] * n
        self._capacity = np.ones((n, n_w))
        self._mean_fps = np.ones(n)
        self._total_capacity = np.ones(n)
        # the stacked window results of the last step
        self._streams_kw = np.zeros((n, k_sub, n_w))
        self._served_kw = np.zeros((n, k_sub, n_w))
        self._load_kw = np.zeros((n, k_sub, n_w))
        self._class_rate = np.zeros((n, k_sub, NUM_CLASS_BINS))
        self._totals = np.zeros((n, 4))
        self._app = np.zeros((n, 4, n_a))
        self._arrivals = np.zeros(n, np.int64)
        self._rejected_streams = np.zeros(n, np.int64)
        self._obs = np.zeros(self.observation_space.shape, np.float32)
        self._mask = np.ones((n, _N_ACTIONS), bool)
        self._every = np.ones(n, bool)
        self._started = False
        self._pending_reset = np.zeros(n, bool)

    # --- gymnasium API -------------------------------------------------------------------------
    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Reset every sub-env: ``seed`` an int (sub-env i gets ``seed + i``), a list of N seeds or None."""
        self.check_open("reset")
        seeds = self.sub_env_seeds(seed)
        infos = self._empty_info()
        for i in range(self.num_envs):
            self._reset_sub_env(i, infos, seed=seeds[i], options=options)
        self._started = True
        self._pending_reset = np.zeros(self.num_envs, bool)
        return self._obs.copy(), infos

    def step(
        self, actions: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step every sub-env with its action (sub-envs that ended at the last step reset instead in
        ``NEXT_STEP`` mode); returns batched observations, float64 rewards, bool flags and infos."""
        self.check_open("step")
        if not self._started:
            raise RuntimeError("call reset() before step()")
        actions = self._check_actions(actions)
        n = self.num_envs
        resetting = self._pending_reset
        stepped = np.flatnonzero(~resetting)
        for i in stepped.tolist():
            env = self.envs[i]
            result = simulate_window(env.instance, env.state, int(actions[i]), env._arrival_rng, env._choice_rng)
            env.last_result = result
            self._streams_kw[i] = result.streams_kw
            self._served_kw[i] = result.served_kw
            self._load_kw[i] = result.load_kw
            self._class_rate[i] = result.class_rate_kc
            self._totals[i] = result.totals
            app = self._app[i]
            app[0], app[1], app[2], app[3] = (result.app_queries, result.app_succeeded, result.app_failed,
                                              result.app_rejected)
            self._arrivals[i] = result.arrivals
            self._rejected_streams[i] = result.rejected_at_arrival
        out = window_outcomes(self._totals[stepped], self._app[stepped])
        obs = observation_batch(
            self._capacity[stepped], self._mean_fps[stepped], self._total_capacity[stepped],
            self._streams_kw[stepped], self._served_kw[stepped], self._load_kw[stepped], self._class_rate[stepped],
        )
        self._obs[stepped] = obs.reshape(stepped.size, *self.single_observation_space.shape)
        windows = np.array([env.state.window for env in self.envs], np.int64)
        reward = np.zeros(n)
        reward[stepped] = out["success"]
        terminated = np.zeros(n, bool)
        terminated[stepped] = out["success"] < self._theta
        truncated = ~resetting & (windows >= self._horizon) & ~terminated
        done = terminated | truncated
        for i in np.flatnonzero(done).tolist():
            self.envs[i]._needs_reset = True
        infos = self._empty_info()
        infos["window"][:] = windows
        infos["policy"][stepped] = _POLICY_OBJECTS[actions[stepped]]
        infos["queries"][stepped] = self._totals[stepped, 0]
        for key in ("success", "failed", "rejected"):
            infos[key][stepped] = out[key]
        infos["class_queries"][stepped] = self._app[stepped, 0]
        for key in ("class_success", "class_failed", "class_rejected"):
            infos[key][stepped] = out[key]
        infos["arrivals"][stepped] = self._arrivals[stepped]
        infos["rejected_streams"][stepped] = self._rejected_streams[stepped]
        if self.autoreset_mode == AutoresetMode.NEXT_STEP:
            for i in np.flatnonzero(resetting).tolist():
                self._reset_sub_env(i, infos)
            self._pending_reset = done
            return self._obs.copy(), reward, terminated, truncated, infos
        ended = np.flatnonzero(done)
        if ended.size:  # SAME_STEP: the terminal observations and infos go to final_obs / final_info
            final_obs = np.empty(n, dtype=object)
            for i in ended.tolist():
                final_obs[i] = self._obs[i].copy()
            final_info: dict[str, Any] = {}
            for key in [key for key in infos if not key.startswith("_")]:
                value = infos[key]  # rows of sub-envs that did not end stay empty, as SyncVectorEnv leaves them
                final_info[key] = np.full(n, None, object) if value.dtype == object else np.zeros_like(value)
                final_info[key][ended] = value[ended]
                final_info["_" + key] = done.copy()
            for i in ended.tolist():
                self._reset_sub_env(i, infos)
            infos["final_obs"], infos["_final_obs"] = final_obs, done.copy()
            infos["final_info"], infos["_final_info"] = final_info, done.copy()
        return self._obs.copy(), reward, terminated, truncated, infos

    def action_masks(self) -> np.ndarray:
        """``(N, 7)`` bool: every policy of every sub-env is allowed (sb3-contrib's MaskablePPO convention)."""
        return self._mask.copy()

    def close_extras(self, **kwargs: Any) -> None:
        """Close every sub-env; ``step`` and ``reset`` then raise VectorEnvClosedError."""
        for env in self.envs:
            env.close()

    # --- internals -----------------------------------------------------------------------------
    def _check_actions(self, actions: Any) -> np.ndarray:
        """``actions`` as an int64 array of shape (N,); ValueError naming ``actions`` otherwise."""
        array = self.discrete_actions(actions, _N_ACTIONS)
        bad = (array < 0) | (array >= _N_ACTIONS)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"actions[{i}]={array[i]!r} is invalid: expected an integer in [0, {_N_ACTIONS - 1}] "
                             f"({', '.join(POLICY_NAMES)})")
        return array.astype(np.int64, copy=False)

    def _empty_info(self) -> dict[str, Any]:
        """Batched info arrays (every key present for every sub-env), filled in by the caller."""
        n, n_a = self.num_envs, self._app.shape[2]
        infos: dict[str, Any] = {"action_mask": self._mask.astype(np.int8)}
        infos["window"] = np.zeros(n, np.int64)
        infos["policy"] = np.full(n, "", dtype=object)
        for key in _FLOAT_KEYS:
            infos[key] = np.zeros(n)
        for key in _CLASS_KEYS:
            infos[key] = np.zeros((n, n_a))
        for key in _INT_KEYS[1:]:
            infos[key] = np.zeros(n, np.int64)
        for key in list(infos):
            infos["_" + key] = self._every.copy()
        return infos

    def _reset_sub_env(self, i: int, infos: dict[str, Any], **reset_kwargs: Any) -> None:
        """Reset sub-env ``i`` through its own ASETEnv.reset; write its observation and info into row ``i``."""
        env = self.envs[i]
        obs, info = env.reset(**reset_kwargs)
        self._obs[i] = obs
        for key in _FLOAT_KEYS + _INT_KEYS + _CLASS_KEYS + ("policy", "action_mask"):
            infos[key][i] = info[key]
        if self._instances[i] is not env.instance:  # the observation constants of its (new) instance
            inst = env.instance
            self._instances[i] = inst
            self._capacity[i] = inst.worker_capacity_qps
            self._mean_fps[i] = inst.fps_choices.mean()
            self._total_capacity[i] = inst.worker_capacity_qps.sum()


class ASETVectorEnvV1(ASETVectorEnv):
    """ASET-v1's native vector env: :class:`ASETVectorEnv` over :class:`envs.aset.env.ASETEnvV1` sub-envs."""

    env_class: ClassVar[type[ASETEnv]] = ASETEnvV1


def _clone(env: ASETEnv) -> ASETEnv:
    """A sub-env sharing ``env``'s instance, with its own copy of the instance generator (so that resampled
    instances follow the same stream as a fresh env's) and its own (unseeded) episode generators."""
    clone = copy.copy(env)
    clone._instance_rng = copy.deepcopy(env._instance_rng)
    clone._np_random = None
    clone._np_random_seed = None
    return clone
