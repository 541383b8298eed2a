"""OINC-v0 as a native numpy-batched ``gymnasium.vector.VectorEnv`` (``gym.make_vec(..., "vector_entry_point")``).

How it stays equal to OINCEnv, bit for bit. Resets go through each sub-env's own OINCEnv (its generator,
instance handling, ``draw_episode`` and slot 0's ``_begin_slot`` with the env's own controller), and the
batch copies the resulting state (instance arrays, episode draws, job table, shares) into arrays with a
leading axis N. Every sub-env shares the slot t: episodes all last ``horizon`` slots and resets are
batch-wide, so every sub-env truncates, and auto-resets, at the same step.

For the default ``retraining="aret"`` controller (OINC's Alg. 2 + Alg. 5) a step is then a fixed set of
numpy operations over the batch, whatever N: the per-slot formulas are the ones of ``envs.oinc.dynamics``
(generalised there to a leading batch axis, the single env's results unchanged), applied to the same
numbers in the same order. Floating-point sums are kept identical, not just close:

* where the single env reduces a whole array (a mean over tasks or edges), the batch reduces the same
  numbers along a contiguous last axis (numpy's same pairwise sum per row);
* ``bincount`` sums become one ``bincount`` over the rows laid end to end (``dynamics.group_totals``:
  the same additions in the same order; padding adds 0.0, which changes nothing);
* sums over a variable subset (the waiting jobs, the chosen edges, the edges that retrained) go through
  :func:`_subset_sum`, which reproduces numpy's summation of the compacted subset (sequential below 8
  numbers, numpy's 8-way pairwise scheme from 8 on), checked against numpy in the tests;
* running totals over slots (``retraining_share``) are logged per slot and added at the episode's end
  with ``cumsum`` (sequential, as the single env's ``+=``).

What is exogenous is precomputed once per episode (normalised observation rows, Alg. 2's inference need,
its res_min quantile windows, the equal-split uploads) and the instance tables once per instance, never
per step. ARet's job table lives in (N, K) arrays (K grows with the busiest episode; only the columns
that can still hold unfinished jobs are touched, ``_window``) and its sequential dispatch loop runs over
the rank of the waiting job, batched over the sub-envs. The end-of-episode drain is batched too.

The other controllers (``kalmia``, ``ekya``, ``dedas``, ``zhang``) step each sub-env's OINCEnv (exact by
construction; SyncVectorEnv's speed less its wrapper and info-merging overhead).

Speed (uniformly random policy, paper scenario I = 40, J = 12, ``aret``; against ``SyncVectorEnv`` in
one run, alternating bursts over whole episodes with their drains and auto-resets; a shared 2-core
machine): about 0.6x at N = 1, break-even at N = 2, 4.5x at N = 16, 6.4x at N = 64, 9.8x at N = 256.
A step is ~150 numpy calls whatever N; from N = 16 on about a third of the time is the sub-envs' own
resets, most of it the per-slot Python loop of ``envs.oinc.workload.synthetic_unit_series`` (~5 ms per
episode and sub-env, paid by SyncVectorEnv too); compiling that loop (bit-identical) would take the
ratios to about 11x at N = 64 and 16x at N = 256.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from envs.common.vector import SubEnvBatch
from envs.oinc import dynamics as dyn
from envs.oinc.env import OINCEnv, episode_metrics
from envs.oinc.retraining import RATIO_SET, OINCRetraining

#: Info keys of every step (OINCEnv.step), with their dtypes (SyncVectorEnv's: int -> int64, float -> float64).
_STEP_KEYS = {"t": np.int64, "latency_mean_s": np.float64, "slo_met": np.int64, "slo_rate": np.float64,
              "jobs_completed": np.int64, "retraining_share_mean": np.float64, "paused_edges": np.int64,
              "jobs_arrived": np.int64, "jobs_active": np.int64}
#: Episode-end info keys (OINCEnv._final_metrics).
_FINAL_KEYS = {"inference_latency_s": np.float64, "retraining_completion_s": np.float64,
               "weighted_sum": np.float64, "success_rate": np.float64, "slo_hit_rate": np.float64,
               "deadline_hit_rate": np.float64, "jobs_total": np.int64, "jobs_finished_in_horizon": np.int64,
               "jobs_censored": np.int64, "drain_slots": np.int64, "paused_fraction": np.float64,
               "retraining_share": np.float64}
#: Job-table columns of the batch: name -> (dtype, fill of unused rows). A finish time of inf marks an
#: unused row as "not active", so masks need no row count.
_JOB_COLUMNS = {"device": (np.int64, 0), "arrival": (np.float64, 0.0), "deadline": (np.float64, 0.0),
                "remaining": (np.float64, 0.0), "edge": (np.int64, -1), "finish": (np.float64, np.inf)}


def _subset_sum(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Row-wise ``values[r][mask[r]].sum()`` of (M, L) arrays, bit for bit as numpy sums the compacted subset.

    numpy adds fewer than 8 numbers one after the other from 0.0 (what ``cumsum`` does; the entries
    outside the subset add 0.0, which changes nothing) and from 8 to 127 numbers pairwise: 8 running
    sums over blocks of 8, a fixed tree over those, then the remaining n % 8 one by one; that is done
    here for all such rows at once (zeros beyond a row's count again add nothing). Longer rows (rare)
    are summed by numpy itself."""
    total = np.cumsum(np.where(mask, values, 0.0), axis=1)[:, -1]
    counts = np.count_nonzero(mask, axis=1)
    big = np.flatnonzero(counts >= 8)
    if big.size:
        n, sub_mask = counts[big], mask[big]
        r, c = np.nonzero(sub_mask)
        compact = np.zeros((big.size, values.shape[1] + 8))  # the subset first, in order, then zeros
        compact[r, (np.cumsum(sub_mask, axis=1) - 1)[r, c]] = values[big[r], c]
        blocks = n - n % 8
        res = np.empty(big.size)
        for b in np.unique(blocks):  # rows with the same number of whole blocks of 8 add alike
            rows = np.flatnonzero(blocks == b)
            part = compact[rows]
            acc = part[:, :8].copy()
            for start in range(8, int(b), 8):
                acc += part[:, start : start + 8]
            out = ((acc[:, 0] + acc[:, 1]) + (acc[:, 2] + acc[:, 3])) + ((acc[:, 4] + acc[:, 5]) + (acc[:, 6] + acc[:, 7]))
            for j in range(7):
                out += part[:, b + j]
            res[rows] = out
        total[big] = res
        for i in big[n >= 128]:
            total[i] = np.sum(values[i][mask[i]])
    return total


def _gather(values: np.ndarray, index: np.ndarray) -> np.ndarray:
    """``np.take_along_axis(values, index, axis=1)`` for 2-D arrays, without its per-call overhead."""
    return values[np.arange(values.shape[0])[:, None], index]


class OINCVectorEnv(SubEnvBatch):
    """
    ## Description

    ``num_envs`` copies of :class:`envs.oinc.env.OINCEnv` (OINC-v0: joint online scheduling of DNN
    inference tasks and retraining jobs across edges) stepped together with numpy:
    ``gym.make_vec("OINC-v0", num_envs=N, vectorization_mode="vector_entry_point", **kwargs)``.
    Sub-env ``i`` is the single env: reset with the seed ``seed + i`` (``reset(seed=int)``, Gymnasium's
    convention) it gives exactly the observations, rewards, flags and infos of
    ``gym.make("OINC-v0", **kwargs)`` reset with ``seed + i`` and stepped with the same actions, across
    auto-resets (tests/oinc/test_oinc_vector.py). See the module docstring for how, and for its speed
    (about 6x SyncVectorEnv at N = 64, 10x at N = 256; slower below N = 2).

    ## Action Space

    ``MultiDiscrete`` of shape ``(N, 3·I)`` (``batch_space`` of the single ``MultiDiscrete([J, 4, 4] * I)``).
    Actions must be integer arrays of that shape inside the space, else ``ValueError`` naming ``actions``.

    ## Observation Space

    ``Box(0, 1, (N, n), float32)``: row ``i`` is OINCEnv's observation (``single_observation_space``).

    ## Starting State, Rewards, Episode End

    As OINCEnv's, per sub-env: ``rewards`` is float64 ``(N,)`` (eq. 4), ``truncated`` is True for every
    sub-env after ``horizon`` slots, ``terminated`` is always False.

    ## Autoreset

    ``metadata["autoreset_mode"]`` is ``AutoresetMode.NEXT_STEP`` by default (Gymnasium's default): the
    step that ends the episodes returns the last observations, and the next step resets the sub-envs
    (actions ignored; rewards 0, flags False, the reset infos). ``autoreset_mode=AutoresetMode.SAME_STEP``
    (or ``"SameStep"``) returns the first observations of the next episodes at once, with the last
    observations and infos in ``infos["final_obs"]`` / ``infos["final_info"]``, as ``SyncVectorEnv``.
    Auto-resets draw from each sub-env's own generator without a seed, like ``SyncVectorEnv``.

    ## Information

    OINCEnv's info keys batched the ``VectorEnv`` way (``infos[key]`` an array over sub-envs,
    ``infos["_" + key]`` which sub-envs have it; int64 and float64 as SyncVectorEnv gives them). The
    single env has no action masks, so neither has the batch. ``render`` is not offered.

    ## Arguments

    ```python
    gym.make_vec("OINC-v0", num_envs=8, vectorization_mode="vector_entry_point", scenario="paper",
                 scenario_overrides=None, retraining="aret", retraining_share=None, psi=3.0,
                 observation="paper", instance_seed=0, resample_instance=False, drain_max_slots=None,
                 autoreset_mode=AutoresetMode.NEXT_STEP)
    ```
    OINCEnv's arguments (validated by OINCEnv itself, with its errors) plus ``num_envs`` (≥ 1) and
    ``autoreset_mode`` (``NEXT_STEP`` / ``SAME_STEP`` or ``"NextStep"`` / ``"SameStep"``). ``reset(seed=...,
    options=...)`` takes an int (seeds ``seed + i``), a list of ``num_envs`` seeds or None; ``options``
    (``"instance"``, ``"resample"``) go to every sub-env, as in ``SyncVectorEnv``.

    ## Version History

    * v0: initial version.
    """

    metadata = {"render_modes": [], "autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(
        self,
        num_envs: int = 1,
        scenario: str = "paper",
        scenario_overrides: dict[str, Any] | None = None,
        retraining: str = "aret",
        retraining_share: float | None = None,
        psi: float = 3.0,
        observation: str = "paper",
        instance_seed: int | None = 0,
        resample_instance: bool = False,
        drain_max_slots: int | None = None,
        autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
        render_mode: str | None = None,
    ) -> None:
        self._init_batch(num_envs, autoreset_mode, render_mode)
        kwargs = dict(scenario=scenario, scenario_overrides=scenario_overrides, retraining=retraining,
                      retraining_share=retraining_share, psi=psi, observation=observation,
                      instance_seed=instance_seed, resample_instance=resample_instance,
                      drain_max_slots=drain_max_slots)
        self.envs: list[OINCEnv] = [OINCEnv(**kwargs) for _ in range(self.num_envs)]
        first = self.envs[0]
        self.single_observation_space = first.observation_space
        self.single_action_space = first.action_space
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._I, self._J = first.scenario.num_devices, first.scenario.num_edges
        self._T = first.scenario.horizon
        self._extended = first.observation_mode == "extended"
        self._native = isinstance(first.controller, OINCRetraining)
        self._psi = first.psi
        self._drain_max = first.drain_max_slots
        self._drift_prob = first.scenario.drift_prob
        self._started = False
        self._pending_reset = False
        self._arange = np.arange(self.num_envs)
        if self._native:
            self._allocate()

    # --- storage -------------------------------------------------------------------------------
    def _allocate(self) -> None:
        """The batch's arrays: per instance, per episode and the state (leading axis N)."""
        N, I, J, T = self.num_envs, self._I, self._J, self._T
        ctrl = self.envs[0].controller
        self._cap = float(ctrl.retraining_share)
        self._tau_norm, self._b_norm, self._history = ctrl.tau_norm_s, ctrl.b_norm_s, ctrl.history_len
        self._quantile = ctrl.quantile
        self._instances: list[Any] = [None] * N
        # per instance
        self._full_rate = np.zeros((N, I, J))
        self._cpu = np.ones((N, J))
        self._slo = np.zeros((N, I))
        self._device_index = np.arange(I)[None, :]
        self._cpu_order = np.zeros((N, J), np.int64)  # edges by decreasing CPU (stable): Alg. 2's pick order
        self._static_obs = np.zeros((N, I + I * J + J), np.float32) if self._extended else None
        # per episode
        self._dc_obs = np.zeros((N, T, 2 * I), np.float32)  # clipped normalised d and c of every slot
        self._drift = np.zeros((N, T, I), bool)  # drift events (drift_u < drift_prob)
        for name in ("data", "cycles", "job_cycles", "job_slack", "upload"):
            setattr(self, "_" + name, np.zeros((N, T, I)))
        self._need = np.zeros((N, T))  # Alg. 2's inference need of every slot
        # state
        self._share = np.zeros((N, J))  # p^r of the slot as the env holds it (begin_slot's copy)
        self._cshare = np.zeros((N, J))  # the controller's p^r (edges released as their queues empty)
        self._busy = np.zeros((N, I), bool)
        self._latency_sum = np.zeros(N)
        # every slot's p^r and which edges retrained: their sum (``retraining_share``) is taken at the end
        self._share_log = np.zeros((T, N, J))
        self._retrain_log = np.zeros((T, N, J), bool)
        for name in ("slo_met", "tasks", "paused_slots", "running_slots", "finished_in_horizon"):
            setattr(self, "_" + name, np.zeros(N, np.int64))
        self._K = 0
        self._grow_jobs(4 * I)
        self._held_now: np.ndarray | None = None

    def _grow_jobs(self, capacity: int) -> None:
        """Job table of at least ``capacity`` rows per sub-env, keeping its contents."""
        if capacity <= self._K:
            return
        capacity = max(capacity, 2 * self._K)
        for name, (dtype, fill) in _JOB_COLUMNS.items():
            array = np.full((self.num_envs, capacity), fill, dtype)
            if self._K:
                array[:, : self._K] = getattr(self, "_j_" + name)
            setattr(self, "_j_" + name, array)
        self._K = capacity
        self._j_count = getattr(self, "_j_count", np.zeros(self.num_envs, np.int64))

    def _load_instance(self, i: int) -> None:
        """Row ``i`` of the per-instance arrays from sub-env ``i``'s instance (when it changed)."""
        env = self.envs[i]
        inst = env.instance
        if self._instances[i] is inst:
            return
        self._instances[i] = inst
        self._full_rate[i] = inst.full_rate_bps
        self._cpu[i] = inst.cpu_hz
        self._slo[i] = inst.slo_s
        self._cpu_order[i] = np.argsort(-inst.cpu_hz, kind="stable")
        if self._extended:
            self._static_obs[i] = np.clip(env._static_obs, 0.0, 1.0).astype(np.float32)

    def _load_episode(self, i: int) -> None:
        """Row ``i`` of the batch from sub-env ``i`` just reset: its episode draws, the exogenous tables
        of the episode and the state after slot 0's ``_begin_slot``."""
        env = self.envs[i]
        self._load_instance(i)
        inst, draws = env.instance, env._draws
        d, c = env._task_features(draws.data_bits, draws.cycles)
        self._dc_obs[i] = np.clip(np.concatenate([d, c], axis=1), 0.0, 1.0).astype(np.float32)
        self._data[i], self._cycles[i] = draws.data_bits, draws.cycles
        self._drift[i] = draws.drift_u < self._drift_prob
        self._job_cycles[i], self._job_slack[i] = draws.job_cycles, draws.job_slack_s
        # Alg. 2's per-slot need and res_min (ARet's _record_need and res_min_hz, for the whole episode)
        upload = dyn.equal_share_upload_s(draws.data_bits, inst.full_rate_bps, inst.num_edges)
        self._upload[i] = upload
        self._need[i] = dyn.inference_need_hz(draws.cycles, inst.slo_s, upload)  # res_min: see _res_min_tables
        # state after slot 0
        jobs = env.jobs
        self._grow_jobs(jobs.count)
        for name, (_, fill) in _JOB_COLUMNS.items():
            getattr(self, "_j_" + name)[i] = fill
        n = jobs.count
        self._j_device[i, :n], self._j_arrival[i, :n] = jobs.device[:n], jobs.arrival_s[:n]
        self._j_deadline[i, :n], self._j_remaining[i, :n] = jobs.deadline_s[:n], jobs.remaining[:n]
        self._j_edge[i, :n], self._j_finish[i, :n] = jobs.edge[:n], jobs.finish_s[:n]
        self._j_count[i] = n
        self._share[i] = env._share
        self._cshare[i] = env.controller.share
        self._busy[i] = env._device_busy
        for name in ("latency_sum", "slo_met", "tasks", "paused_slots", "running_slots", "finished_in_horizon"):
            getattr(self, "_" + name)[i] = 0

    def _res_min_tables(self) -> None:
        """res_min of every slot of every sub-env's episode (ARet.res_min_hz after recording slot t's need:
        the need, at least the ``quantile`` of the previous min(t, history) needs) and of the drain (no new
        need: 0, at least the quantile of the window before the last need), batched over the sub-envs."""
        need, H, T, q = self._need, self._history, self._T, self._quantile
        out = need.copy()
        for t in range(1, min(H, T)):
            out[:, t] = np.maximum(need[:, t], np.quantile(need[:, :t], q, axis=1))
        if T > H > 0:
            windows = np.lib.stride_tricks.sliding_window_view(need[:, :-1], H, axis=1)  # [:, t - H] = need[:, t-H:t]
            out[:, H:] = np.maximum(need[:, H:], np.quantile(windows, q, axis=-1))
        self._res_min = out
        filled = min(T - 1, H)
        drain = np.quantile(need[:, T - 1 - filled : T - 1], q, axis=1) if filled > 0 else np.zeros(self.num_envs)
        self._res_min_drain = np.maximum(0.0, drain)

    # --- gymnasium API -------------------------------------------------------------------------
    def reset(self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None):
        """Reset every sub-env: ``seed`` an int (sub-env i gets ``seed + i``), a list or None."""
        self.check_open("reset")
        seeds = self.sub_env_seeds(seed)
        obs, infos = self._reset_all(seeds, options)
        self._started = True
        self._pending_reset = False
        return obs, infos

    def _reset_all(self, seeds: list[int | None], options: dict[str, Any] | None) -> tuple[np.ndarray, dict[str, Any]]:
        """Reset every sub-env's OINCEnv and load it into the batch; the batched reset observations and infos."""
        obs = np.empty((self.num_envs, *self.single_observation_space.shape), np.float32)
        infos: dict[str, Any] = {}
        single_infos = []
        for i, env in enumerate(self.envs):
            obs[i], info = env.reset(seed=seeds[i], options=options)
            single_infos.append(info)
            if self._native:
                self._load_episode(i)
        if self._native:
            self._res_min_tables()
            self._held_now = None
        for key in single_infos[0]:
            infos[key] = np.array([info[key] for info in single_infos], dtype=_STEP_KEYS[key])
            infos["_" + key] = np.ones(self.num_envs, bool)
        self._t = 0
        return obs, infos

    def step(self, actions: Any):
        """Step every sub-env with its row of ``actions`` ((N, 3·I) integers); auto-resets as in the class
        docstring (every sub-env's episode ends at the same step)."""
        self.check_open("step")
        if not self._started:
            raise RuntimeError("call reset() before step()")
        actions = self._check_actions(actions)
        N = self.num_envs
        if self._pending_reset:  # NEXT_STEP: the step after the episodes' end resets them
            self._pending_reset = False
            obs, infos = self._reset_all([None] * N, None)
            return obs, np.zeros(N), np.zeros(N, bool), np.zeros(N, bool), infos
        if self._native:
            obs, rewards, infos = self._step_native(actions)
        else:
            obs, rewards, infos = self._step_singles(actions)
        self._t += 1
        truncated = np.full(N, self._t >= self._T)
        terminated = np.zeros(N, bool)
        if truncated[0]:
            if self.autoreset_mode == AutoresetMode.NEXT_STEP:
                self._pending_reset = True
            else:  # SAME_STEP: the last observations and infos go to final_obs / final_info
                final_obs = np.empty(N, dtype=object)
                for i in range(N):
                    final_obs[i] = obs[i]
                final_info = infos
                obs, infos = self._reset_all([None] * N, None)
                every = np.ones(N, bool)
                infos["final_obs"], infos["_final_obs"] = final_obs, every
                infos["final_info"], infos["_final_info"] = final_info, every.copy()
        return obs, rewards, terminated, truncated, infos

    def close_extras(self, **kwargs: Any) -> None:
        """Close the sub-envs; ``step()`` and ``reset()`` then raise VectorEnvClosedError."""
        for env in self.envs:
            env.close()
        self._started = False

    # --- internals -----------------------------------------------------------------------------
    def _check_actions(self, actions: Any) -> np.ndarray:
        """``actions`` as an int64 array of shape (N, 3·I); ValueError naming ``actions`` otherwise."""
        array = np.asarray(actions)
        shape = (self.num_envs, 3 * self._I)
        if array.shape != shape or array.dtype.kind not in "iu":
            raise ValueError(
                f"actions={actions!r} is invalid: expected an integer array of shape {shape} "
                f"with entries below {self.single_action_space.nvec.tolist()[:3]} per device"
            )
        nvec = self.single_action_space.nvec
        bad = (array < 0) | (array >= nvec)
        if bad.any():
            i, j = (int(x[0]) for x in np.nonzero(bad))
            raise ValueError(f"actions[{i}, {j}]={array[i, j]!r} is invalid: expected an integer in [0, {nvec[j] - 1}]")
        return array.astype(np.int64, copy=False)

    def _step_singles(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
        """Step every sub-env's OINCEnv (controllers without a batched implementation)."""
        N = self.num_envs
        obs = np.empty((N, *self.single_observation_space.shape), np.float32)
        rewards = np.zeros(N)
        infos: dict[str, Any] = {}
        for i, env in enumerate(self.envs):
            obs[i], rewards[i], _, _, info = env.step(actions[i])
            for key, value in info.items():
                if key not in infos:
                    infos[key] = np.zeros(N, {**_STEP_KEYS, **_FINAL_KEYS}[key])
                    infos["_" + key] = np.zeros(N, bool)
                infos[key][i], infos["_" + key][i] = value, True
        return obs, rewards, infos

    # --- the batched ARet step -----------------------------------------------------------------
    def _step_native(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
        """OINCEnv.step for the whole batch (ARet controller): slot_latency, process, the bookkeeping, the
        next slot's _begin_slot (or, at the horizon, the drain and the episode metrics)."""
        N, I, J, t = self.num_envs, self._I, self._J, self._t
        rows = self._arange
        plan = actions.reshape(N, I, 3)
        edge = plan[:, :, 0]
        z_frac, v = dyn.shares_from_levels(edge, plan[:, :, 1], plan[:, :, 2], J)
        inference_share = 1.0 - self._share
        rate = self._full_rate[self._arange[:, None], self._device_index, edge]
        cpu = _gather(self._cpu, edge)
        d, c = self._data[:, t], self._cycles[:, t]
        upload = dyn.transmission_time(d, rate, v)
        latency = upload + dyn.computation_time(c, cpu, z_frac * _gather(inference_share, edge))
        self._window()
        self._dispatch(rows, t)
        queue = self._queue(rows)
        running = queue[3] & (self._cshare > 0)
        paused = np.zeros((N, J), bool)
        if running.any():
            latency_full = upload + dyn.computation_time(c, cpu, z_frac)
            paused = dyn.pause_edges(edge, latency, latency_full, upload, c, self._slo, self._cpu, inference_share,
                                     running)
            if paused.any():
                latency = np.where(_gather(paused, edge), latency_full, latency)
        done_rows, done_jobs = self._process(rows, t, paused, queue)
        self._busy[done_rows, self._j_device[done_rows, done_jobs]] = False
        completed = np.bincount(done_rows, minlength=N)
        reward = dyn.slot_reward(latency, self._slo, self._psi)

        met = np.count_nonzero(latency <= self._slo, axis=1)
        self._latency_sum += latency.sum(axis=1)
        self._slo_met += met
        self._tasks += I
        n_paused = np.count_nonzero(paused, axis=1)
        self._paused_slots += n_paused
        self._running_slots += np.count_nonzero(running, axis=1)
        self._finished_in_horizon += completed
        self._share_log[t] = self._share
        np.logical_and(self._share > 0, ~paused, out=self._retrain_log[t])  # edges retraining in slot t
        values: dict[str, Any] = {
            "t": np.full(N, t, np.int64),
            "latency_mean_s": latency.mean(axis=1),
            "slo_met": met,
            "slo_rate": met / I,
            "jobs_completed": completed,
            "retraining_share_mean": self._share.mean(axis=1),
            "paused_edges": n_paused,
        }
        if t + 1 >= self._T:
            values["jobs_arrived"] = np.zeros(N, np.int64)
            values.update(self._final_metrics())
        else:
            values["jobs_arrived"] = self._begin_slot(t + 1)
        values["jobs_active"] = np.count_nonzero(np.isnan(self._j_finish), axis=1)
        every = np.ones(N, bool)
        infos: dict[str, Any] = {}
        for key, value in values.items():
            infos[key], infos["_" + key] = value, every
        return self._observe(t + 1), reward, infos

    def _observe(self, t: int) -> np.ndarray:
        """OINCEnv._observation of every sub-env at slot ``t`` (the last slot's rows after the horizon)."""
        I, J = self._I, self._J
        obs = np.empty((self.num_envs, *self.single_observation_space.shape), np.float32)
        obs[:, : 2 * I] = self._dc_obs[:, min(t, self._T - 1)]
        obs[:, 2 * I : 2 * I + J] = np.clip(1.0 - self._share, 0.0, 1.0)
        if self._extended:
            obs[:, 2 * I + J : -J] = self._static_obs
            queued = np.isnan(self._j_finish) & (self._j_edge >= 0)
            count = dyn.group_totals(np.where(queued, self._j_edge, 0), queued, J) / I
            obs[:, -J:] = np.clip(count, 0.0, 1.0)
        return obs

    def _window(self) -> None:
        """The job-table columns that can hold unfinished jobs, ``self._w`` (the older ones are all finished:
        only the episode metrics read them)."""
        hi = int(self._j_count.max())
        unfinished = np.isnan(self._j_finish[:, :hi]).any(axis=0)
        self._w = slice(int(np.argmax(unfinished)) if unfinished.any() else hi, hi)

    def _ix(self, rows: np.ndarray) -> np.ndarray | slice:
        """Index of sub-envs ``rows`` into the batch's arrays: a slice (views, no copies) for all of them."""
        return slice(None) if rows.size == self.num_envs else rows

    def _queue(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The dispatched unfinished jobs of sub-envs ``rows`` as (position in ``rows``, job column within
        the window, edge), row by row in job order, and the (n, J) bool of edges holding one."""
        edge = self._j_edge[self._ix(rows), self._w]
        r, k = np.nonzero(np.isnan(self._j_finish[self._ix(rows), self._w]) & (edge >= 0))
        e = edge[r, k]
        held = np.zeros((rows.size, self._J), bool)
        held[r, e] = True
        return r, k, e, held

    def _held(self, rows: np.ndarray) -> np.ndarray:
        """(n, J) bool: edges of sub-envs ``rows`` holding an unfinished dispatched job (edges_with_jobs)."""
        edge = self._j_edge[self._ix(rows), self._w]
        queued = np.isnan(self._j_finish[self._ix(rows), self._w]) & (edge >= 0)
        held = np.zeros((rows.size, self._J), bool)
        r, k = np.nonzero(queued)
        held[r, edge[r, k]] = True
        return held

    def _begin_slot(self, t: int) -> np.ndarray:
        """OINCEnv._begin_slot for every sub-env: slot t's jobs, then ARet's reservation; returns the arrivals."""
        new = self._drift[:, t] & ~self._busy
        arrived = np.count_nonzero(new, axis=1)
        self._grow_jobs(int((self._j_count + arrived).max()))
        r, dev = np.nonzero(new)  # row by row, devices in increasing order (jobs.add's order)
        if r.size:
            pos = self._j_count[r] + (np.cumsum(new, axis=1) - 1)[r, dev]
            self._j_device[r, pos] = dev
            self._j_arrival[r, pos] = float(t)
            self._j_deadline[r, pos] = t + self._job_slack[r, t, dev]
            self._j_remaining[r, pos] = self._job_cycles[r, t, dev]
            self._j_edge[r, pos] = -1
            self._j_finish[r, pos] = np.nan
            self._j_count += arrived
            self._busy[r, dev] = True
        self._window()
        self._reserve(self._arange, t, drain=False)
        self._share = self._cshare.copy()
        return arrived

    def _reserve(self, rows: np.ndarray, t: int, drain: bool) -> None:
        """OINCRetraining.begin_slot (Alg. 2) for sub-envs ``rows``: reserve shares on the strongest free
        edges for the waiting jobs, with the ratio of least estimated cost."""
        J = self._J
        w = self._w
        waiting = np.isnan(self._j_finish[self._ix(rows), w]) & (self._j_edge[self._ix(rows), w] < 0)
        n_wait = np.count_nonzero(waiting, axis=1)
        share = self._cshare[rows]
        held = self._held_now if rows.size == self.num_envs and self._held_now is not None else self._held(rows)
        free = ~held & (share == 0)
        n_free = np.count_nonzero(free, axis=1)
        go = np.flatnonzero((n_wait > 0) & (n_free > 0))
        if not go.size:
            return
        rows, waiting, share, n_wait = rows[go], waiting[go], share[go], n_wait[go]
        m, R = go.size, len(RATIO_SET)
        num = np.minimum(n_wait, n_free[go])
        order = self._cpu_order[rows]
        chosen_o = _gather(free[go], order)
        chosen_o &= np.cumsum(chosen_o, axis=1) <= num[:, None]  # the num strongest free edges
        chosen = np.zeros((m, J), bool)
        chosen[np.arange(m)[:, None], order] = chosen_o
        res_min = self._res_min_drain[rows] if drain else self._res_min[rows, t]
        cpu = self._cpu[rows]
        free_hz = np.sum(cpu * (1.0 - share), axis=1)
        ratios = np.asarray(RATIO_SET)[None, :, None]
        cand = np.clip(
            dyn.reservation_share(free_hz[:, None, None], res_min[:, None, None], ratios, 1.0, num[:, None, None],
                                  cpu[:, None, :]),
            0.0, self._cap,
        )
        cand = np.where(chosen[:, None, :], cand, 0.0)  # (m, R, J), the chosen edges' candidates
        usable = cand.max(axis=2) > 0
        if drain:
            tau = np.zeros((m, R))
        else:
            shares = np.where(chosen[:, None, :], cand, share[:, None, :])
            tau = dyn.equal_split_latency_s(self._upload[rows, t], self._cycles[rows, t], cpu[:, None, :] * (1.0 - shares))
        mean_work = _subset_sum(self._j_remaining[self._ix(rows), w], waiting) / n_wait
        with np.errstate(divide="ignore"):
            h_all = dyn.remaining_time_s(mean_work[:, None, None], cand, cpu[:, None, :])
        # mean over the chosen edges in Alg. 2's order (decreasing CPU), as the single env adds them
        h_o = h_all[np.arange(m)[:, None, None], np.arange(R)[None, :, None], order[:, None, :]].reshape(m * R, J)
        h = (_subset_sum(h_o, np.repeat(chosen_o, R, axis=0)) / np.repeat(num, R)).reshape(m, R)
        cost = np.where(usable, tau / self._tau_norm + h / self._b_norm, np.inf)
        best = cand[np.arange(m), np.argmin(cost, axis=1)]
        best[~usable.any(axis=1)] = 0.0
        self._cshare[rows] = np.where(chosen, best, share)

    def _dispatch(self, rows: np.ndarray, t: int) -> None:
        """OINCRetraining.dispatch for sub-envs ``rows``: the waiting jobs in index order, each to the edge of
        least eq. (9) cost; the loop runs over the waiting jobs' rank, batched over the sub-envs."""
        w = self._w
        edge = self._j_edge[self._ix(rows), w]
        unfinished = np.isnan(self._j_finish[self._ix(rows), w])
        waiting = unfinished & (edge < 0)
        n_wait = np.count_nonzero(waiting, axis=1)
        act = np.flatnonzero(n_wait)
        if not act.size:
            return
        self._held_now = None  # dispatching changes which edges hold jobs
        rows, edge, unfinished, waiting, n_wait = rows[act], edge[act], unfinished[act], waiting[act], n_wait[act]
        rank = np.cumsum(waiting, axis=1) - 1
        now = t * dyn.SLOT_S
        share, cpu = self._cshare[rows], self._cpu[rows]
        deadline, remaining = self._j_deadline[self._ix(rows), w], self._j_remaining[self._ix(rows), w]
        l_all = dyn.job_weight(deadline, now)
        for r in range(int(n_wait.max())):
            sel = np.flatnonzero(n_wait > r)
            k = np.argmax(waiting[sel] & (rank[sel] == r), axis=1)
            l_new = l_all[sel, k]
            h_new = dyn.remaining_time_s(remaining[sel, k][:, None], share[sel], cpu[sel])
            case, k_q = np.nonzero(unfinished[sel] & (edge[sel] >= 0))  # the queues, case by case, in job order
            row_q = sel[case]
            e = edge[row_q, k_q]
            h_q = dyn.remaining_time_s(remaining[row_q, k_q], share[row_q, e], cpu[row_q, e])
            costs = dyn.dispatch_costs(l_new, h_new, e, l_all[row_q, k_q], h_q, case)
            ok = np.isfinite(costs).any(axis=1)
            edge[sel[ok], k[ok]] = np.argmin(costs[ok], axis=1)
        self._j_edge[self._ix(rows), w] = edge

    def _process(
        self, rows: np.ndarray, t: int, paused: np.ndarray,
        queue: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """RetrainingController.process for sub-envs ``rows`` (``queue``: their ``_queue``, if at hand): each
        edge runs its densest job (ARet's priority; ties: the first job) for one slot; then edges without
        jobs release their share. Returns the finished jobs as (sub-env, job) index arrays."""
        r, k, e, held = self._queue(rows) if queue is None else queue
        J = self._J
        share = self._cshare[rows]
        done_rows = done_jobs = np.zeros(0, np.int64)
        if r.size:
            now = t * dyn.SLOT_S
            kw = k + self._w.start
            job_rows = rows[r]
            l_k = dyn.job_weight(self._j_deadline[job_rows, kw], now)
            h = dyn.remaining_time_s(self._j_remaining[job_rows, kw], np.maximum(share[r, e], 1e-12), self._cpu[job_rows, e])
            key = dyn.job_density(l_k, np.maximum(h, 1e-12))
            # per (sub-env, edge) the densest job, the first one among equals (the single env's lexsort)
            group = r * J + e
            order = np.argsort(group, kind="stable")  # jobs stay in index order within a group
            sorted_group, key = group[order], key[order]
            new_group = np.ones(group.size, bool)
            new_group[1:] = sorted_group[1:] != sorted_group[:-1]
            densest = np.maximum.reduceat(key, np.flatnonzero(new_group))
            best = np.flatnonzero(key == densest[np.cumsum(new_group) - 1])
            first = np.ones(best.size, bool)
            first[1:] = sorted_group[best[1:]] != sorted_group[best[:-1]]
            best = order[best[first]]
            rr, jj, kk = r[best], e[best], kw[best]
            rate = (share * self._cpu[rows] * ~paused)[rr, jj]
            after, done, finish = dyn.run_slot(self._j_remaining[rows[rr], kk], rate, now)
            self._j_remaining[rows[rr], kk] = after
            done_rows, done_jobs = rows[rr[done]], kk[done]
            self._j_finish[done_rows, done_jobs] = finish[done]
            if done.any():  # an edge whose finished job was its only one no longer holds jobs
                left = np.bincount(group, minlength=rows.size * J)
                left[group[best[done]]] -= 1
                held = left.reshape(rows.size, J) > 0
        self._held_now = held if rows.size == self.num_envs else None  # for the next _reserve, if no dispatch between
        self._cshare[rows] = np.where(held, share, 0.0)
        return done_rows, done_jobs

    def _final_metrics(self) -> dict[str, np.ndarray]:
        """OINCEnv._final_metrics of every sub-env: the batched drain, then the episode metrics."""
        N, J = self.num_envs, self._J
        t = np.full(N, self._T)
        slots = np.zeros(N, np.int64)
        rows = np.flatnonzero(np.isnan(self._j_finish).any(axis=1) & (slots < self._drain_max))
        while rows.size:
            self._window()
            self._reserve(rows, int(t[rows[0]]), drain=True)
            self._dispatch(rows, int(t[rows[0]]))
            self._process(rows, int(t[rows[0]]), np.zeros((rows.size, J), bool))
            t[rows] += 1
            slots[rows] += 1
            rows = np.flatnonzero(np.isnan(self._j_finish).any(axis=1) & (slots < self._drain_max))
        active = np.isnan(self._j_finish)
        censored = np.count_nonzero(active, axis=1)
        self._j_finish[:] = np.where(active, (t * dyn.SLOT_S)[:, None], self._j_finish)
        out = {key: np.zeros(N, dtype) for key, dtype in _FINAL_KEYS.items()}
        # OINCEnv adds each slot's sum of the retraining shares to a running float: the same sums, added
        # slot after slot (cumsum is sequential)
        T = self._T
        slot_sums = _subset_sum(self._share_log.reshape(T * N, J), self._retrain_log.reshape(T * N, J)).reshape(T, N)
        share_sum = np.cumsum(slot_sums, axis=0)[-1]
        share_count = np.count_nonzero(self._retrain_log, axis=(0, 2))
        for i in range(N):
            n = int(self._j_count[i])
            metrics = episode_metrics(
                self._j_arrival[i, :n], self._j_deadline[i, :n], self._j_finish[i, :n],
                latency_sum=float(self._latency_sum[i]), tasks=int(self._tasks[i]), slo_met=int(self._slo_met[i]),
                finished_in_horizon=int(self._finished_in_horizon[i]), censored=int(censored[i]),
                drain_slots=int(slots[i]), paused_slots=int(self._paused_slots[i]),
                running_slots=int(self._running_slots[i]), share_sum=float(share_sum[i]), share_count=int(share_count[i]),
            )
            for key, value in metrics.items():
                out[key][i] = value
        return out
