"""UEC-v0 as a native numpy-batched ``gymnasium.vector.VectorEnv`` (``gym.make_vec(..., "vector_entry_point")``).

How it is kept fast, and equal to UECEnv. Resets still go through each sub-env's own UECEnv (its
generator, instance handling and ``_draw_arrivals``), so every sub-env draws exactly what the single env
draws; the per-episode table is gathered from a per-instance table of UECEnv's observation rows for
every (slot, device), computed once per instance by UECEnv's own ``_episode_observations``. What UECEnv
keeps current by rewriting the rows of later arrivals on every accept (busy flag, elapsed time, longest
feasible block, reserved backlog, masks) is instead computed for the whole batch at observation time
from the batch's state arrays (leading axis N), with the same elementwise formulas as
``envs.uec.dynamics`` in the same order, so the numbers are bit-identical; the accepts of a step are one
batched update. Per step that is a fixed ~200 numpy calls, whatever N.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from envs.common.validation import check_choice, check_in_range, check_seed
from envs.uec import dynamics
from envs.uec.env import UECEnv
from envs.uec.generator import Scenario
from envs.uec.types import Instance

_UNBOUNDED = dynamics.UNBOUNDED
#: Hall slack (tera-MAC) below which the episode-end info runs the EDF audit (see ``_summary_info``).
_SLACK_TOL = 1e-11
#: Step-only info keys (absent from reset infos, as in UECEnv).
_STEP_KEYS = ("invalid_action", "expected_profit", "duration", "preempted")
#: Episode-end info keys (UECEnv's ``_episode_summary``).
_SUMMARY_KEYS = ("episode_profit", "accepted", "rejected", "invalid_actions", "preemptions",
                 "uec_utilisation", "reserved_completed", "reserved_total")


@dataclass
class _InstanceTables:
    """What the batch reads from one instance: UECEnv's precomputed tables, laid out for gathers."""

    instance: Instance
    static_rows: np.ndarray  # (T·J + 1, n) float32: UECEnv's observation of (t, j) before any accept; last = terminal
    arrival_rows: np.ndarray  # (T·J, 3 + K + K·L) what a step reads of an arrival of j at t (see _ARRIVAL)
    cum: np.ndarray  # (K, C) capacity prefix sums
    pair_start: np.ndarray  # (K, P) Hall pairs, padded with never-binding pairs
    pair_end: np.ndarray
    pair_slack: np.ndarray
    duration_cdf: np.ndarray  # (L, D)
    merged_cum: np.ndarray  # (K·C,) every server's capacity sums, sorted together
    rank: np.ndarray  # (K, K·C + 1): rank[k, m] = how many of server k's sums are among merged_cum[:m]


def _instance_tables(env: UECEnv) -> _InstanceTables:
    """Tables of ``env.instance`` (which ``env`` has already pinned and precomputed)."""
    inst = env.instance
    T, J = inst.horizon, inst.num_devices
    rows = env._episode_observations(np.repeat(np.arange(T), J), np.tile(np.arange(J), T))
    pairs = inst.feasibility_pairs
    P = max(1, max(p.start.size for p in pairs))
    # padding pairs [0, -1] with infinite slack: a block removes nothing from them and they never bind
    start = np.zeros((inst.num_servers, P), np.int64)
    end = np.full((inst.num_servers, P), -1, np.int64)
    slack = np.full((inst.num_servers, P), np.inf)
    for k, p in enumerate(pairs):
        start[k, : p.start.size], end[k, : p.start.size], slack[k, : p.start.size] = p.start, p.end, p.slack
    order = np.argsort(env._cum, axis=None, kind="stable")
    owner = np.arange(inst.num_servers).repeat(env._cum.shape[1])[order]
    rank = np.zeros((inst.num_servers, order.size + 1), np.int64)
    np.cumsum(owner[None, :] == np.arange(inst.num_servers)[:, None], axis=1, out=rank[:, 1:])
    return _InstanceTables(
        merged_cum=env._cum.reshape(-1)[order],
        rank=rank,
        instance=inst,
        static_rows=rows,
        arrival_rows=np.concatenate([
            (inst.weight[:, None] * inst.accuracy_gap).T.reshape(T * J, 1),  # w_j·a_j(t)
            np.tile(inst.perf_scale, T)[:, None],
            np.tile(inst.perf_rate, T)[:, None],
            np.tile(inst.budget, (T, 1)),
            env._profit_by_time.reshape(T * J, -1),  # R_jkl(t)
        ], axis=1),
        cum=env._cum,
        pair_start=start,
        pair_end=end,
        pair_slack=slack,
        duration_cdf=env._duration_cdf,
    )


class UECVectorEnv(VectorEnv):
    """
    ## Description

    ``num_envs`` copies of :class:`envs.uec.env.UECEnv` (UEC-v0, RESCUE's problem: online assignment of
    retraining tasks to edge servers around reserved tasks) stepped together with numpy:
    ``gym.make_vec("UEC-v0", num_envs=N, vectorization_mode="vector_entry_point", **kwargs)``.
    Sub-env ``i`` is the single env: reset with the seed ``seed + i`` (``reset(seed=int)``, Gymnasium's
    convention) it gives exactly the observations, rewards, flags, masks and infos of
    ``gym.make("UEC-v0", **kwargs)`` reset with ``seed + i`` and stepped with the same actions, across
    auto-resets (tests/uec/test_vector_env.py). A step is a fixed number of numpy operations over the
    batch instead of one Python ``step`` per sub-env plus ``SyncVectorEnv``'s info merging, so it pays
    from about N = 8 on (break-even near N = 5; ``python -m benchmarks.env_throughput`` measures it).

    ## Action Space

    ``MultiDiscrete([1 + K·L] * N)`` (``batch_space`` of the single ``Discrete(1 + K·L)``). An action
    outside the space raises ``ValueError``; one inside it but infeasible now is a reject with
    ``infos["invalid_action"][i] = True``, as in UECEnv.

    ## Observation Space

    ``Box(0, 1, (N, n), float32)``: row ``i`` is UECEnv's observation (``single_observation_space``,
    layout ``envs.uec.ObservationLayout``; the last ``1 + K·L`` entries are the action mask).

    ## Starting State, Rewards, Episode End

    As UECEnv's, per sub-env: ``rewards`` is float64 ``(N,)`` (the realised profits), ``terminated`` is
    True after the decision on a sub-env's last arrival, ``truncated`` is always False.

    ## Autoreset

    ``metadata["autoreset_mode"]`` is ``AutoresetMode.NEXT_STEP`` by default (Gymnasium's default): the
    step that ends a sub-env's episode returns its terminal observation, and the next step resets it
    (its action is ignored; reward 0, flags False). ``autoreset_mode=AutoresetMode.SAME_STEP`` (or
    ``"SameStep"``) instead returns the first observation of the next episode at once, with the terminal
    observation and info in ``infos["final_obs"]`` / ``infos["final_info"]`` (what SB3 expects;
    ``agents.vec_env`` needs it).
    Auto-resets draw from each sub-env's own generator without a seed, like ``SyncVectorEnv``.

    ## Information

    UECEnv's info keys batched the ``VectorEnv`` way: ``infos[key]`` is an array over sub-envs and
    ``infos["_" + key]`` says which sub-envs have it. ``action_mask`` and ``safe_action_mask`` are
    ``(N, 1 + K·L)`` int8; the step keys (``invalid_action``, ``expected_profit``, ``duration``,
    ``preempted``) are set for the sub-envs that stepped, the episode-end keys (``episode_profit``, ...,
    ``reserved_completed``, ``reserved_total``) for those whose episode ended (see
    :meth:`_summary_info` for how ``reserved_completed`` is obtained). :meth:`action_masks` returns the
    ``(N, 1 + K·L)`` bool mask (sb3-contrib's MaskablePPO convention). ``render`` is not offered.

    ## Arguments

    ```python
    gym.make_vec("UEC-v0", num_envs=8, vectorization_mode="vector_entry_point", scenario="paper",
                 scenario_overrides=None, instance_seed=0, resample_instance=False,
                 reserved_priority="preempt", autoreset_mode=AutoresetMode.NEXT_STEP)
    ```
    UECEnv's arguments (validated by UECEnv itself, with its errors) plus ``num_envs`` (≥ 1) and
    ``autoreset_mode`` (``AutoresetMode.NEXT_STEP`` / ``SAME_STEP`` or their values ``"NextStep"`` /
    ``"SameStep"``; ``DISABLED`` is not offered). ``reset(seed=..., options=...)`` takes an
    int (seeds ``seed + i``), a list of ``num_envs`` seeds or None; ``options`` (``"instance"``,
    ``"resample"``) go to every sub-env, as in ``SyncVectorEnv``.

    ## Version History

    * v0: initial version.
    """

    metadata = {"render_modes": [], "autoreset_mode": AutoresetMode.NEXT_STEP}
    #: The last ``1 + K·L`` observation entries are the action mask (as in UECEnv).
    observation_ends_with_action_mask = True

    def __init__(
        self,
        num_envs: int = 1,
        scenario: str | Scenario = "paper",
        scenario_overrides: dict[str, Any] | None = None,
        instance_seed: int | None = 0,
        resample_instance: bool = False,
        reserved_priority: str = "preempt",
        autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
        render_mode: str | None = None,
    ) -> None:
        check_in_range("num_envs", num_envs, 1, 1_000_000, integer=True)
        if render_mode is not None:
            raise ValueError(f"render_mode={render_mode!r} is invalid: the vector env renders nothing (expected None)")
        mode = autoreset_mode.value if isinstance(autoreset_mode, AutoresetMode) else autoreset_mode
        mode = check_choice("autoreset_mode", mode, (AutoresetMode.NEXT_STEP.value, AutoresetMode.SAME_STEP.value))
        self.autoreset_mode = AutoresetMode(mode)
        self.metadata = {**self.metadata, "autoreset_mode": self.autoreset_mode}
        self.num_envs = int(num_envs)
        self.render_mode = None
        first = UECEnv(scenario, scenario_overrides, instance_seed, resample_instance, reserved_priority)
        # the other sub-envs share the first one's instance and tables (an instance is never mutated),
        # so the N instance draws of N constructions are made once
        self.envs: list[UECEnv] = [first] + [_clone(first) for _ in range(self.num_envs - 1)]
        self.reserved_priority = first.reserved_priority
        self.layout = first.layout
        self._redraws_instance = first.resample_instance or (first.instance_seed is None and first.scenario is not None)
        self.single_observation_space = first.observation_space
        self.single_action_space = first.action_space
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._n_actions = int(first.action_space.n)
        self._K, self._L = first.instance.num_servers, first.instance.num_profiles
        self._servers = first.layout.slices["servers"]
        self._mask_start = first.layout.offset("action_mask")
        self._arange = np.arange(self.num_envs)
        self._dims = {"T": 0, "C": 0, "P": 0, "D": 0}
        self._tables: list[_InstanceTables | None] = [None] * self.num_envs
        self._cache: dict[int, _InstanceTables] = {}
        self._shared: _InstanceTables | None = None  # the tables of the one instance all sub-envs use, if so
        self._started = False
        self._allocate()
        self._mask = np.ones((self.num_envs, self._n_actions), bool)  # the current masks, updated in place
        self._safe = np.ones((self.num_envs, self._n_actions), bool)

    # --- storage -------------------------------------------------------------------------------
    def _specs(self) -> dict[str, tuple[tuple[Any, ...], Any, Any]]:
        """Batched arrays: name -> (shape with dim names, dtype, fill of padding)."""
        K, L, n, kl = self._K, self._L, self.layout.size, self._K * self._L
        return {
            # per sub-env instance (copied when its instance changes)
            "cum": ((K, "C"), np.float64, np.inf),
            "pair_start": ((K, "P"), np.int64, 0),
            "pair_end": ((K, "P"), np.int64, -1),
            "duration_cdf": ((L, "D"), np.float64, 1.0),
            "max_duration": ((L,), np.int64, 0),
            "unblocked_net": ((K, "T"), np.float64, 0.0),  # reserved releases - capacity, per slot
            "releases": ((K, "T"), np.float64, 0.0),
            "future_releases": (("T1", K), np.float64, 0.0),
            "horizon": ((), np.int64, 0),
            "inv_duration": ((), np.float64, 0.0),
            "inv_reserved": ((), np.float64, 0.0),
            # per episode
            "rows": (("T1", n), np.float32, 0.0),
            "slots": (("T1",), np.int64, 0),
            "devices": (("T1",), np.int64, -1),
            "arrival": (("T", 4 + K + kl), np.float64, 0.0),  # duration uniform, then arrival_rows (_ARRIVAL)
            "n_arrivals": ((), np.int64, 0),
            # state
            "decision": ((), np.int64, 0),
            "time": ((), np.int64, 0),
            "busy_until": ((K,), np.int64, 0),
            "task_start": ((K,), np.int64, 0),
            "pair_slack": ((K, "P"), np.float64, np.inf),
            "backlog": ((K, "T1"), np.float64, 0.0),
            "profit": ((), np.float64, 0.0),
            "accepted": ((), np.int64, 0),
            "rejected": ((), np.int64, 0),
            "invalid_actions": ((), np.int64, 0),
            "preemptions": ((), np.int64, 0),
            "retraining_work": ((), np.float64, 0.0),
            "block_server": (("T",), np.int64, 0),
            "block_start": (("T",), np.int64, 0),
            "block_duration": (("T",), np.int64, 0),
        }

    def _shape(self, dims: tuple[Any, ...], sizes: dict[str, int]) -> tuple[int, ...]:
        sizes = {**sizes, "T1": sizes["T"] + 1}
        return (self.num_envs, *(sizes[d] if isinstance(d, str) else d for d in dims))

    def _allocate(self, sizes: dict[str, int] | None = None) -> None:
        """(Re)allocate the batched arrays for ``sizes`` (never smaller), keeping their contents."""
        new = {k: max(v, (sizes or {}).get(k, 0)) for k, v in self._dims.items()}
        allocated = hasattr(self, "_cum")
        if allocated and new == self._dims:
            return
        for name, (dims, dtype, fill) in self._specs().items():
            array = np.full(self._shape(dims, new), fill, dtype)
            if allocated:
                previous = getattr(self, "_" + name)
                array[tuple(slice(0, s) for s in previous.shape)] = previous
            setattr(self, "_" + name, array)
        self._dims = new
        # flat index of row (i, k) of the capacity sums, for gathers over the batch
        self._cum_base = (np.arange(self.num_envs * self._K) * self._dims["C"]).reshape(self.num_envs, self._K, 1)

    def _load_instance(self, i: int) -> None:
        """Copy sub-env ``i``'s instance tables into row ``i`` of the batch (when its instance changed)."""
        env = self.envs[i]
        current = self._tables[i]
        if current is not None and current.instance is env.instance:
            return
        tables = self._cache.get(id(env.instance))
        if tables is None or tables.instance is not env.instance:
            tables = _instance_tables(env)
            self._cache[id(env.instance)] = tables
        inst = env.instance
        T, C, P, D = inst.horizon, tables.cum.shape[1], tables.pair_start.shape[1], tables.duration_cdf.shape[1]
        self._allocate({"T": T, "C": C, "P": P, "D": D})  # grows the batch's arrays if this instance needs it
        for name in ("cum", "pair_start", "pair_end", "duration_cdf", "unblocked_net", "releases", "future_releases"):
            getattr(self, "_" + name)[i] = self._specs()[name][2]  # padding, then the instance's part
        self._cum[i, :, :C] = tables.cum
        self._pair_start[i, :, :P] = tables.pair_start
        self._pair_end[i, :, :P] = tables.pair_end
        self._duration_cdf[i, :, :D] = tables.duration_cdf
        self._max_duration[i] = env._max_duration
        self._releases[i, :, :T] = inst.reserved_releases
        self._unblocked_net[i, :, :T] = inst.reserved_releases - inst.capacity
        self._future_releases[i, : T + 1] = env._future_releases
        self._horizon[i] = T
        self._inv_duration[i] = env._inv_duration_scale
        self._inv_reserved[i] = env._inv_reserved_scale
        self._tables[i] = tables
        self._shared = tables if all(t is not None and t.instance is inst for t in self._tables) else None
        if self._shared is not None:  # flat offset of rank[k] for every (sub-env, server, pair)
            self._rank_base = (np.arange(self._K) * tables.rank.shape[1])[None, :, None]
        live = {id(t.instance) for t in self._tables if t is not None}
        for key in [key for key in self._cache if key not in live]:
            del self._cache[key]

    def _start_episode(self, i: int, draws: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
        """Row ``i`` starts the episode of arrivals ``draws`` (slots, devices, duration uniforms)."""
        self._load_instance(i)
        tables, env = self._tables[i], self.envs[i]
        slots, devices, u = draws
        A, T, J = slots.size, env.instance.horizon, env.instance.num_devices
        self._n_arrivals[i] = A
        self._slots[i, :A] = slots
        self._slots[i, A:] = T
        self._devices[i, :A] = devices
        self._devices[i, A:] = -1
        self._arrival[i, :A, 0] = u
        self._arrival[i, :A, 1:] = tables.arrival_rows[slots * J + devices]
        self._rows[i, :A] = tables.static_rows[slots * J + devices]
        self._rows[i, A] = tables.static_rows[-1]
        self._decision[i] = 0
        self._time[i] = slots[0]
        self._busy_until[i] = 0
        self._task_start[i] = 0
        self._pair_slack[i] = np.inf
        self._pair_slack[i, :, : tables.pair_slack.shape[1]] = tables.pair_slack
        self._backlog[i] = 0.0
        self._backlog[i, :, : T + 1] = env.instance.free_backlog.T
        for name in ("profit", "accepted", "rejected", "invalid_actions", "preemptions", "retraining_work"):
            getattr(self, "_" + name)[i] = 0

    def _autoreset(self, i: int) -> None:
        """Sub-env ``i``'s next episode, drawn as ``UECEnv.reset()`` (no seed) draws it."""
        env = self.envs[i]
        if self._redraws_instance:
            env.reset()
            self._start_episode(i, (env._arrival_slots, env._arrival_devices, env._duration_u))
        else:
            self._start_episode(i, env._draw_arrivals())

    # --- gymnasium API -------------------------------------------------------------------------
    def reset(self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None):
        """Reset every sub-env: ``seed`` an int (sub-env i gets ``seed + i``), a list or None."""
        if seed is None:
            seeds: list[int | None] = [None] * self.num_envs
        elif isinstance(seed, (list, tuple)):
            if len(seed) != self.num_envs:
                raise ValueError(f"seed has {len(seed)} entries: expected num_envs={self.num_envs} seeds")
            seeds = list(seed)
        else:
            base = check_seed("seed", seed)
            seeds = [base + i for i in range(self.num_envs)]
        for i, env in enumerate(self.envs):
            env.reset(seed=seeds[i], options=options)
            self._start_episode(i, (env._arrival_slots, env._arrival_devices, env._duration_u))
        self._started = True
        self._pending_reset = np.zeros(self.num_envs, bool)
        obs = self._observe()
        return obs, self._base_info()

    def step(self, actions: Any):
        if not self._started:
            raise RuntimeError("call reset() before step()")
        actions = self._check_actions(actions)
        N = self.num_envs
        reward = np.zeros(N)
        expected = np.zeros(N)
        duration = np.zeros(N, np.int64)
        preempted = np.zeros(N, bool)
        resetting = self._pending_reset
        stepped = ~resetting
        feasible = self._mask[self._arange, actions]
        chosen = stepped & (actions != 0)
        invalid = chosen & ~feasible
        accept = np.flatnonzero(chosen & feasible)
        if accept.size:
            reward[accept], expected[accept], duration[accept], preempted[accept] = self._accept(accept, actions[accept])
        self._rejected += stepped & ((actions == 0) | invalid)
        self._invalid_actions += invalid
        self._profit += reward
        self._decision += stepped
        terminated = stepped & (self._decision >= self._n_arrivals)
        self._time = self._slots[self._arange, self._decision]  # slots[A] = T: the terminal time
        ended = np.flatnonzero(terminated)
        step_info = {}
        for key, value in zip(_STEP_KEYS, (invalid, expected, duration, preempted)):
            step_info[key], step_info["_" + key] = value, stepped
        step_info.update(self._summary_info(ended))
        if self.autoreset_mode == AutoresetMode.NEXT_STEP:
            for i in np.flatnonzero(resetting):
                self._autoreset(i)
            obs = self._observe()
            infos = {**self._base_info(), **step_info}
            self._pending_reset = terminated
        elif not ended.size:
            obs = self._observe()
            infos = {**self._base_info(), **step_info}
        else:  # SAME_STEP: the terminal observation and info go to final_obs / final_info
            done = terminated
            final_obs = self._observe()
            final_info = {**self._base_info(), **step_info}
            for key in [key for key in final_info if not key.startswith("_")]:
                final_info["_" + key] = final_info["_" + key] & done
            for i in ended:
                self._autoreset(i)
            obs = self._observe()
            infos = {**self._base_info(), **step_info}
            for key in _SUMMARY_KEYS:  # they belong to the finished episodes, reported in final_info
                del infos[key], infos["_" + key]
            objs = np.empty(N, dtype=object)
            for i in ended:
                objs[i] = final_obs[i]
            infos["final_obs"], infos["_final_obs"] = objs, done.copy()
            infos["final_info"], infos["_final_info"] = final_info, done.copy()
        return obs, reward, terminated, np.zeros(N, bool), infos

    def action_masks(self) -> np.ndarray:
        """``(N, 1 + K·L)`` bool: the feasible actions of every sub-env (sb3-contrib's MaskablePPO)."""
        return self._mask.copy()

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """Attribute ``name`` of each sub-env's UECEnv (instance-level attributes only: the episode
        state lives in the batch)."""
        return tuple(getattr(env, name) for env in self.envs)

    # --- internals -----------------------------------------------------------------------------
    def _check_actions(self, actions: Any) -> np.ndarray:
        """``actions`` as an int64 array of shape (N,); ValueError like UECEnv's for a bad entry."""
        array = np.asarray(actions)
        if array.shape != (self.num_envs,) or array.dtype.kind not in "iu":
            raise ValueError(
                f"actions={actions!r} is invalid: expected {self.num_envs} integers in [0, {self._n_actions - 1}] "
                f"(an integer array of shape ({self.num_envs},))"
            )
        if array.min() < 0 or array.max() >= self._n_actions:
            i = int(np.flatnonzero((array < 0) | (array >= self._n_actions))[0])
            raise ValueError(f"actions[{i}]={array[i]!r} is invalid: expected an integer in [0, {self._n_actions - 1}]")
        return array.astype(np.int64, copy=False)

    def _accept(self, idx: np.ndarray, actions: np.ndarray) -> tuple[np.ndarray, ...]:
        """Carry out the feasible assignments ``actions`` of sub-envs ``idx``: UECEnv.step's accept branch
        and UECEnv._accept, elementwise in the same order (so the same floating-point numbers)."""
        server, profile = np.divmod(actions - 1, self._L)
        d, t = self._decision[idx], self._time[idx]
        arrival = self._arrival[idx, d]  # (n, 4 + K + K·L): u, w_j·a_j(t), A_j, B_j, budgets, R_jkl(t)
        u = arrival[:, 0]
        duration = (self._duration_cdf[idx, profile] <= u[:, None]).sum(axis=1) + 1  # searchsorted(cdf, u, "right") + 1
        limit = self._limits[idx, server]
        preempted = duration > limit
        duration = np.minimum(duration, limit)
        self._preemptions[idx] += preempted
        free_from = t + duration
        cum = self._cum.reshape(-1)
        row = self._cum_base[idx, server, 0]  # flat offset of cum[i, server]
        # realised profit (dynamics.realised_profit)
        cum_t = cum[row + t]
        work = cum[row + free_from] - cum_t
        reward = arrival[:, 1] * (arrival[:, 2] * np.log1p(arrival[:, 3] * work))
        rows = np.arange(idx.size)
        reward[(duration > arrival[rows, 4 + server]) | preempted] = 0.0
        expected = arrival[rows, 3 + self._K + actions]
        # slack of the server's reserved-task constraints (dynamics.block_slack_reduction)
        lo = np.maximum(self._pair_start[idx, server], t[:, None])
        hi = np.maximum(np.minimum(self._pair_end[idx, server] + 1, free_from[:, None]), lo)
        self._pair_slack[idx, server] -= cum[row[:, None] + hi] - cum[row[:, None] + lo]
        # reserved backlog, recomputed where reserved work (backlog or a release) falls in the block
        horizon = self._horizon[idx]
        span = t[:, None] + np.arange(self._dims["D"])  # the block's slots (at most D)
        inside = (span < free_from[:, None]) & (span < horizon[:, None])
        span = np.minimum(span, self._dims["T"] - 1)
        where = (idx * self._K + server)[:, None]
        work_in_block = (self._releases.reshape(-1, self._dims["T"])[where, span]
                         + self._backlog.reshape(-1, self._dims["T"] + 1)[where, span]) > 0
        redo = np.flatnonzero((work_in_block & inside).any(axis=1))
        if redo.size:
            self._recompute_backlog(idx[redo], server[redo], t[redo], free_from[redo])
        self._busy_until[idx, server] = free_from
        self._task_start[idx, server] = t
        self._retraining_work[idx] += cum[row + np.minimum(free_from, horizon)] - cum_t
        n_blocks = self._accepted[idx]
        self._block_server[idx, n_blocks] = server
        self._block_start[idx, n_blocks] = t
        self._block_duration[idx, n_blocks] = duration
        self._accepted[idx] += 1
        return reward, expected, duration, preempted

    def _recompute_backlog(self, idx: np.ndarray, server: np.ndarray, start: np.ndarray, free_from: np.ndarray) -> None:
        """Reserved backlog of ``server`` from ``start`` on, with the server blocked until ``free_from``:
        ``dynamics.backlog_trajectory`` on the whole horizon with zero net input before ``start``
        (the same sums, so the same numbers; entries past an instance's horizon are never read)."""
        slot = np.arange(self._dims["T"])
        blocked = np.where(slot < free_from[:, None], self._releases[idx, server], self._unblocked_net[idx, server])
        walk = np.zeros((idx.size, slot.size + 1))
        np.cumsum(np.where(slot >= start[:, None], blocked, 0.0), axis=1, out=walk[:, 1:])
        old = self._backlog[idx, server]
        initial = old[np.arange(idx.size), start][:, None]
        trajectory = np.maximum(np.maximum(initial + walk, walk - np.minimum.accumulate(walk, axis=1)), 0.0)
        self._backlog[idx, server] = np.where(np.arange(slot.size + 1) >= start[:, None], trajectory, old)

    def _block_limits(self) -> np.ndarray:
        """(N, K) longest feasible block from each sub-env's current slot on each server:
        ``dynamics.max_feasible_block`` over the batch (same operations, so the same numbers)."""
        t = self._time
        first = np.maximum(self._pair_start, t[:, None, None])  # (N, K, P)
        flat, base = self._cum.reshape(-1), self._cum_base
        room = flat[base + first] + (self._pair_slack + dynamics.BLOCK_TOL)
        binding = room < flat[base + np.maximum(self._pair_end + 1, first)]
        if self._shared is not None:  # one instance: one searchsorted on all servers' sums, then per-server ranks
            # (searchsorted(cum[k], room, "right") = the number of server k's sums <= room)
            merged = np.searchsorted(self._shared.merged_cum, room, side="right")
            found = self._shared.rank.reshape(-1)[self._rank_base + merged]
        else:  # a binary search over the rows, for the binding pairs: the number of entries <= room
            found = np.zeros(room.shape, np.int64)
            at = np.flatnonzero(binding)
            if at.size:
                row, target = np.broadcast_to(base, room.shape).reshape(-1)[at], room.reshape(-1)[at]
                size = self._cum.shape[2]
                lo, hi = np.zeros(at.size, np.int64), np.full(at.size, size, np.int64)
                for _ in range(size.bit_length()):
                    mid = (lo + hi) >> 1
                    right = (flat[row + np.minimum(mid, size - 1)] <= target) & (mid < hi)
                    lo = np.where(right, mid + 1, lo)
                    hi = np.where(right | (mid >= hi), hi, mid)
                found.reshape(-1)[at] = lo
        found[~binding] = _UNBOUNDED
        reach = found[:, :, 0].copy()
        for p in range(1, found.shape[2]):  # min over the pairs (faster than a reduction over a short last axis)
            np.minimum(reach, found[:, :, p], out=reach)
        # UNBOUNDED - 1 - t stays far above any duration: every use (the mask, the preemption test,
        # the clipped observation) treats it exactly as UNBOUNDED
        return reach - 1 - t[:, None]

    def _observe(self) -> np.ndarray:
        """The batch's observations; sets ``_mask``, ``_safe`` and ``_limits`` (what UECEnv's tables hold)."""
        N, K = self.num_envs, self._K
        t = self._time
        obs = self._rows[self._arange, self._decision]
        busy = t[:, None] < self._busy_until  # (N, K)
        idle = ~busy
        limits = self._block_limits()
        inv_d = self._inv_duration[:, None]
        servers = obs[:, self._servers].reshape(N, K, 5)  # a view: writes go to obs
        servers[:, :, 1] = busy
        servers[:, :, 2] = np.minimum((t[:, None] - self._task_start) * inv_d, 1.0) * busy
        backlog = self._backlog[self._arange, :, t] + self._future_releases[self._arange, t]
        servers[:, :, 3] = np.minimum(backlog * self._inv_reserved[:, None], 1.0)
        servers[:, :, 4] = np.minimum(limits * inv_d, 1.0) * idle
        safe, mask = self._safe, self._mask  # column 0 (reject) is always True
        safe[:, 1:] = (idle[:, :, None] & (limits[:, :, None] >= self._max_duration[:, None, :])).reshape(N, -1)
        mask[:, 1:] = safe[:, 1:] if self.reserved_priority == "mask" else np.repeat(idle, self._L, axis=1)
        over = np.flatnonzero(self._decision >= self._n_arrivals)
        if over.size:  # the terminal observation: UECEnv's last table row, only "reject" feasible
            obs[over] = self._rows[over, self._decision[over]]
            mask[over, 1:] = False
            safe[over, 1:] = False
        obs[:, self._mask_start + 1 :] = mask[:, 1:]
        self._limits = limits
        return obs

    def _base_info(self) -> dict[str, Any]:
        """The info keys every reset and step has (batched; every sub-env has them)."""
        every = np.ones(self.num_envs, bool)
        device = self._devices[self._arange, self._decision]  # devices[A] = -1 after the end
        return {
            "action_mask": self._mask.astype(np.int8), "_action_mask": every,
            "safe_action_mask": self._safe.astype(np.int8), "_safe_action_mask": every,
            "time": self._time.copy(), "_time": every,
            "device": device, "_device": every,
        }

    def _summary_info(self, done: np.ndarray) -> dict[str, Any]:
        """UECEnv's episode-end keys for the sub-envs ``done`` (an index array), batched.

        ``reserved_completed``: when every Hall slack is still ≥ -``_SLACK_TOL`` the reserved tasks are
        feasible up to a shortfall far below the audit's tolerance (1e-9), so EDF meets them all (see
        ``envs.uec.dynamics``) and it is ``reserved_total``; otherwise UECEnv's EDF audit
        (``dynamics.edf_service`` on the capacity the blocks left) counts them. Blocks that use a pair's
        whole slack leave rounding residues of about -1e-13, hence the tolerance. Tests check the
        count against UECEnv's audit."""
        if not done.size:
            return {}
        n = self.num_envs
        mask = np.zeros(n, bool)
        mask[done] = True
        totals = np.array([len(self._tables[i].instance.reserved) for i in done], np.int64)
        completed = totals.copy()
        for j in np.flatnonzero(self._pair_slack[done].min(axis=(1, 2)) < -_SLACK_TOL):
            completed[j] = self._edf_audit(int(done[j]))
        uec = np.array([self.envs[i]._uec_capacity for i in done])
        values = {
            "episode_profit": self._profit[done],
            "accepted": self._accepted[done],
            "rejected": self._rejected[done],
            "invalid_actions": self._invalid_actions[done],
            "preemptions": self._preemptions[done],
            "uec_utilisation": np.where(uec > 0, self._retraining_work[done] / np.where(uec > 0, uec, 1.0), 0.0),
            "reserved_completed": completed,
            "reserved_total": totals,
        }
        out: dict[str, Any] = {}
        for key in _SUMMARY_KEYS:
            full = np.zeros(n, values[key].dtype)
            full[done] = values[key]
            out[key], out["_" + key] = full, mask
        return out

    def _edf_audit(self, i: int) -> int:
        """UECEnv's EDF audit of sub-env ``i``: reserved tasks met on the capacity its blocks left."""
        inst = self._tables[i].instance
        res, horizon, n = inst.reserved, inst.horizon, int(self._accepted[i])
        blocks = zip(self._block_server[i, :n].tolist(), self._block_start[i, :n].tolist(),
                     self._block_duration[i, :n].tolist())
        available = inst.capacity.copy()
        for server, start, duration in blocks:
            available[server, start : min(start + duration, horizon)] = 0.0
        completed = 0
        for k in np.unique(res.server):
            on_k = res.server == k
            served = dynamics.edf_service(available[k], res.start[on_k], res.end[on_k], res.demand[on_k])
            completed += int(np.sum(served >= res.demand[on_k] * (1 - 1e-9) - 1e-9))
        return completed


def _clone(env: UECEnv) -> UECEnv:
    """A sub-env sharing ``env``'s instance and precomputed tables, with its own generator (unseeded)."""
    clone = UECEnv.__new__(UECEnv)
    clone.__dict__.update(env.__dict__)
    clone._np_random = None
    clone._np_random_seed = None
    return clone
