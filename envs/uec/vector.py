"""UEC-v0 as a native batched ``gymnasium.vector.VectorEnv`` (``gym.make_vec(..., "vector_entry_point")``).

How it is kept fast, and equal to UECEnv. Resets still go through each sub-env's own UECEnv (its
generator, instance handling and ``_draw_arrivals``), so every sub-env draws exactly what the single env
draws; the per-episode table is gathered from a per-instance table of UECEnv's observation rows for
every (slot, device), computed once per instance by UECEnv's own ``_episode_observations``. What UECEnv
keeps current by rewriting the rows of later arrivals on every accept (busy flag, elapsed time, longest
feasible block, reserved backlog, masks) is instead computed for the whole batch at observation time
from the batch's state arrays (leading axis N, preallocated and reused; reallocated only when an
instance needs larger dimensions).

A step is three numba kernels (``envs.uec.kernels``, compiled once per machine with ``cache=True``), a
loop over the sub-envs each, instead of ~200 numpy calls whose per-call overhead dominated at N ≤ 256:
``step_batch`` (action check, accept: duration draw, pre-emption, pair slack, reserved backlog, counters),
``observe_batch`` (observation rows, masks, int8 info masks, block limits) and, per auto-reset,
``start_episode``. The kernels call the formulas of ``envs.uec.dynamics`` themselves (``pair_reach``,
``pair_reduction``, ``lindley_trajectory``, the very functions UECEnv uses) with the same float64
operations in the same order and no fastmath, so the numbers are bit-identical; the realised profit's
``log1p`` stays in numpy (``dynamics.resource_to_performance``), as in UECEnv. The kernels report
how many sub-envs were paid or ended, so the Python side skips the profit and episode-end work when
there is none, and the state arrays are passed as prebuilt tuples. The rest is O(1) numpy calls per
step plus one Python call per auto-reset.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from envs.common.vector import SubEnvBatch
from envs.uec import dynamics, kernels
from envs.uec.env import UECEnv
from envs.uec.generator import Scenario
from envs.uec.types import Instance

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
    free_backlog: np.ndarray  # (T + 1, K) reserved backlog with no retraining
    reserved_total: int  # number of reserved tasks
    uec_capacity: float  # UECEnv._uec_capacity


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
    return _InstanceTables(
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
        free_backlog=inst.free_backlog,
        reserved_total=len(inst.reserved),
        uec_capacity=env._uec_capacity,
    )


class UECVectorEnv(SubEnvBatch):
    """
    ## Description

    ``num_envs`` copies of :class:`envs.uec.env.UECEnv` (UEC-v0, RESCUE's problem: online assignment of
    retraining tasks to edge servers around reserved tasks) stepped together with numpy:
    ``gym.make_vec("UEC-v0", num_envs=N, vectorization_mode="vector_entry_point", **kwargs)``.
    Sub-env ``i`` is the single env: reset with the seed ``seed + i`` (``reset(seed=int)``, Gymnasium's
    convention) it gives exactly the observations, rewards, flags, masks and infos of
    ``gym.make("UEC-v0", **kwargs)`` reset with ``seed + i`` and stepped with the same actions, across
    auto-resets (tests/uec/test_vector_env.py). A step is a few compiled loops over the batch instead of
    one Python ``step`` per sub-env plus ``SyncVectorEnv``'s info merging, so it is faster than
    ``SyncVectorEnv`` from N = 1 on (``python -m benchmarks.env_throughput`` measures it).

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
        self._init_batch(num_envs, autoreset_mode, render_mode)
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
        self._dims = {"T": 0, "C": 0, "P": 0, "D": 0}
        self._tables: list[_InstanceTables | None] = [None] * self.num_envs
        self._cache: dict[int, _InstanceTables] = {}
        self._started = False
        self._allocate()
        self._mask = np.ones((self.num_envs, self._n_actions), bool)  # the current masks, updated in place
        self._safe = np.ones((self.num_envs, self._n_actions), bool)
        self._limits = np.zeros((self.num_envs, self._K), np.int64)  # the current longest feasible blocks
        self._work = np.zeros(self.num_envs)  # step_batch's scratch outputs
        self._factors = np.zeros((self.num_envs, 3))
        self._paid = np.zeros(self.num_envs, bool)
        self._mask_rule = self.reserved_priority == "mask"
        self._obs_size = self.layout.size
        self._bind_kernel_args()

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
            "reserved_total": ((), np.int64, 0),
            "uec_capacity": ((), np.float64, 0.0),
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
        if hasattr(self, "_paid"):  # (after __init__) the kernels' arguments name the new arrays
            self._bind_kernel_args()

    def _bind_kernel_args(self) -> None:
        """The batch's arrays in the order of the kernels' arguments (rebuilt when they are reallocated),
        so that a step passes them as one tuple."""
        self._step_args = (
            self._mask, self._limits, self._L, self._arrival, self._duration_cdf, self._cum,
            self._pair_start, self._pair_end, self._pair_slack, self._releases, self._unblocked_net, self._backlog,
            self._horizon, self._busy_until, self._task_start, self._retraining_work, self._block_server,
            self._block_start, self._block_duration, self._accepted, self._rejected, self._invalid_actions,
            self._preemptions, self._decision, self._n_arrivals, self._time, self._slots,
            self._work, self._factors, self._paid,
        )
        self._observe_args = (
            self._rows, self._decision, self._n_arrivals, self._time, self._devices, self._busy_until,
            self._task_start, self._backlog, self._future_releases, self._inv_duration, self._inv_reserved,
            self._cum, self._pair_start, self._pair_end, self._pair_slack, self._max_duration, self._servers.start,
            self._mask_start, self._mask_rule, self._mask, self._safe, self._limits,
        )

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
        self._reserved_total[i] = tables.reserved_total
        self._uec_capacity[i] = tables.uec_capacity
        self._tables[i] = tables
        live = {id(t.instance) for t in self._tables if t is not None}
        for key in [key for key in self._cache if key not in live]:
            del self._cache[key]

    def _start_episode(self, i: int, draws: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
        """Row ``i`` starts the episode of arrivals ``draws`` (slots, devices, duration uniforms)."""
        self._load_instance(i)
        tables = self._tables[i]
        slots, devices, u = draws
        kernels.start_episode(
            i, slots, devices, u, tables.arrival_rows, tables.static_rows, tables.pair_slack, tables.free_backlog,
            tables.instance.num_devices, self._n_arrivals, self._slots, self._devices, self._arrival, self._rows,
            self._decision, self._time, self._busy_until, self._task_start, self._pair_slack, self._backlog,
            self._profit, self._accepted, self._rejected, self._invalid_actions, self._preemptions,
            self._retraining_work,
        )

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
        self.check_open("reset")
        seeds = self.sub_env_seeds(seed)
        for i, env in enumerate(self.envs):
            env.reset(seed=seeds[i], options=options)
            self._start_episode(i, (env._arrival_slots, env._arrival_devices, env._duration_u))
        self._started = True
        self._pending_reset = np.zeros(self.num_envs, bool)
        self._n_pending = 0  # sub-envs in _pending_reset
        obs = self._observe()
        return obs, self._base_info()

    def step(self, actions: Any):
        """Step every sub-env with its action; raises after ``close()`` (VectorEnvClosedError) or before ``reset()``."""
        self.check_open("step")
        if not self._started:
            raise RuntimeError("call reset() before step()")
        raw = self._check_actions(actions)
        actions = np.array(raw, np.int64)  # a fresh writable C array: the one type the kernel is compiled for
        N = self.num_envs
        resetting = self._pending_reset
        expected, duration = np.empty(N), np.empty(N, np.int64)
        preempted, invalid, terminated = np.empty(N, bool), np.empty(N, bool), np.empty(N, bool)
        bad, n_paid, n_ended = kernels.step_batch(
            actions, resetting, *self._step_args, expected, duration, preempted, invalid, terminated
        )
        if bad >= 0:
            raise ValueError(
                f"actions[{bad}]={raw[bad]!r} is invalid: expected an integer in [0, {self._n_actions - 1}]"
            )
        if n_paid:  # realised profit (dynamics.realised_profit): w_j·a_j(t)·F_j[U], numpy's log1p as there
            factors = self._factors
            gain = dynamics.resource_to_performance(self._work, factors[:, 1], factors[:, 2])
            reward = np.where(self._paid, factors[:, 0] * gain, 0.0)
            self._profit += reward
        else:
            reward = np.zeros(N)
        stepped = ~resetting
        step_info = {}
        for key, value in zip(_STEP_KEYS, (invalid, expected, duration, preempted)):
            step_info[key], step_info["_" + key] = value, stepped
        if n_ended:
            step_info.update(self._summary_info(terminated))
        ended = np.flatnonzero(terminated) if n_ended else ()
        if self.autoreset_mode == AutoresetMode.NEXT_STEP:
            if self._n_pending:
                for i in np.flatnonzero(resetting):
                    self._autoreset(i)
            obs = self._observe()
            infos = {**self._base_info(), **step_info}
            self._pending_reset, self._n_pending = terminated, n_ended
        elif not n_ended:
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

    # --- internals -----------------------------------------------------------------------------
    def _check_actions(self, actions: Any) -> np.ndarray:
        """``actions`` as an integer array of shape (N,), else ValueError (``step_batch`` checks the range)."""
        return self.discrete_actions(actions, self._n_actions)

    def _observe(self) -> np.ndarray:
        """The batch's observations (a new array); sets ``_mask``, ``_safe``, ``_limits`` (what UECEnv's
        tables hold) and the int8 masks and devices :meth:`_base_info` reports."""
        N = self.num_envs
        obs = np.empty((N, self._obs_size), np.float32)
        self._mask8, self._safe8 = np.empty((N, self._n_actions), np.int8), np.empty((N, self._n_actions), np.int8)
        self._device = np.empty(N, np.int64)
        kernels.observe_batch(*self._observe_args, obs, self._mask8, self._safe8, self._device)
        return obs

    def _base_info(self) -> dict[str, Any]:
        """The info keys every reset and step has (batched; every sub-env has them), of the last
        :meth:`_observe`."""
        every = np.ones(self.num_envs, bool)
        return {
            "action_mask": self._mask8, "_action_mask": every,
            "safe_action_mask": self._safe8, "_safe_action_mask": every,
            "time": self._time.copy(), "_time": every,
            "device": self._device, "_device": every,
        }

    def _summary_info(self, done: np.ndarray) -> dict[str, Any]:
        """UECEnv's episode-end keys for the sub-envs where ``done`` (an (N,) bool array), batched.

        ``reserved_completed``: when every Hall slack is still ≥ -``_SLACK_TOL`` the reserved tasks are
        feasible up to a shortfall far below the audit's tolerance (1e-9), so EDF meets them all (see
        ``envs.uec.dynamics``) and it is ``reserved_total``; otherwise UECEnv's EDF audit
        (``dynamics.edf_service`` on the capacity the blocks left) counts them. Blocks that use a pair's
        whole slack leave rounding residues of about -1e-13, hence the tolerance. Tests check the
        count against UECEnv's audit."""
        totals = np.where(done, self._reserved_total, 0)
        completed = totals.copy()
        for i in np.flatnonzero(done & (self._pair_slack.min(axis=(1, 2)) < -_SLACK_TOL)):
            completed[i] = self._edf_audit(int(i))
        uec = self._uec_capacity
        values = {
            "episode_profit": np.where(done, self._profit, 0.0),
            "accepted": np.where(done, self._accepted, 0),
            "rejected": np.where(done, self._rejected, 0),
            "invalid_actions": np.where(done, self._invalid_actions, 0),
            "preemptions": np.where(done, self._preemptions, 0),
            "uec_utilisation": np.where(done & (uec > 0), self._retraining_work / np.where(uec > 0, uec, 1.0), 0.0),
            "reserved_completed": completed,
            "reserved_total": totals,
        }
        out: dict[str, Any] = {}
        has = done.copy()
        for key in _SUMMARY_KEYS:
            out[key], out["_" + key] = values[key], has
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
