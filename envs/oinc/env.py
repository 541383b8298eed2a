"""OINC-v0: joint online scheduling of DNN inference tasks and retraining jobs across edges (OINC).

Zeng et al., "Efficient Online DNN Inference with Continuous Learning in Edge Computing", IWQoS 2024.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from envs.common import instance_io
from envs.common.fork import present_copy
from envs.common.render import RENDER_FPS, RENDER_MODES, check_render_mode, render_frame
from envs.common.validation import check_bool, check_choice, check_in_range, check_reset_options, check_seed
from envs.oinc import dynamics as dyn
from envs.oinc import workload
from envs.oinc.generator import REFERENCE_SET_SIZE, Scenario, make_scenario
from envs.oinc.retraining import RetrainingController, make_controller
from envs.oinc.types import INSTANCE_SCHEMA as INSTANCE_SCHEMA  # the instance file schema (envs.common.instance_io)
from envs.oinc.types import EpisodeDraws, Instance, Jobs

OBSERVATIONS = ("paper", "extended")


def episode_metrics(
    arrival_s: np.ndarray,
    deadline_s: np.ndarray,
    finish_s: np.ndarray,
    *,
    latency_sum: float,
    tasks: int,
    slo_met: int,
    finished_in_horizon: int,
    censored: int,
    drain_slots: int,
    paused_slots: int,
    running_slots: int,
    share_sum: float,
    share_count: int,
) -> dict[str, Any]:
    """The episode-end info (Table II's metrics and the counters, see OINCEnv's Information) from the
    episode's jobs (after the drain) and running totals; shared by OINCEnv and the vector env."""
    n = int(arrival_s.size)
    completion = finish_s - arrival_s
    on_time = int(np.count_nonzero(finish_s <= deadline_s))
    inference = latency_sum / max(tasks, 1)
    retraining = float(completion.mean()) if n else float("nan")
    return {
        "inference_latency_s": inference,
        "retraining_completion_s": retraining,
        "weighted_sum": inference + (retraining if n else 0.0),
        "success_rate": (slo_met + on_time) / max(tasks + n, 1),
        "slo_hit_rate": slo_met / max(tasks, 1),
        "deadline_hit_rate": on_time / n if n else float("nan"),
        "jobs_total": n,
        "jobs_finished_in_horizon": finished_in_horizon,
        "jobs_censored": censored,
        "drain_slots": drain_slots,
        "paused_fraction": paused_slots / max(running_slots, 1),
        "retraining_share": share_sum / share_count if share_count else float("nan"),
    }


class OINCEnv(gym.Env):
    """
    ## Description

    I devices each generate one DNN inference task per 1-s slot, Task_i^t = {d_i^t, c_i^t, SLO_i}, and
    offload it to one of J edges (CPU f_j, band B_j). Data drift on a device occasionally creates a
    retraining job Job_k = {i_k, a_k, w_k, D_k} that also runs on the edges. Each slot a **retraining
    controller** (an env component chosen by ``retraining=``, OINC's Alg. 2 + Alg. 5 by default) reserves
    a share p_j^r of every edge for retraining; the **agent** then schedules the inference tasks within
    f_j^t = 1 - p_j^r: the edge y_ij, the compute share z_ij and the bandwidth share v_ij of every task
    (the MDP of the paper's Section IV-C). Latency tau_ij = d_i / r_ij + c_i / (z_ij f_j) with the
    Shannon rate r_ij = v_ij B_j log2(1 + rho_i g_ij / sigma^2) (``envs.common.radio``; "paper" channel
    preset by default). Retraining jobs run one per edge and slot at share p_j^r; with the ``aret`` and
    ``kalmia`` controllers an edge pauses retraining for the slot (inference gets the whole edge) when
    the agent's allocation misses an SLO there that the whole edge would meet.

    ## Action Space

    ``MultiDiscrete([J, 4, 4] * I)``, flat: entries ``3i, 3i+1, 3i+2`` are device i's edge, compute
    level and bandwidth level. Level l has weight 2**l (1, 2, 4, 8); device i's compute share is its
    weight over the compute weights of all devices on the same edge, times f_j^t, and likewise its
    bandwidth share (times 1): the discretised form of the paper's three softmax heads, feasible by
    construction (sum_i z_ij <= f_j^t, sum_i v_ij <= 1, one edge per task).

    ## Observation Space

    ``Box(0, 1, (n,), float32)``; ``observation="paper"`` is the paper's state S_t = {d^t, c^t, f^t}:

    | slice                  | meaning                                                            |
    |------------------------|--------------------------------------------------------------------|
    | [0, I)                 | d_i^t, min-max normalised over the scenario's data-size range       |
    | [I, 2I)                | c_i^t, min-max normalised over the scenario's workload range        |
    | [2I, 2I+J)             | f_j^t = 1 - p_j^r, the share of edge j available to inference      |

    ``observation="extended"`` appends SLO_i / max SLO (I), the full-band rate r_ij / max rate (I·J,
    row-major), edge j's CPU frequency / the scenario's highest (J) and the number of retraining jobs
    queued on each edge / I (J, clipped to 1): every instance feature the heuristics read, so one agent
    can be trained across instances.

    ## Starting State

    An instance (edges, devices, distances, SLOs, the rate table) is drawn once from
    ``np.random.default_rng(instance_seed)``; ``reset(options={"instance": inst})`` pins another one and
    ``options={"resample": True}`` (or ``resample_instance=True``) draws a fresh one from the same
    instance stream. With ``instance_seed=None`` every reset draws the instance from ``self.np_random``. Every reset draws
    the episode's workload series, drift events, job sizes and deadlines from ``self.np_random``; slot 0's
    tasks, jobs and reservation are in the first observation.

    ## Rewards

    Eq. (4): R_t = (1/I) sum_i R_i,t with R_i,t = -tau_i^t if tau_i^t <= SLO_i else -(tau_i^t + psi),
    psi = 3 by default.

    ## Episode End

    Truncated after ``horizon`` slots (T = 200 by default; the state carries no clock, so learners
    bootstrap through it). Never terminated. At the end, jobs still unfinished keep running under their
    controller with no new work (the drain phase, at most ``drain_max_slots``) so that every job has a
    completion time b_k; a job still unfinished after that is censored at the drain's end.

    ## Information

    Every step: ``t`` (the slot just played), ``latency_mean_s`` (mean tau over the slot's tasks),
    ``slo_met`` (tasks meeting their SLO), ``slo_rate``, ``jobs_arrived`` (jobs created at the start
    of the slot), ``jobs_completed`` (jobs finished during it), ``jobs_active`` (unfinished jobs),
    ``retraining_share_mean`` (mean p^r over edges), ``paused_edges`` (edges that paused retraining).
    The reset info has ``t``, ``jobs_arrived`` and ``retraining_share_mean``. The last step adds the
    episode metrics of Table II and Figs. 4-10: ``inference_latency_s`` (mean tau over all tasks),
    ``retraining_completion_s`` (mean b_k - a_k over all jobs, NaN without jobs), ``weighted_sum``
    (inference_latency_s + retraining_completion_s, alpha = beta = 1, the "Sum" column of Table II),
    ``retraining_share`` (mean p^r over the edge-slots of the horizon that retrained: share > 0, not paused;
    NaN if none),
    ``success_rate`` ((tasks meeting the SLO + jobs meeting the deadline) / (tasks + jobs)),
    ``slo_hit_rate``, ``deadline_hit_rate``, ``jobs_total``, ``jobs_finished_in_horizon``,
    ``jobs_censored``, ``drain_slots``, ``paused_fraction`` (paused edge-slots over edge-slots that ran
    retraining). The attribute ``last_allocation`` holds the last slot's ``edge``, ``compute_share``
    (z_ij, the whole edge on a paused edge), ``bandwidth_share`` and ``paused`` arrays.

    ## Arguments

    ``gym.make("OINC-v0", scenario="paper", scenario_overrides=None, retraining="aret", retraining_share=None,
    psi=3.0, observation="paper", instance_seed=0, resample_instance=False, drain_max_slots=None)``

    * ``scenario``: named preset of :mod:`envs.oinc.generator` (``"paper"``, ``"tiny"``).
    * ``scenario_overrides``: Scenario fields, e.g. ``{"num_devices": 20, "channel": "physical"}``.
    * ``retraining``: ``"aret"`` (OINC), ``"kalmia"``, ``"ekya"``, ``"dedas"``, ``"zhang"``.
    * ``retraining_share``: the controller's retraining share, a number in (0, 1): the cap of an edge's share
      for aret and kalmia, the fixed share for dedas, zhang and ekya; ``None`` keeps each controller's
      default (0.9 cap; 0.5; 1/(1 + I/J)), which is the env's behaviour without the argument.
    * ``psi``: SLO-miss penalty of eq. (4).
    * ``observation``: ``"paper"`` or ``"extended"``.
    * ``drain_max_slots``: cap of the drain phase (default 100 · horizon).
    * ``instance_seed``: seed of the instance (a non-negative int). ``None``: no fixed instance; every
      reset draws the instance from ``np_random`` before the episode, so ``reset(seed=s)`` always gives
      the same instance and episode (as in every env of the suite).
    * ``resample_instance``: True draws a new instance at every reset (from the ``instance_seed`` stream).
    * ``instance_file``: path of an instance file (``env.unwrapped.export_instance(path)`` writes one; schema in
      docs/envs/oinc.md): the env plays that instance at every reset; the scenario takes its I, J (and a trace's T).

    The action must have an integer dtype (floats, even integral ones, raise ValueError, as in every env).

    ## Version History

    * v0: initial version. Later, without a new id (no default and no valid call changes): ``instance_seed=None``
      is accepted (instance from the reset seed); unknown reset options, a wrongly typed
      ``options["instance"]``, negative reset seeds, non-bool ``resample_instance`` and float actions
      raise ValueError; ``retraining_share`` (default None: each controller's own share, as before);
      ``observation="extended"`` gains the edges' CPU frequencies (J more entries; the default ``paper``
      observation is unchanged).
    """

    #: what a policy's view shows besides the instance and spaces (offline.protocol.PolicyView): the present only
    POLICY_VISIBLE: tuple[str, ...] = ("current_tasks", "inference_share", "action_from_shares", "observation_as",
                                       "observation_space_as", "num_devices", "num_edges", "psi", "fork")

    metadata: dict[str, Any] = {"render_modes": list(RENDER_MODES), "render_fps": RENDER_FPS}

    def __init__(
        self,
        scenario: str = "paper",
        scenario_overrides: dict[str, Any] | None = None,
        retraining: str = "aret",
        retraining_share: float | None = None,
        psi: float = 3.0,
        observation: str = "paper",
        instance_seed: int = 0,
        resample_instance: bool = False,
        drain_max_slots: int | None = None,
        render_mode: str | None = None,
        instance_file: str | None = None,
    ) -> None:
        overrides = dict(scenario_overrides or {})
        self.instance_file = instance_file
        loaded: Instance | None = None
        if instance_file is not None:  # the user's instance; the scenario takes its sizes (I, J, and T of a trace)
            loaded = instance_io.load_instance("OINC-v0", instance_file)
            sizes = {"num_devices": loaded.num_devices, "num_edges": loaded.num_edges}
            if loaded.trace_data_bits is not None:
                sizes["horizon"] = int(loaded.trace_data_bits.shape[0])
            for name, value in sizes.items():
                if name in overrides and overrides[name] != value:
                    raise ValueError(f"scenario_overrides.{name}={overrides[name]!r} is invalid with instance_file: "
                                     f"the instance file has {name}={value}")
            overrides.update(sizes)
            if check_bool("resample_instance", resample_instance):
                raise ValueError("resample_instance=True is invalid with instance_file: the env plays the file's "
                                 "instance")
        self.scenario: Scenario = make_scenario(scenario, **overrides)
        self.retraining_name = retraining
        share = {} if retraining_share is None else {"retraining_share": retraining_share}
        self.controller: RetrainingController = make_controller(retraining, **share)
        check_in_range("psi", psi, 0.0, 1e6)
        self.psi = float(psi)
        self.observation_mode = check_choice("observation", observation, OBSERVATIONS)
        self.instance_seed = check_seed("instance_seed", instance_seed)
        self.resample_instance = check_bool("resample_instance", resample_instance)
        if drain_max_slots is None:
            drain_max_slots = 100 * self.scenario.horizon
        check_in_range("drain_max_slots", drain_max_slots, 0, 10**8, integer=True)
        self.drain_max_slots = int(drain_max_slots)
        self.render_mode = check_render_mode(render_mode, self.metadata["render_modes"])
        self._history: list[dict[str, Any]] | None = None

        # instance_seed=None: every reset draws the instance from np_random; until the first reset the env
        # holds the instance of seed 0 (the spaces depend on the scenario's sizes only)
        self._instance_rng = np.random.default_rng(0 if self.instance_seed is None else self.instance_seed)
        self.instance: Instance = self.scenario.draw_instance(self._instance_rng) if loaded is None else loaded
        n_i, n_j = self.scenario.num_devices, self.scenario.num_edges
        self.action_space = spaces.MultiDiscrete(np.tile([n_j, dyn.NUM_LEVELS, dyn.NUM_LEVELS], n_i))
        n_obs = 2 * n_i + n_j
        if self.observation_mode == "extended":
            n_obs += n_i + n_i * n_j + n_j + n_j
        self.observation_space = spaces.Box(0.0, 1.0, shape=(n_obs,), dtype=np.float32)
        self._set_instance(self.instance)
        self._draws: EpisodeDraws | None = None

    # ------------------------------------------------------------------ instance
    def export_instance(self, path: str) -> str:
        """Write the current instance to ``path`` (``.yaml``/``.yml``/``.json``) for ``instance_file=`` or
        ``envs.oinc.load_instance``; the schema is in docs/envs/oinc.md ("Your own instance")."""
        return str(instance_io.export_instance(self.instance, instance_io.env_id_of(self, "OINC-v0"), path))

    def _set_instance(self, instance: Instance) -> None:
        if instance.num_devices != self.scenario.num_devices or instance.num_edges != self.scenario.num_edges:
            raise ValueError(
                f"instance has I={instance.num_devices}, J={instance.num_edges}: expected "
                f"I={self.scenario.num_devices}, J={self.scenario.num_edges} (the env's spaces)"
            )
        self.instance = instance
        sc = self.scenario
        bits = sc.bits_per_data_unit
        self._d_lo, self._d_span = sc.data_mb[0] * bits, max((sc.data_mb[1] - sc.data_mb[0]) * bits, 1e-12)
        self._c_lo, self._c_span = sc.megacycles[0] * 1e6, max((sc.megacycles[1] - sc.megacycles[0]) * 1e6, 1e-12)
        self._device_index = np.arange(instance.num_devices)
        if self.observation_mode == "extended":
            self._static_obs = np.concatenate(
                [instance.slo_s / instance.slo_s.max(), (instance.full_rate_bps / instance.full_rate_bps.max()).ravel(),
                 instance.cpu_hz / (sc.cpu_ghz[1] * 1e9)]
            )

    # ------------------------------------------------------------------ gymnasium API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=check_seed("seed", seed))
        options = check_reset_options(options, ("instance", "resample"))
        resample = check_bool("options['resample']", options.get("resample", self.resample_instance))
        if options.get("instance") is not None:
            if not isinstance(options["instance"], Instance):
                raise ValueError(
                    f"options['instance']={options['instance']!r} is invalid: expected an envs.oinc.types.Instance or None"
                )
            self._set_instance(options["instance"])
        elif self.instance_seed is None and self.instance_file is None:
            self._set_instance(self.scenario.draw_instance(self.np_random))
        elif resample:
            self._set_instance(self.scenario.draw_instance(self._instance_rng))
        inst = self.instance
        self._draws = self.scenario.draw_episode(inst, self.np_random)
        self.jobs = Jobs.empty(4 * inst.num_devices)
        self.controller.reset(inst, self.jobs)
        self._device_busy = np.zeros(inst.num_devices, dtype=bool)
        self.t = 0
        self._latency_sum = 0.0
        self._slo_met = 0
        self._tasks = 0
        self._paused_slots = 0
        self._running_slots = 0
        self._finished_in_horizon = 0
        self._share_sum = 0.0
        self._share_count = 0
        self.last_allocation: dict[str, np.ndarray] = {}
        # per-slot record for render() (shares, pauses, SLO rate); only when rendering
        self._history = [] if self.render_mode else None
        arrived = self._begin_slot()
        info = {"t": 0, "jobs_arrived": arrived, "retraining_share_mean": float(self._share.mean())}
        self._closed = False
        return self._observation(), info

    def close(self) -> None:
        """Release the episode; ``step()`` then raises RuntimeError until the next ``reset()``."""
        self._closed = True
        super().close()

    def render(self) -> str | np.ndarray | None:
        """``"ansi"``: one status line; ``"rgb_array"``: every edge over the slots played so far, with its
        inference and retraining shares and pauses (see ``envs.oinc.render``). None (with a warning)
        without a render mode."""
        return render_frame(self, started=self._draws is not None, module="envs.oinc.render")

    def step(self, action):
        if getattr(self, "_closed", False):
            raise RuntimeError("step() after close(): the env is closed; call reset() (or make a new env) first")
        if self._draws is None:
            raise RuntimeError("call reset() before step()")
        if self.t >= self.scenario.horizon:
            raise RuntimeError("episode is over (truncated); call reset()")
        action = np.asarray(action)
        if (
            not np.issubdtype(action.dtype, np.integer)
            or action.shape != self.action_space.shape
            or not self.action_space.contains(action.astype(self.action_space.dtype))
        ):
            raise ValueError(
                f"action={action!r} is invalid: expected an integer array of shape {self.action_space.shape} "
                f"with entries below {self.action_space.nvec.tolist()[:3]} per device"
            )
        latency, paused, running = self.slot_latency(action)
        finished = self.controller.process(self.t, paused)
        self._device_busy[self.jobs.device[finished]] = False
        reward = dyn.slot_reward(latency, self.instance.slo_s, self.psi)

        met = int(np.count_nonzero(latency <= self.instance.slo_s))
        self._latency_sum += float(latency.sum())
        self._slo_met += met
        self._tasks += latency.size
        self._paused_slots += int(np.count_nonzero(paused))
        self._running_slots += int(np.count_nonzero(running))
        self._finished_in_horizon += int(finished.size)
        retraining_now = (self._share > 0) & ~paused
        if self._history is not None:
            alloc = self.last_allocation
            self._history.append({
                "retraining": np.where(running & ~paused, self._share, 0.0),
                "reserved": self._share.copy(),
                "inference": np.bincount(alloc["edge"], weights=alloc["compute_share"], minlength=self._share.size),
                "paused": paused.copy(),
                "slo_rate": met / latency.size,
                "latency_mean_s": float(latency.mean()),
                "jobs_active": int(self.jobs.active().size),
            })
        self._share_sum += float(self._share[retraining_now].sum())
        self._share_count += int(np.count_nonzero(retraining_now))
        info: dict[str, Any] = {
            "t": self.t,
            "latency_mean_s": float(latency.mean()),
            "slo_met": met,
            "slo_rate": met / latency.size,
            "jobs_completed": int(finished.size),
            "retraining_share_mean": float(self._share.mean()),
            "paused_edges": int(np.count_nonzero(paused)),
        }
        self.t += 1
        truncated = self.t >= self.scenario.horizon
        if truncated:
            info["jobs_arrived"] = 0
            info.update(self._final_metrics())
        else:
            info["jobs_arrived"] = self._begin_slot()
        info["jobs_active"] = int(self.jobs.active().size)
        return self._observation(), reward, False, truncated, info

    # ------------------------------------------------------------------ model
    def slot_latency(self, action: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Latency of the current slot's tasks under ``action`` (dispatching waiting jobs and applying the
        pause rule); returns (latency (I,), paused (J,) bool, running (J,) bool)."""
        inst = self.instance
        plan = np.asarray(action, dtype=np.int64).reshape(inst.num_devices, 3)
        edge, z_level, v_level = plan[:, 0], plan[:, 1], plan[:, 2]
        z_frac, v = dyn.shares_from_levels(edge, z_level, v_level, inst.num_edges)
        inference_share = 1.0 - self._share
        rate = inst.full_rate_bps[self._device_index, edge]
        cpu = inst.cpu_hz[edge]
        d, c = self._draws.data_bits[self.t], self._draws.cycles[self.t]
        upload = dyn.transmission_time(d, rate, v)
        latency = upload + dyn.computation_time(c, cpu, z_frac * inference_share[edge])
        self.controller.dispatch(self.t)
        running = self.controller.running_edges()
        paused = np.zeros(inst.num_edges, dtype=bool)
        if self.controller.pauses_for_inference and running.any():
            latency_full = upload + dyn.computation_time(c, cpu, z_frac)
            paused = dyn.pause_edges(
                edge, latency, latency_full, upload, c, inst.slo_s, inst.cpu_hz, inference_share, running
            )
            if paused.any():
                latency = np.where(paused[edge], latency_full, latency)
        compute_share = z_frac * np.where(paused, 1.0, inference_share)[edge]
        self.last_allocation = {"edge": edge, "compute_share": compute_share, "bandwidth_share": v, "paused": paused}
        return latency, paused, running

    def _begin_slot(self) -> int:
        """New jobs of slot t (drift events on devices without a job), then the controller's reservation."""
        t, draws, sc = self.t, self._draws, self.scenario
        arrivals = np.flatnonzero((draws.drift_u[t] < sc.drift_prob) & ~self._device_busy)
        new = self.jobs.add(
            arrivals, float(t), t + draws.job_slack_s[t, arrivals], draws.job_cycles[t, arrivals]
        )
        self._device_busy[arrivals] = True
        self._share = self.controller.begin_slot(t, new, draws.data_bits[t], draws.cycles[t]).copy()
        return int(arrivals.size)

    def _drain(self) -> tuple[int, int]:
        """Run retraining with no new work until every job finishes (or the cap); (slots, censored)."""
        no_pause = np.zeros(self.instance.num_edges, dtype=bool)
        t = self.scenario.horizon
        slots = 0
        while self.jobs.active().size and slots < self.drain_max_slots:
            self.controller.begin_slot(t, np.zeros(0, dtype=np.int64), None, None)
            self.controller.dispatch(t)
            self.controller.process(t, no_pause)
            t += 1
            slots += 1
        active = self.jobs.active()
        self.jobs.finish_s[active] = t * dyn.SLOT_S
        return slots, int(active.size)

    def _final_metrics(self) -> dict[str, Any]:
        drain_slots, censored = self._drain()
        n = self.jobs.count
        return episode_metrics(
            self.jobs.arrival_s[:n], self.jobs.deadline_s[:n], self.jobs.finish_s[:n], latency_sum=self._latency_sum,
            tasks=self._tasks, slo_met=self._slo_met, finished_in_horizon=self._finished_in_horizon,
            censored=censored, drain_slots=drain_slots, paused_slots=self._paused_slots,
            running_slots=self._running_slots, share_sum=self._share_sum, share_count=self._share_count,
        )

    def _task_features(self, data_bits: np.ndarray, cycles: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """d and c min-max normalised over the scenario's ranges (the observation's first 2I entries,
        before clipping); any leading axes (the vector env normalises a whole episode at once)."""
        return (data_bits - self._d_lo) / self._d_span, (cycles - self._c_lo) / self._c_span

    def _observation(self, mode: str | None = None) -> np.ndarray:
        t = min(self.t, self.scenario.horizon - 1)
        d, c = self._task_features(self._draws.data_bits[t], self._draws.cycles[t])
        parts = [d, c, 1.0 - self._share]
        if (mode or self.observation_mode) == "extended":
            inst, sc = self.instance, self.scenario
            static = self._static_obs if self.observation_mode == "extended" else np.concatenate(
                [inst.slo_s / inst.slo_s.max(), (inst.full_rate_bps / inst.full_rate_bps.max()).ravel(),
                 inst.cpu_hz / (sc.cpu_ghz[1] * 1e9)])
            queued = self.jobs.edge[self.jobs.active()]
            count = np.bincount(queued[queued >= 0], minlength=self.instance.num_edges) / self.instance.num_devices
            parts += [static, count]
        return np.clip(np.concatenate(parts), 0.0, 1.0).astype(np.float32)

    def observation_as(self, observation: str) -> np.ndarray:
        """The current observation as an env with ``observation=<observation>`` shows it (the observation only
        encodes the state): lets a learner trained on one mode act on an env built with the other."""
        return self._observation(check_choice("observation", observation, OBSERVATIONS))

    def observation_space_as(self, observation: str) -> spaces.Box:
        """The observation space of ``observation=<observation>`` at this env's sizes."""
        n_i, n_j = self.scenario.num_devices, self.scenario.num_edges
        extended = check_choice("observation", observation, OBSERVATIONS) == "extended"
        n_obs = 2 * n_i + n_j + ((n_i + n_i * n_j + 2 * n_j) if extended else 0)
        return spaces.Box(0.0, 1.0, shape=(n_obs,), dtype=np.float32)

    def action_from_shares(
        self,
        edge: np.ndarray,
        compute_share: np.ndarray,
        bandwidth_share: np.ndarray,
        compute_cost: np.ndarray | None = None,
        bandwidth_cost: np.ndarray | None = None,
    ) -> np.ndarray:
        """Flat action from per-device edges and continuous within-edge shares, mapped to the levels by
        ``dynamics.levels_for_shares`` (optionally minimising sum cost / share per edge)."""
        n_j = self.instance.num_edges
        plan = np.stack(
            [
                edge,
                dyn.levels_for_shares(compute_share, edge, n_j, compute_cost),
                dyn.levels_for_shares(bandwidth_share, edge, n_j, bandwidth_cost),
            ],
            axis=1,
        )
        return plan.ravel().astype(np.int64)

    def fork(self, rng: np.random.Generator) -> OINCEnv:
        """An independent copy of the env in its present state whose unrevealed randomness is redrawn from ``rng``.

        The copy shares the (immutable) instance and holds the same slot, jobs, controller state, reservation and
        running totals; the present slot's tasks and jobs (already in the observation) are kept. Everything after
        it is drawn afresh from the instance's distributions: the workload series continues the synthetic AR(1)
        burst model from the present levels (the burst state guessed from them: on when their mean is above the
        middle of the range), and the drift uniforms, job sizes and deadline slacks of later slots are new. A
        trace instance's series is part of the instance (known), so it is kept. So the fork holds no information
        about the realised future: the online references (``offline.oinc.online``) simulate candidates on forks;
        two forks made from generators in the same state are identical (common random numbers).
        """
        twin, _ = present_copy(self, rng, started=self._draws is not None)
        sc, inst, draws = self.scenario, self.instance, twin._draws
        t, horizon, n_i = self.t, sc.horizon, inst.num_devices
        later = max(horizon - t - 1, 0)
        if later and (inst.trace_data_bits is None or inst.trace_cycles is None):
            x = (draws.data_bits[t] / sc.bits_per_data_unit - sc.data_mb[0]) / (sc.data_mb[1] - sc.data_mb[0])
            y = (draws.cycles[t] / 1e6 - sc.megacycles[0]) / (sc.megacycles[1] - sc.megacycles[0])
            x, y = workload.continued_unit_series(rng, later, x, y, burst_prob=sc.burst_prob,
                                                  burst_persistence=sc.burst_persistence, ar_coef=sc.ar_coef,
                                                  noise_std=sc.noise_std)
            draws.data_bits[t + 1:] = sc._map(x, sc.data_mb) * sc.bits_per_data_unit
            draws.cycles[t + 1:] = sc._map(y, sc.megacycles) * 1e6
        if later:
            scale = sc.retrain_set_size / REFERENCE_SET_SIZE
            draws.drift_u[t + 1:] = rng.random((later, n_i))
            draws.job_cycles[t + 1:] = rng.uniform(*sc.retrain_gcycles, size=(later, n_i)) * 1e9 * scale
            draws.job_slack_s[t + 1:] = rng.uniform(*sc.deadline_slack_s, size=(later, n_i))
        return twin

    def _episode_draws(self) -> EpisodeDraws:
        """The current episode's exogenous randomness (copies; for clairvoyant bounds and tests).

        Drawn entirely at reset and never changed by actions (tasks, drift uniforms, the jobs drift events would
        create); which drift events become jobs still depends on the policy.
        """
        if self._draws is None:
            raise RuntimeError("call reset() before episode_draws(env)")
        return dataclasses.replace(self._draws, **{f.name: np.array(getattr(self._draws, f.name), copy=True)
                                                   for f in dataclasses.fields(self._draws)})

    @property
    def current_tasks(self) -> tuple[np.ndarray, np.ndarray]:
        """(data_bits, cycles) of the current slot's tasks (for non-learning policies)."""
        return self._draws.data_bits[self.t], self._draws.cycles[self.t]

    @property
    def inference_share(self) -> np.ndarray:
        """f_j^t = 1 - p_j^r of the current slot."""
        return 1.0 - self._share
