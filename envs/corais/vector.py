"""CoRaiS-v0 / CoRaiS-v1 as native numpy-batched ``gymnasium.vector.VectorEnv``s
(``gym.make_vec(id, num_envs=N, vectorization_mode="vector_entry_point", **kwargs)``).

How it stays equal to the single env. Every CoRaiS episode is one dispatch, so a sub-env's whole state is
its instance: the vector env holds the N instances' cost tables and observations as arrays with a leading
N axis (``generator.InstanceBatch``) and no per-sub-env Python objects on the fast path.

* Draws: each sub-env keeps its own ``np.random.Generator`` (the ``np_random`` of a ``CoRaiSEnv`` it owns,
  seeded by ``gymnasium.utils.seeding`` exactly as ``Env.reset(seed=...)`` seeds it). A reset takes one
  integer from it and draws the instance from ``default_rng`` of that integer, as ``CoRaiSEnv.reset`` does,
  through ``generator.generate_batch`` -- the function ``generate`` itself calls with one generator: the
  draws are a per-generator loop in the single env's order, everything computed from them is batched.
* Formulas: the generator's and the cost's functions (``workload_features``, ``cost_tables``,
  ``edge_features``, ``request_features``, ``dynamics.response_times``) take the leading batch axis, and
  their batched results equal the per-instance ones bit for bit (elementwise numpy, sequential
  per-segment sums, one einsum layout); there is no second copy of any formula here.
* Instances that are not drawn from the scenario (``instance_seed``, ``characteristic``, reset option
  ``"instance"``) are made by the owned ``CoRaiSEnv.reset`` itself and copied into the batch.
Tests: tests/corais/test_corais_vector.py compares every sub-env with ``gym.make(id)`` over seeds, scales,
options and both autoreset modes.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from envs.common.validation import check_reset_options
from envs.common.vector import SubEnvBatch
from envs.corais.dynamics import response_times
from envs.corais.env import CoRaiSEnv, CoRaiSEnvV1
from envs.corais.generator import edge_features, generate_seeded, request_features
from envs.corais.types import CostTables

#: Info keys of a step (absent from reset infos, as in CoRaiSEnv).
STEP_KEYS: tuple[str, ...] = ("edge_times", "cost", "requests_per_edge", "data_per_edge")


class CoRaiSVectorEnv(SubEnvBatch):
    """
    ## Description

    ``num_envs`` copies of :class:`envs.corais.env.CoRaiSEnv` stepped together with numpy:
    ``gym.make_vec("CoRaiS-v0", num_envs=N, vectorization_mode="vector_entry_point", **kwargs)``
    (:class:`CoRaiSVectorEnvV1` for CoRaiS-v1). Sub-env ``i`` is the single env: reset with ``seed + i``
    (``reset(seed=int)``, Gymnasium's convention) it gives exactly the observations, rewards, flags and
    infos of ``gym.make(id, **kwargs)`` reset with ``seed + i`` and stepped with the same actions, across
    auto-resets. Resets draw with one generator per sub-env and compute the instances batched; a step is
    one batched cost evaluation (``dynamics.response_times``).

    ## Action Space

    ``Box(0, Q-1, (N, Z), int64)``: ``batch_space`` of the single env's ``MultiDiscrete([Q] * Z)``, as in
    ``SyncVectorEnv``. Actions of another shape, a non-integer dtype or entries outside [0, Q-1] raise
    ``ValueError`` naming ``actions``.

    ## Observation Space

    ``Dict`` with "edges" (N, Q, 10) and "requests" (N, Z, 6) float32 (flattened per sub-env to (N, Q*10)
    and (N, Z*6) with ``flat_observation=True``): row ``i`` is the single env's observation.

    ## Rewards, Episode End

    ``rewards`` float64 (N,) = -R(pi) per sub-env; every episode is one dispatch, so ``terminated`` is True
    for every sub-env that stepped; ``truncated`` is always False.

    ## Autoreset

    ``AutoresetMode.NEXT_STEP`` (default): the step that ends an episode returns its (terminal) observation,
    the next step resets the sub-env (its action is ignored; reward 0, flags False, the reset info).
    ``AutoresetMode.SAME_STEP`` (or ``"SameStep"``): every step returns the next episode's first
    observation, with the terminal observation and step info in ``infos["final_obs"]`` /
    ``infos["final_info"]``. Auto-resets draw from each sub-env's own generator without a seed, like
    ``SyncVectorEnv``.

    ## Information

    The single env's keys batched the ``VectorEnv`` way (``infos[key]`` over sub-envs and ``infos["_key"]``
    saying which have it, as ``SyncVectorEnv`` builds them): ``scale`` (an object array of (N, Q, Z)) for
    every sub-env; ``edge_times`` (N, Q), ``cost`` (N,), ``requests_per_edge`` (N, Q) int64 and
    ``data_per_edge`` (N, Q) for the sub-envs that stepped. ``render`` is not offered.

    ## Arguments

    The single env's arguments (validated by ``CoRaiSEnv`` itself, with its errors) plus ``num_envs``
    (>= 1) and ``autoreset_mode``; ``render_mode`` must be None. ``reset(seed=..., options=...)`` takes an
    int (sub-env i gets ``seed + i``), a list of ``num_envs`` seeds or None; ``options`` (``"instance"``)
    go to every sub-env, as in ``SyncVectorEnv``.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": [], "autoreset_mode": AutoresetMode.NEXT_STEP}
    #: The single env class whose sub-envs this batches.
    env_class: ClassVar[type[CoRaiSEnv]] = CoRaiSEnv

    def __init__(
        self,
        num_envs: int = 1,
        scale: Any = (10, 5, 100),
        scenario_overrides: dict[str, Any] | None = None,
        instance_seed: int | None = None,
        flat_observation: bool = False,
        characteristic: str | None = None,
        render_mode: str | None = None,
        autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
    ) -> None:
        self._init_batch(num_envs, autoreset_mode, render_mode)
        first = self.env_class(scale, scenario_overrides, instance_seed, flat_observation, characteristic)
        # the sub-envs own the generators (and make the instances not drawn from the scenario); they share
        # the first one's scenario and fixed instance, so a fixed instance is drawn once
        self.envs: list[CoRaiSEnv] = [first] + [_clone(first) for _ in range(self.num_envs - 1)]
        self.scenario = first.scenario
        self.flat_observation = first.flat_observation
        self.single_observation_space = first.observation_space
        self.single_action_space = first.action_space
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        _, q, z = self.scenario.scale
        self._q, self._z = q, z
        # instances drawn from the scenario are generated batched; the others come from CoRaiSEnv.reset
        self._drawn = first._fixed is None and first.characteristic is None
        self._high_edges = first.observation_space["edges"].high.reshape(q, 10)
        self._high_requests = first.observation_space["requests"].high.reshape(z, 6)
        n = self.num_envs
        self._cmp, self._trn, self._res = (np.zeros((n, z, q)) for _ in range(3))
        self._src = np.zeros((n, z), np.int64)
        self._workload = np.zeros((n, q, 5))
        self._req_d = np.zeros((n, z))
        self._edges = np.zeros((n, q, 10), np.float32)
        self._requests = np.zeros((n, z, 6), np.float32)
        self._scale = np.empty(n, dtype=object)
        self._scale.fill(self.scenario.scale)
        self._every = np.ones(n, bool)
        self._offsets = (np.arange(n, dtype=np.int64) * q)[:, None]
        self._started = False
        self._pending_reset = np.zeros(n, bool)

    # --- gymnasium API -------------------------------------------------------------------------
    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Reset every sub-env: ``seed`` an int (sub-env i gets ``seed + i``), a list or None."""
        self.check_open("reset")
        seeds = self.sub_env_seeds(seed)
        options = check_reset_options(options, ("instance",))
        for env, s in zip(self.envs, seeds, strict=True):
            if s is not None:  # what gymnasium.Env.reset(seed=s) does
                env._np_random, env._np_random_seed = seeding.np_random(s)
        self._start(np.arange(self.num_envs), options)
        self._started = True
        self._pending_reset = np.zeros(self.num_envs, bool)
        return self._observation(), {"scale": self._scale.copy(), "_scale": self._every.copy()}

    def step(
        self, actions: Any
    ) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Dispatch every sub-env's batch (or auto-reset it, see Autoreset) with ``actions`` (N, Z)."""
        self.check_open("step")
        if not self._started:
            raise RuntimeError("call reset() before step(): the vector env has no episode")
        acts = self._check_actions(actions)
        n, q = self.num_envs, self._q
        stepped = ~self._pending_reset
        sel = slice(None) if stepped.all() else np.flatnonzero(stepped)
        rewards = np.zeros(n)
        step_info: dict[str, Any] = {}  # as SyncVectorEnv: a key only when some sub-env has it
        if stepped.any():
            tables = CostTables(cmp=self._cmp[sel], trn=self._trn[sel], res=self._res[sel], src=self._src[sel],
                                workload=self._workload[sel])
            act = acts[sel]
            cost, times = response_times(tables, act[:, None, :])
            seg = (self._offsets[: act.shape[0]] + act).ravel()
            size = act.shape[0] * q
            counts = np.bincount(seg, minlength=size).astype(np.int64).reshape(-1, q)
            data = np.bincount(seg, weights=self._req_d[sel].ravel(), minlength=size).reshape(-1, q)
            rewards[sel] = -cost[:, 0]
            for key, value in zip(STEP_KEYS, (times[:, 0], cost[:, 0], counts, data), strict=True):
                full = np.zeros((n, *value.shape[1:]), value.dtype)
                full[sel] = value
                step_info[key], step_info["_" + key] = full, stepped.copy()
        terminated = stepped.copy()
        truncated = np.zeros(n, bool)
        if self.autoreset_mode == AutoresetMode.NEXT_STEP:
            resetting = np.flatnonzero(self._pending_reset)
            if resetting.size:
                self._start(resetting, {})
            self._pending_reset = terminated.copy()
            infos = {**step_info, "scale": self._scale.copy(), "_scale": self._every.copy()}
            return self._observation(), rewards, terminated, truncated, infos
        # SAME_STEP: every sub-env ends its episode now; the terminal observation goes to final_obs
        final = self._observation()
        final_obs = np.empty(n, dtype=object)
        for i in range(n):
            final_obs[i] = {key: value[i] for key, value in final.items()}
        final_info = {**step_info, "scale": self._scale.copy(), "_scale": self._every.copy()}
        self._start(np.arange(n), {})
        infos = {"final_obs": final_obs, "_final_obs": self._every.copy(), "final_info": final_info,
                 "_final_info": self._every.copy(), "scale": self._scale.copy(), "_scale": self._every.copy()}
        return self._observation(), rewards, terminated, truncated, infos

    def close_extras(self, **kwargs: Any) -> None:
        """Release the episodes; ``step()`` and ``reset()`` then raise VectorEnvClosedError."""
        self._started = False

    # --- internals -----------------------------------------------------------------------------
    def _check_actions(self, actions: Any) -> np.ndarray:
        """``actions`` as an int64 (N, Z) array; ValueError naming ``actions`` and the allowed values."""
        n, q, z = self.num_envs, self._q, self._z
        expected = f"expected an integer array of shape (num_envs={n}, Z={z}) with entries in [0, {q - 1}]"
        try:
            array = np.asarray(actions)
        except ValueError:  # ragged nested sequences
            raise ValueError(f"actions={actions!r} is invalid: {expected}") from None
        if array.shape != (n, z) or array.dtype.kind not in "iu":
            raise ValueError(f"actions with shape {array.shape} and dtype {array.dtype} are invalid: {expected}")
        if array.min() < 0 or array.max() >= q:
            i, j = (int(v[0]) for v in np.nonzero((array < 0) | (array >= q)))
            raise ValueError(f"actions[{i}, {j}]={array[i, j]!r} is invalid: expected a region edge in [0, {q - 1}]")
        return array.astype(np.int64, copy=False)

    def _start(self, idx: np.ndarray, options: dict[str, Any]) -> None:
        """Start the next episode of sub-envs ``idx`` (their generators already seeded), as
        ``CoRaiSEnv.reset(options=options)`` would."""
        if self._drawn and options.get("instance") is None:
            # CoRaiSEnv.reset: one integer from np_random seeds the generator the instance is drawn from
            seeds = [int(self.envs[i].np_random.integers(0, 2**63 - 1)) for i in idx]
            batch = generate_seeded(self.scenario, seeds)
            t = batch.tables
            rows = (t.cmp, t.trn, t.res, t.src, t.workload, batch.req_d,
                    np.minimum(edge_features(batch), self._high_edges),
                    np.minimum(request_features(batch), self._high_requests))
            self._store(idx, rows)
            return
        for i in idx:
            env = self.envs[i]
            obs, _ = env.reset(options=options)
            t = env.instance.tables
            rows = (t.cmp, t.trn, t.res, t.src, t.workload, env.instance.req_d,
                    obs["edges"].reshape(self._q, 10), obs["requests"].reshape(self._z, 6))
            self._store(np.array([i]), tuple(r[None] for r in rows))

    def _store(self, idx: np.ndarray, rows: tuple[np.ndarray, ...]) -> None:
        """Write the instance rows (batched, one per entry of ``idx``) into the batch's arrays."""
        names = ("_cmp", "_trn", "_res", "_src", "_workload", "_req_d", "_edges", "_requests")
        whole = idx.size == self.num_envs
        for name, value in zip(names, rows, strict=True):
            if whole:  # every sub-env: a fresh copy (never a view of an instance's arrays)
                setattr(self, name, np.array(value, dtype=getattr(self, name).dtype))
            else:
                getattr(self, name)[idx] = value

    def _observation(self) -> dict[str, np.ndarray]:
        """The batch's observations (copies: the batch's arrays are overwritten by later resets)."""
        n = self.num_envs
        if self.flat_observation:
            return {"edges": self._edges.reshape(n, -1).copy(), "requests": self._requests.reshape(n, -1).copy()}
        return {"edges": self._edges.copy(), "requests": self._requests.copy()}


class CoRaiSVectorEnvV1(CoRaiSVectorEnv):
    """CoRaiS-v1 batched: :class:`CoRaiSVectorEnv` of :class:`envs.corais.env.CoRaiSEnvV1`."""

    env_class: ClassVar[type[CoRaiSEnv]] = CoRaiSEnvV1


def _clone(env: CoRaiSEnv) -> CoRaiSEnv:
    """A sub-env sharing ``env``'s scenario, spaces and fixed instance, with its own (unseeded) generator."""
    clone = env.__class__.__new__(env.__class__)
    clone.__dict__.update(env.__dict__)
    clone._np_random = None
    clone._np_random_seed = None
    return clone
