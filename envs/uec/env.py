"""UEC-v0: online scheduling of model-retraining tasks onto capacity left over by reserved tasks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from envs.common import instance_io
from envs.common.render import RENDER_FPS, RENDER_MODES, check_render_mode, render_frame
from envs.common.validation import (
    check_bool,
    check_choice,
    check_discrete_action,
    check_reset_options,
    check_seed,
)
from envs.uec import dynamics
from envs.uec.generator import Scenario, generate_instance, resolve_scenario
from envs.uec.types import INSTANCE_SCHEMA as INSTANCE_SCHEMA  # the instance file schema (envs.common.instance_io)
from envs.uec.types import Instance, State

_MAX_REDRAWS = 1000
#: How reserved tasks keep priority over retraining (see the class docstring, "Action Space").
RESERVED_PRIORITIES = ("mask", "preempt")


@dataclass(frozen=True)
class ObservationLayout:
    """Named slices of UEC-v0's flat observation (K servers, J devices, L profiles).

    | slice             | size    | content (in [0, 1] except ``score``)                                  |
    |-------------------|---------|----------------------------------------------------------------------|
    | ``time``          | 2       | t / T; total arrival probability P(t)                                |
    | ``device``        | J       | one-hot of the arriving task's device j                              |
    | ``task``          | 2 + K   | w_j / max w; accuracy gap a_j(t); budget d̄_jk / max SLA per server   |
    | ``servers``       | 5·K     | per server: c_k(t)/max c; busy; elapsed slots of its task / D;        |
    |                   |         | reserved demand still to serve / (max c·T); longest feasible block / D |
    | ``ssp_profit``    | K·L     | R_jkl(t) / max R (index k·L + l)                                     |
    | ``ssp_duration``  | K·L     | E[d_l] / D                                                           |
    | ``lp``            | K·L + K | only under ``offline.uec.features.LPFeatures``: A_jkl(t), B_k(t+1) / max A |
    | ``score``         | K·L     | only under ``offline.uec.features.NetScoreFeatures``: a net-score greedy's |
    |                   |         | R_jkl(t) − price_kl(t) / max R in [−1, 1]; −1 where it may not choose     |
    | ``action_mask``   | 1 + K·L | the action mask (reject first), always LAST                          |

    D is the longest duration of any profile. Use :meth:`split` to get named views of an observation.
    """

    num_servers: int
    num_devices: int
    num_profiles: int
    lp_features: bool
    score_features: bool = False

    @property
    def sizes(self) -> dict[str, int]:
        k, j, kl = self.num_servers, self.num_devices, self.num_servers * self.num_profiles
        sizes = {"time": 2, "device": j, "task": 2 + k, "servers": 5 * k, "ssp_profit": kl, "ssp_duration": kl}
        if self.lp_features:
            sizes["lp"] = kl + k
        if self.score_features:
            sizes["score"] = kl
        sizes["action_mask"] = 1 + kl
        return sizes

    @property
    def slices(self) -> dict[str, slice]:
        out, start = {}, 0
        for name, size in self.sizes.items():
            out[name] = slice(start, start + size)
            start += size
        return out

    def offset(self, name: str) -> int:
        """Index of the first entry of part ``name``."""
        return self.slices[name].start

    @property
    def size(self) -> int:
        return sum(self.sizes.values())

    def split(self, obs: np.ndarray) -> dict[str, np.ndarray]:
        """Named views of ``obs`` (works on a batch: slices the last axis); ``servers`` is (..., K, 5)."""
        parts = {name: obs[..., s] for name, s in self.slices.items()}
        parts["servers"] = parts["servers"].reshape(*obs.shape[:-1], self.num_servers, 5)
        return parts


class UECEnv(gym.Env[np.ndarray, np.int64]):
    """
    ## Description

    RESCUE's problem (Huang, Liu, Shan: "RESCUE: Opportunistic Online Scheduling of Model Retraining on
    Underutilized Edges"). K edge servers host high-priority reserved tasks, each needing a demand of
    tera-MAC within a window; the capacity they leave is the under-utilised edge computing (UEC)
    resource. Model-retraining tasks of J device types arrive online, at most one per slot, device j at
    slot t with a known probability p_j(t). Each arrival must be rejected or irrevocably assigned to a
    server-service-profile pair (SSP) (k, l): the task then occupies the whole server k for a random
    duration d ~ D_l (longer profiles: more work, longer block) and earns w_j·a_j(t)·F_j[U_k(t, d)] if it
    finishes within its SLA budget d̄_jk. Reserved tasks are served by EDF in the slots left free and
    must always be met: an assignment is allowed only if they stay satisfiable with server k blocked
    for the longest duration of profile l.

    The episode jumps from one arrival to the next (slots without an arrival need no decision).

    ## Action Space

    ``Discrete(1 + K·L)``: 0 rejects the task; ``1 + k·L + l`` assigns it to server k with profile l.
    An action inside the space but infeasible now is carried out as a reject and flagged with
    ``info["invalid_action"] = True``. An action outside the space (or not an integer) raises
    ``ValueError``. What is feasible depends on ``reserved_priority``:

    * ``"preempt"`` (default): any idle server; reserved tasks keep priority by preemption: if the
      task would still hold the server when its reserved tasks need it, it is stopped at that moment,
      earns nothing, and ``info["preempted"]`` is True. Availability is then what RESCUE's LP and value
      functions assume (a server is available iff no retraining task holds it).
    * ``"mask"`` (the design document's reading of Alg. 1's "k is available"): server k runs no
      retraining task and its reserved tasks stay satisfiable with k blocked for the longest duration
      of profile l. A task then always runs to its end, but many SSPs are refused.

    Either way no reserved task can miss its demand, whatever the policy does.

    ## Observation Space

    ``Box(0, 1, (n,), float32)`` with the layout of :class:`ObservationLayout` (``env.layout``;
    ``env.layout.split(obs)`` names the parts). The last ``1 + K·L`` entries are the action mask, so a
    replayed observation carries its own mask.

    ## Starting State

    The instance (servers, devices, reserved tasks, arrival probabilities) is fixed across episodes
    unless ``resample_instance=True``, ``reset(options={"resample": True})`` or ``instance_seed=None``
    (then every reset draws it from ``np_random``); ``reset(options={"instance": inst})`` pins one. Each reset draws the episode's arrivals (device per slot) and the
    uniforms that set each accepted task's duration from ``np_random``, so two policies reset with the
    same seed see the same arrivals and durations. An episode with no arrival at all is redrawn.
    The first observation is the first arrival.

    ## Rewards

    The realised profit of the decided task, credited at the decision: w_j·a_j(t)·F_j[U_kl(t, d)] if
    the realised duration d ≤ d̄_jk, else 0; 0 for a reject. ``info["expected_profit"]`` holds R_jkl(t).

    ## Episode End

    Terminated after the decision on the last arrival before T. Never truncated.

    ## Information

    Every step: ``action_mask`` (int8, 1 + K·L), ``safe_action_mask`` (int8, 1 + K·L: the SSPs that keep
    every reserved task satisfiable however long the task runs — server idle and its longest feasible
    block covers the profile's longest duration; equal to ``action_mask`` under ``"mask"``, a subset
    under ``"preempt"``, where choosing outside it risks a pre-emption), ``time`` (slot t of the pending task), ``device``
    (its j, -1 after the end), ``invalid_action`` (bool, step only), ``expected_profit`` (R_jkl(t) of
    the chosen SSP, 0 for a reject; step only), ``duration`` (slots the server is held, 0 for a
    reject), ``preempted`` (bool, step only). At episode end also: ``episode_profit``, ``accepted``,
    ``rejected``, ``invalid_actions``, ``preemptions``,
    ``uec_utilisation`` (retraining work / capacity left by reserved tasks, within the horizon),
    ``reserved_completed`` and ``reserved_total`` (EDF audit: they must be equal).

    ## Arguments

    ```python
    gym.make("UEC-v0", scenario="paper", scenario_overrides=None, instance_seed=0,
             resample_instance=False, reserved_priority="preempt")
    ```
    * ``scenario``: preset name (``"paper"``, ``"tiny"``, ``"theorem2"``, ``"fig3"``) or a ``Scenario``.
    * ``scenario_overrides``: dict of ``Scenario`` fields to change, e.g. ``{"num_servers": 6}``.
    * ``instance_seed``: seed of the fixed instance (a non-negative int). ``None``: no fixed instance;
      every reset draws the instance from ``np_random`` before the episode, so ``reset(seed=s)`` always
      gives the same instance and episode (as in every env of the suite).
    * ``resample_instance``: draw a new instance (same scenario) at every reset, for training across instances.

    RESCUE's value functions A_jkl(t) and B_k(t+1) are appended to the observation (before the mask) by the
    wrapper ``offline.uec.features.LPFeatures`` (it solves RESCUE's LP once per instance; the env itself
    imports nothing from ``offline``); in a Hydra env config: ``wrappers: [offline.uec.features:LPFeatures]``.
    * ``reserved_priority``: ``"mask"`` or ``"preempt"`` (see Action Space).
    * ``instance_file``: path of an instance file (``env.unwrapped.export_instance(path)`` writes one; schema in
      docs/envs/uec.md): the env plays that instance, like a fixed preset (``scenario`` is then unused).

    ## Version History

    * v0: initial version. Later, without a new id (no default and no valid call changes): ``instance_seed=None``
      draws the instance from the reset seed (it used OS entropy once, at construction; the default
      ``instance_seed=0`` is unchanged); a negative or non-integer reset seed, a non-bool
      ``resample_instance`` or ``options["resample"]`` and a bool action raise ValueError;
      ``info["safe_action_mask"]`` added (information only: the dynamics are unchanged); ``present_state()`` added
      (the present and past as copies, for online policies; in ``POLICY_VISIBLE``).
    """

    #: what a policy's view shows besides the instance and spaces (offline.protocol.PolicyView): the present only
    POLICY_VISIBLE: tuple[str, ...] = ("layout", "reserved_priority", "present_state")

    metadata = {"render_modes": list(RENDER_MODES), "render_fps": RENDER_FPS}
    #: The last ``1 + K·L`` observation entries are the action mask (learners read replayed masks there).
    observation_ends_with_action_mask = True

    def __init__(
        self,
        scenario: str | Scenario = "paper",
        scenario_overrides: dict[str, Any] | None = None,
        instance_seed: int | None = 0,
        resample_instance: bool = False,
        reserved_priority: str = "preempt",
        render_mode: str | None = None,
        instance_file: str | None = None,
    ) -> None:
        self.render_mode = check_render_mode(render_mode, self.metadata["render_modes"])
        instance_seed = check_seed("instance_seed", instance_seed)
        self.reserved_priority = check_choice("reserved_priority", reserved_priority, RESERVED_PRIORITIES)
        self.resample_instance = check_bool("resample_instance", resample_instance)
        self.instance_seed = instance_seed
        self.instance_file = instance_file
        if instance_file is not None:  # the user's instance, played like a fixed preset (scenario is then unused)
            if scenario_overrides:
                raise ValueError("scenario_overrides is invalid with instance_file: edit the instance file instead")
            resolved: Scenario | Instance = instance_io.load_instance("UEC-v0", instance_file)
        else:
            resolved = resolve_scenario(scenario, scenario_overrides)
        if isinstance(resolved, Instance):
            if resample_instance:
                raise ValueError(f"resample_instance=True needs a random scenario, not the fixed instance {scenario!r}")
            self.scenario: Scenario | None = None
            instance = resolved
        else:
            self.scenario = resolved
            # instance_seed=None: every reset draws the instance from np_random; until the first reset the
            # env holds the instance of seed 0 (its spaces depend on the scenario's sizes only)
            instance = generate_instance(resolved, np.random.default_rng(0 if instance_seed is None else instance_seed))
        self.layout = ObservationLayout(
            instance.num_servers, instance.num_devices, instance.num_profiles, False
        )
        self.action_space = spaces.Discrete(1 + instance.num_servers * instance.num_profiles)
        self.observation_space = spaces.Box(0.0, 1.0, shape=(self.layout.size,), dtype=np.float32)
        self._num_actions = int(self.action_space.n)
        self._servers_start = self.layout.offset("servers")
        self._servers_stop = self._servers_start + 5 * instance.num_servers
        self._mask_start = self.layout.offset("action_mask")
        self._set_instance(instance)
        self._state: State | None = None
        self._decisions: list[tuple[int, int, int, int, bool]] | None = None

    def export_instance(self, path: str) -> str:
        """Write the current instance to ``path`` (``.yaml``/``.yml``/``.json``) for ``instance_file=`` or
        ``envs.uec.load_instance``; the schema is in docs/envs/uec.md ("Your own instance")."""
        return str(instance_io.export_instance(self.instance, instance_io.env_id_of(self, "UEC-v0"), path))

    # --- instance-level precomputation (never per step) --------------------------------------
    def _set_instance(self, instance: Instance) -> None:
        """Pin ``instance`` and precompute every table the steps read."""
        lay = self.layout
        if (instance.num_servers, instance.num_devices, instance.num_profiles) != (
            lay.num_servers,
            lay.num_devices,
            lay.num_profiles,
        ):
            raise ValueError(
                f"instance has (K, J, L) = {(instance.num_servers, instance.num_devices, instance.num_profiles)} "
                f"but this env's spaces were built for {(lay.num_servers, lay.num_devices, lay.num_profiles)}"
            )
        self.instance = instance
        K, L, T = instance.num_servers, instance.num_profiles, instance.horizon
        profit = instance.expected_profit
        self._profit_scale = max(float(profit.max()), 1e-12)
        self._profit_by_time = np.ascontiguousarray(profit.transpose(3, 0, 1, 2).reshape(T, instance.num_devices, K * L))
        self._cum = instance.cumulative_capacity
        self._pairs = instance.feasibility_pairs
        self._max_duration = instance.max_duration
        self._duration_scale = float(self._max_duration.max())
        self._inv_duration_scale = 1.0 / self._duration_scale
        self._duration_cdf = np.cumsum(instance.duration_pmf, axis=1)
        self._duration_cdf[:, -1] = 1.0
        self._arrival_total = instance.arrival_prob.sum(axis=1)
        self._arrival_cdf = np.cumsum(instance.arrival_prob, axis=1)
        res = instance.reserved
        releases = instance.reserved_releases
        self._future_releases = np.concatenate([np.cumsum(releases[:, ::-1], axis=1)[:, ::-1], np.zeros((K, 1))], axis=1).T
        cap_scale = float(instance.capacity.max())
        self._capacity_obs = (instance.capacity / cap_scale).T.copy()  # (T, K)
        self._reserved_scale = cap_scale * T
        self._inv_reserved_scale = 1.0 / self._reserved_scale
        self._weight_obs = instance.weight / max(float(instance.weight.max()), 1e-12)
        self._budget_obs = np.clip(instance.budget / float(instance.sla.max()), 0.0, 1.0)
        self._ssp_duration_obs = np.tile(instance.mean_duration / self._duration_scale, K)
        self._uec_capacity = float(instance.capacity.sum() - res.demand.sum())

    # --- gymnasium API -------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=check_seed("seed", seed))
        options = check_reset_options(options, ("instance", "resample"))
        resample = check_bool("options['resample']", options.get("resample", False))
        if options.get("instance") is not None:
            if not isinstance(options["instance"], Instance):
                raise ValueError(
                    f"options['instance']={options['instance']!r} is invalid: expected an envs.uec.types.Instance or None"
                )
            self._set_instance(options["instance"])
        elif resample or self.resample_instance or (self.instance_seed is None and self.scenario is not None):
            if self.scenario is None:
                raise ValueError("resampling needs a random scenario; this env was built on a fixed instance")
            self._set_instance(generate_instance(self.scenario, self.np_random))
        self._draw_episode()
        inst = self.instance
        K = inst.num_servers
        self._state = State(
            decision=0,
            time=int(self._arrival_slots[0]),
            busy_until=np.zeros(K, np.int64),
            task_start=np.zeros(K, np.int64),
            pair_slack=[pairs.slack.copy() for pairs in self._pairs],
            block_limits=inst.free_block_limits[self._arrival_slots],
            backlog=inst.free_backlog.copy(),
        )
        # slots whose reserved work (backlog or a release) a retraining block would displace, (T, K)
        self._reserved_work = inst.reserved_releases.T + self._state.backlog[:-1] > 0
        # per-decision record for render() (slot, device, server or -1, duration, preempted); only when rendering
        self._decisions: list[tuple[int, int, int, int, bool]] | None = [] if self.render_mode else None
        obs, info = self._observe()
        self._closed = False
        return obs, info

    def close(self) -> None:
        """Release the episode; ``step()`` then raises RuntimeError until the next ``reset()``."""
        self._closed = True
        super().close()

    def step(self, action: Any):
        if getattr(self, "_closed", False):
            raise RuntimeError("step() after close(): the env is closed; call reset() (or make a new env) first")
        if self._state is None:
            raise RuntimeError("call reset() before step()")
        st = self._state
        if st.decision >= self._arrival_slots.size:
            raise RuntimeError("the episode has terminated; call reset()")
        action = check_discrete_action(action, self._num_actions)
        t, device = st.time, int(self._arrival_devices[st.decision])
        reward, expected, duration, invalid, preempted = 0.0, 0.0, 0, False, False
        if action != 0:
            if self._obs_table[st.decision, self._mask_start + action]:
                server, profile = divmod(action - 1, self.instance.num_profiles)
                u = self._duration_u[st.decision]
                duration = int(self._duration_cdf[profile].searchsorted(u, side="right")) + 1
                limit = st.block_limits[st.decision, server]
                if duration > limit:  # only in "preempt" mode: reserved work reclaims the server first
                    duration, preempted = int(limit), True
                    st.preempted += 1
                else:
                    reward = dynamics.realised_profit(self.instance, device, server, t, duration)
                expected = float(self._profit_by_time[t, device, action - 1])
                self._accept(server, t, duration)
                st.profit += reward
            else:
                invalid = True
                st.invalid_actions += 1
        if action == 0 or invalid:
            st.rejected += 1
        if self._decisions is not None:
            server = -1 if action == 0 or invalid else (action - 1) // self.instance.num_profiles
            self._decisions.append((t, device, server, duration, preempted))
        st.decision += 1
        terminated = st.decision >= self._arrival_slots.size
        st.time = self.instance.horizon if terminated else int(self._arrival_slots[st.decision])
        obs, info = self._observe()
        info["invalid_action"] = invalid
        info["expected_profit"] = expected
        info["duration"] = duration
        info["preempted"] = preempted
        if terminated:
            info.update(self._episode_summary())
        return obs, float(reward), terminated, False, info

    def _episode_draws(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The current episode's realised randomness, read-only (for clairvoyant bounds and tests).

        Drawn entirely at reset and never changed by actions: (arrival slots (N,), their devices (N,),
        durations (N, L)), where ``durations[i, l]`` is what arrival i would run under profile l (the
        draw ``step`` makes from the arrival's uniform; pre-emption may still cut it short).
        """
        if self._state is None:
            raise RuntimeError("call reset() before episode_draws(env)")
        durations = np.stack(
            [cdf.searchsorted(self._duration_u, side="right") + 1 for cdf in self._duration_cdf], axis=1
        ).astype(np.int64)
        return self._arrival_slots.copy(), self._arrival_devices.copy(), durations

    def action_masks(self) -> np.ndarray:
        """Boolean mask of the currently feasible actions (what sb3-contrib's MaskablePPO calls)."""
        return self._obs_table[self._state.decision, self._mask_start :] > 0.5

    def present_state(self) -> dict[str, Any]:
        """The episode's present and past only, as copies (what online policies such as ``offline.uec.online``
        may read through a policy's view; the realised future stays hidden).

        ``time`` (slot of the pending arrival, T after the end), ``decision`` (its index), ``busy_until`` (K,)
        (first slot each server is free of retraining: the durations of accepted tasks are revealed in
        ``info["duration"]``), ``task_start`` (K,), ``pair_slack`` (per server, the slack left in each reserved-task
        interval constraint of ``instance.feasibility_pairs``, after the blocks so far), ``block_limits`` (K,) (longest
        feasible block from now on each server, valid where it is idle), ``backlog`` (K,) (reserved work released
        and unserved at the start of this slot) and ``blocks`` (every accepted task's (server, start, duration)).
        """
        st = self._state
        if st is None:
            raise RuntimeError("call reset() before present_state()")
        cum, t = self._cum, st.time
        limits = np.array([dynamics.max_feasible_block(pairs, st.pair_slack[k], cum[k], np.array([t]))[0]
                           for k, pairs in enumerate(self._pairs)], np.int64)
        return {"time": int(t), "decision": int(st.decision), "busy_until": st.busy_until.copy(),
                "task_start": st.task_start.copy(), "pair_slack": [s.copy() for s in st.pair_slack],
                "block_limits": limits, "backlog": st.backlog[min(t, self.instance.horizon)].copy(),
                "blocks": list(st.blocks)}

    def render(self) -> str | np.ndarray | None:
        """``"ansi"``: one status line; ``"rgb_array"``: a Gantt chart of the servers over the horizon
        (reserved work, retraining blocks by task type, pre-emptions, decisions so far), see
        ``envs.uec.render``. None (with a warning) without a render mode."""
        return render_frame(self, started=self._state is not None, module="envs.uec.render")

    # --- internals -----------------------------------------------------------------------------
    def _draw_episode(self) -> None:
        """Draw the arrivals of every slot and one uniform per arrival for its duration, then build the
        parts of each arrival's observation that do not depend on the servers' state."""
        slots, devices, self._duration_u = self._draw_arrivals()
        self._arrival_slots = slots
        self._arrival_devices = devices
        self._obs_table = self._episode_observations(slots, devices)
        # the "mask" rule at every arrival (info["safe_action_mask"]), kept current by _accept like the mask
        safe = np.zeros((slots.size + 1, self._num_actions), np.int8)
        safe[:, 0] = 1
        limits = self.instance.free_block_limits[slots]
        safe[:-1, 1:] = (limits[:, :, None] >= self._max_duration).reshape(slots.size, -1)
        self._safe_table = safe

    def _draw_arrivals(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The episode's randomness from ``np_random``: the arrival slots, their devices and one uniform
        per arrival for its duration (redrawn until some task arrives). Also used by
        ``envs.uec.vector.UECVectorEnv``, so that its sub-envs draw exactly what this env draws."""
        inst = self.instance
        if not self._arrival_total.any():
            raise ValueError(f"{inst.describe()} has no arrival probability in any slot")
        for _ in range(_MAX_REDRAWS):
            u = self.np_random.random(inst.horizon)
            device = (u[:, None] >= self._arrival_cdf).sum(axis=1)
            slots = np.flatnonzero(device < inst.num_devices)
            if slots.size:
                break
        else:
            raise ValueError(f"no arrival in {_MAX_REDRAWS} redraws of an episode of {inst.describe()}")
        return slots, device[slots], self.np_random.random(slots.size)

    def _episode_observations(self, slots: np.ndarray, devices: np.ndarray) -> np.ndarray:
        """(N + 1, n) the observation at each of the episode's N arrivals as if no retraining task were
        ever accepted, plus the terminal observation; ``_accept`` then rewrites the rows of later arrivals
        for the server it blocks. A step only copies one row."""
        inst, lay = self.instance, self.layout
        K, L, N = inst.num_servers, inst.num_profiles, slots.size
        rows = np.zeros((N + 1, lay.size), np.float32)
        sl = lay.slices
        rows[:N, 0] = slots / inst.horizon
        rows[N, 0] = 1.0
        rows[:N, 1] = self._arrival_total[slots]
        rows[np.arange(N), sl["device"].start + devices] = 1.0
        task = sl["task"].start
        rows[:N, task] = self._weight_obs[devices]
        rows[:N, task + 1] = inst.accuracy_gap[devices, slots]
        rows[:N, task + 2 : task + 2 + K] = self._budget_obs[devices]
        servers = rows[:N, sl["servers"]].reshape(N, K, 5)
        servers[:, :, 0] = self._capacity_obs[slots]
        servers[:, :, 3] = np.minimum(
            (inst.free_backlog[slots] + self._future_releases[slots]) * self._inv_reserved_scale, 1.0
        )
        limits = inst.free_block_limits[slots]
        servers[:, :, 4] = np.minimum(limits * self._inv_duration_scale, 1.0)
        rows[:N, sl["servers"]] = servers.reshape(N, 5 * K)
        rows[:N, sl["ssp_profit"]] = self._profit_by_time[slots, devices] / self._profit_scale
        rows[:N, sl["ssp_duration"]] = self._ssp_duration_obs
        rows[:, self._mask_start] = 1.0  # reject is always feasible
        if self.reserved_priority == "mask":
            rows[:N, self._mask_start + 1 :] = (limits[:, :, None] >= self._max_duration).reshape(N, K * L)
        else:  # "preempt": any idle server may be chosen
            rows[:N, self._mask_start + 1 :] = 1.0
        return rows

    def _accept(self, server: int, start: int, duration: int) -> None:
        """Block ``server`` for [start, start + duration) and update what depends on its blocks: the
        slack of its reserved-task constraints, its block limits and reserved backlog at later arrivals,
        and those arrivals' observation rows (each part skipped when the block cannot change it)."""
        st, inst = self._state, self.instance
        pairs, cum = self._pairs[server], self._cum[server]
        free_from = start + duration
        table, slots = self._obs_table, self._arrival_slots
        first_later = st.decision + 1
        first_free = int(slots.searchsorted(free_from))  # the first arrival at which the server is idle again
        busy_rows = slice(first_later, first_free)
        srv = self._servers_start + 5 * server
        mask_cols = slice(self._mask_start + 1 + server * inst.num_profiles, self._mask_start + 1 + (server + 1) * inst.num_profiles)
        table[busy_rows, srv + 1] = 1.0
        table[busy_rows, srv + 2] = np.minimum((slots[busy_rows] - start) * self._inv_duration_scale, 1.0)
        table[busy_rows, srv + 4] = 0.0
        table[busy_rows, mask_cols] = 0.0
        safe_cols = slice(1 + server * inst.num_profiles, 1 + (server + 1) * inst.num_profiles)
        self._safe_table[busy_rows, safe_cols] = 0
        reduction = dynamics.block_slack_reduction(pairs, cum, start, duration)
        if np.count_nonzero(reduction):
            st.pair_slack[server] -= reduction
            if first_free < slots.size:
                limits = dynamics.max_feasible_block(pairs, st.pair_slack[server], cum, slots[first_free:])
                st.block_limits[first_free:, server] = limits
                table[first_free:-1, srv + 4] = np.minimum(limits * self._inv_duration_scale, 1.0)
                self._safe_table[first_free:-1, safe_cols] = limits[:, None] >= self._max_duration
                if self.reserved_priority == "mask":
                    table[first_free:-1, mask_cols] = limits[:, None] >= self._max_duration
        if np.count_nonzero(self._reserved_work[start:free_from, server]):  # reserved work would run in the block
            available = inst.capacity[server, start:].copy()
            available[:duration] = 0.0
            backlog = dynamics.backlog_trajectory(st.backlog[start, server], inst.reserved_releases[server, start:], available)
            st.backlog[start:, server] = backlog
            self._reserved_work[start:, server] = backlog[:-1] + inst.reserved_releases[server, start:] > 0
            later = slots[first_later:]
            table[first_later:-1, srv + 3] = np.minimum(
                (st.backlog[later, server] + self._future_releases[later, server]) * self._inv_reserved_scale, 1.0
            )
        st.busy_until[server] = free_from
        st.task_start[server] = start
        st.accepted += 1
        st.retraining_work += float(cum[min(free_from, inst.horizon)] - cum[start])
        st.blocks.append((server, start, duration))

    def _observe(self) -> tuple[np.ndarray, dict[str, Any]]:
        st = self._state
        obs = self._obs_table[st.decision].copy()
        device = int(self._arrival_devices[st.decision]) if st.decision < self._arrival_slots.size else -1
        return obs, {"action_mask": obs[self._mask_start :].astype(np.int8),
                     "safe_action_mask": self._safe_table[st.decision].copy(), "time": st.time, "device": device}

    def _episode_summary(self) -> dict[str, Any]:
        """End-of-episode metrics, including an independent EDF audit of the reserved tasks."""
        st, inst = self._state, self.instance
        res = inst.reserved
        completed = 0
        if len(res):
            horizon = inst.horizon
            for k in np.unique(res.server):
                available = inst.capacity[k].copy()
                for server, start, duration in st.blocks:
                    if server == k:
                        available[start : min(start + duration, horizon)] = 0.0
                on_k = res.server == k
                served = dynamics.edf_service(available, res.start[on_k], res.end[on_k], res.demand[on_k])
                completed += int(np.sum(served >= res.demand[on_k] * (1 - 1e-9) - 1e-9))
        return {
            "episode_profit": st.profit,
            "accepted": st.accepted,
            "rejected": st.rejected,
            "invalid_actions": st.invalid_actions,
            "preemptions": st.preempted,
            "uec_utilisation": st.retraining_work / self._uec_capacity if self._uec_capacity > 0 else 0.0,
            "reserved_completed": completed,
            "reserved_total": len(res),
        }
