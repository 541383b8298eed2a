"""ASET-v0 and ASET-v1: choose, every 10-s window, which static policy binds the streams arriving next."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from envs.aset.dynamics import (
    NUM_CLASS_BINS,
    OBS_HIGH,
    WORKER_FEATURES,
    WindowResult,
    observation_features,
    simulate_window,
)
from envs.aset.generator import TOPOLOGIES, V1_DEFAULTS, Scenario, build_instance
from envs.aset.types import CLUSTER_TIERS, POLICY_NAMES, Instance, State
from envs.common import instance_io
from envs.common.fork import present_copy
from envs.common.instance_io import InstanceSchema, check_array
from envs.common.render import RENDER_FPS, RENDER_MODES, check_render_mode, render_frame
from envs.common.validation import (
    check_bool,
    check_choice,
    check_discrete_action,
    check_in_range,
    check_reset_options,
    check_seed,
)

#: Observation layouts: the flattened state tensor (default) or the 2-D (features, sub-windows) Box.
OBS_LAYOUTS: tuple[str, ...] = ("flat", "2d")


class ASETEnv(gym.Env):
    """Adaptive scheduling of edge inference streams (Castellano et al., ASET).

    ## Description
    Clients arrive at 16 antennas as Poisson processes (``lam`` clients per minute per antenna) and
    each opens a stream of object-detection queries with an application latency bound D^i (pool 95 ms,
    ping-pong 150, work-out 300, face 370, lego 600 ms), a frame rate, a frame size, a minimum accuracy
    and an exponential lifetime (mean 60 s). Its antenna's scheduler binds it, at arrival and for its
    whole life, to a feasible (model variant, cluster) worker using the static policy in force (paper
    constraints (1)-(4)); a stream with no feasible worker has all its queries rejected. Workers are
    deployed on a cloud / data-centre / central-office / antenna hierarchy read from a topology YAML.
    Served queries fail when the realised latency 2(delta + d + eps) + b zeta + D_v (+ queueing wait)
    exceeds D^i, with eps ~ N(0, sigma^2); the failure fraction is computed analytically (normal CDF)
    at the fluid level, per 0.5-s sub-window, vectorised over streams.

    ## Action Space
    ``Discrete(7)``: the static policy binding every stream that arrives in the next window:

    | action | policy          |
    |--------|-----------------|
    | 0      | closest         |
    | 1      | load_balancing  |
    | 2      | farthest        |
    | 3      | cheaper         |
    | 4      | random_latency  |
    | 5      | random_load     |
    | 6      | least_impedance |

    Every action is always allowed (the mask is all ones). An action outside the space, or not an integer
    (a Python or numpy integer, or a 0-d integer array; strings, floats and other shapes are not), raises
    ValueError.

    ## Observation Space
    The state tensor of the last window: features (rows) x sub-windows (columns, K = 20), W = number
    of workers of the topology (dc-cloud 12, co-dc-cloud 32, full-edge 52), values in [0, 10].
    ``obs_layout="flat"`` (default, what SB3's checker accepts without warnings): ``Box(0, 10,
    ((3 W + 16) * K,), float32)``, the tensor flattened row-major (``obs.reshape(3 W + 16, K)``
    recovers it; :class:`agents.aset.extractor.TimeConvExtractor` does so). ``obs_layout="2d"``:
    ``Box(0, 10, (3 W + 16, K), float32)``.

    | rows            | feature (per sub-window average)                                           |
    |-----------------|----------------------------------------------------------------------------|
    | 0 .. W-1        | streams bound to worker w  x mean fps / capacity of w                      |
    | W .. 2W-1       | responses delivered per second by w / capacity of w                        |
    | 2W .. 3W-1      | load L_w (queries/s bound to w) / capacity of w                            |
    | 3W .. 3W+15     | query rate of live streams per class (4 latency bins x 4 fps bins) / total capacity |

    ## Starting State
    No live streams; the observation is all zeros. The instance (topology, per-antenna rate phases and
    application mixes) is kept across resets unless ``options={"resample": True}``,
    ``options={"instance": inst}``, ``resample_instance=True`` or ``instance_seed=None`` (then every reset
    draws it from ``np_random``).

    ## Rewards
    The window's success fraction 1 - (failed + rejected) / queries, in [0, 1] (1 for an empty window).

    ## Episode End
    Terminated when the window's success fraction falls below ``theta``; truncated after ``horizon``
    windows (360 = one hour). ``step`` after either (or before the first ``reset``) raises RuntimeError.

    ## Information
    | key               | meaning                                                                 |
    |-------------------|-------------------------------------------------------------------------|
    | action_mask       | int8 ones of length 7 (every policy is always allowed)                  |
    | window            | number of windows simulated so far                                      |
    | policy            | name of the policy applied in the window ("" after reset)               |
    | queries           | queries issued in the window                                            |
    | success, failed, rejected | fractions of the window's queries (sum to 1)                    |
    | class_queries     | float64 (5,) queries per application class                              |
    | class_success, class_failed, class_rejected | float64 (5,) fractions per class (0 where no queries) |
    | arrivals          | streams that arrived in the window                                      |
    | rejected_streams  | of which found no feasible worker                                       |

    ## Arguments
    - ``topology``: "dc-cloud" | "co-dc-cloud" | "full-edge" or the path of a topology YAML file.
    - ``lam``: clients per minute per antenna, in [1, 200] (60 in training; 100 for the stress test).
    - ``scenario_overrides``: any field of :class:`envs.aset.generator.Scenario`.
    - ``instance_seed``: seed of the instance generator (a non-negative int). ``None``: no fixed instance;
      every reset draws the instance from ``np_random`` before the episode, so ``reset(seed=s)`` always
      gives the same instance and episode (as in every env of the suite).
    - ``resample_instance``: a new instance every reset (from the ``instance_seed`` stream).
    - ``horizon``: windows per episode, in [1, 100000]; ``theta``: termination threshold, in [0, 1].
    - ``obs_layout``: "flat" (default) or "2d" (see Observation Space).
    - ``instance_file``: path of an instance file (``env.unwrapped.export_instance(path)`` writes one; schema in
      docs/envs/aset.md): the env plays that instance at every reset (``topology`` is then unused).

    ## Version History
    - v0: initial version. Later, without a new id (no default and no valid call changes): ``instance_seed=None``
      is accepted (instance from the reset seed); ``step`` before ``reset`` or after the episode ended
      raises RuntimeError; unknown reset options, negative reset seeds, non-bool ``resample_instance`` and
      actions that are not integers ('1', 2.0, one-element arrays) raise ValueError.
    - v1 (:class:`ASETEnvV1`): same dynamics, spaces and rewards; the default scenario changes
      (``envs.aset.generator.V1_DEFAULTS``): per-replica M/D/1 queues served at C_v (v0: one pooled M/D/c
      queue per worker) and every capacity C_v x 5/3, so that lambda = 100, the paper's stress load,
      offers 88 % of the total capacity (v0: 147 %, every policy rejects a third of the queries).
    """

    #: what a policy's view shows besides the instance and spaces (offline.protocol.PolicyView): the present only
    POLICY_VISIBLE: tuple[str, ...] = ("fork",)

    metadata: ClassVar[dict[str, Any]] = {"render_modes": list(RENDER_MODES), "render_fps": RENDER_FPS}
    #: The registered id and the Scenario defaults that distinguish this version.
    env_id: ClassVar[str] = "ASET-v0"
    scenario_defaults: ClassVar[dict[str, Any]] = {}

    def __init__(
        self,
        topology: str | Path | Mapping[str, Any] = "full-edge",
        lam: float = 60.0,
        scenario_overrides: Mapping[str, Any] | None = None,
        instance_seed: int | None = 0,
        resample_instance: bool = False,
        horizon: int = 360,
        theta: float = 0.5,
        obs_layout: str = "flat",
        render_mode: str | None = None,
        instance_file: str | None = None,
    ) -> None:
        self.render_mode = check_render_mode(render_mode, self.metadata["render_modes"])
        #: Per-window record for render() (policy, outcome fractions, load); only when rendering.
        self._history: list[dict[str, Any]] | None = None
        if isinstance(topology, str) and topology not in TOPOLOGIES and not topology.endswith((".yaml", ".yml")):
            raise ValueError(
                f"topology={topology!r} is invalid: expected one of {list(TOPOLOGIES)} or a topology YAML path"
            )
        check_in_range("horizon", horizon, 1, 100_000, integer=True)
        check_in_range("theta", theta, 0.0, 1.0)
        instance_seed = check_seed("instance_seed", instance_seed)
        resample_instance = check_bool("resample_instance", resample_instance)
        self.obs_layout = check_choice("obs_layout", obs_layout, OBS_LAYOUTS)
        self.topology = topology
        #: The constructor arguments, so that policies can build an identical copy (e.g. for hindsight).
        self.init_kwargs: dict[str, Any] = {
            "topology": topology, "lam": lam, "scenario_overrides": dict(scenario_overrides or {}),
            "instance_seed": instance_seed, "resample_instance": resample_instance, "horizon": horizon,
            "theta": theta, "obs_layout": obs_layout,
        }
        if instance_file is not None:
            self.init_kwargs["instance_file"] = instance_file
            if resample_instance:
                raise ValueError("resample_instance=True is invalid with instance_file: the env plays the file's "
                                 "instance")
        self.instance_file = instance_file
        self.scenario = Scenario.from_overrides(lam, scenario_overrides, self.scenario_defaults)
        self.horizon = int(horizon)
        self.theta = float(theta)
        self.resample_instance = resample_instance
        self.instance_seed = instance_seed
        # instance_seed=None: every reset draws the instance from np_random; until the first reset the env
        # holds the instance of seed 0 (the spaces depend on the topology only)
        self._instance_rng = np.random.default_rng(0 if instance_seed is None else instance_seed)
        self.instance: Instance = (
            build_instance(topology, self.scenario, self._instance_rng) if instance_file is None
            else instance_io.load_instance(self.env_id, instance_file)  # the user's instance: topology is unused
        )
        self.action_space = spaces.Discrete(len(POLICY_NAMES))
        n_rows = WORKER_FEATURES * self.instance.num_workers + NUM_CLASS_BINS
        shape = (n_rows, self.instance.sub_windows)
        self.state_shape: tuple[int, int] = shape
        self.observation_space = spaces.Box(
            0.0, OBS_HIGH, shape=shape if obs_layout == "2d" else (shape[0] * shape[1],), dtype=np.float32
        )
        self.state = State()
        self.last_result: WindowResult | None = None
        self._arrival_rng = np.random.default_rng(0)
        self._choice_rng = np.random.default_rng(1)
        self._needs_reset = True

    def export_instance(self, path: str) -> str:
        """Write the current instance to ``path`` (``.yaml``/``.yml``/``.json``) for ``instance_file=`` or
        ``envs.aset.load_instance``; the schema is in docs/envs/aset.md ("Your own instance")."""
        return str(instance_io.export_instance(self.instance, instance_io.env_id_of(self, self.env_id), path))

    # ------------------------------------------------------------------------------ gymnasium API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=check_seed("seed", seed))
        options = check_reset_options(options, ("instance", "resample"))
        resample = check_bool("options['resample']", options.get("resample", False))
        if options.get("instance") is not None:
            inst = options["instance"]
            if not isinstance(inst, Instance) or inst.num_workers != self.instance.num_workers:
                raise ValueError(
                    f"options['instance']={inst!r} is invalid: expected an envs.aset.types.Instance with "
                    f"{self.instance.num_workers} workers, or None"
                )
            self.instance = inst
        elif self.instance_seed is None and self.instance_file is None:
            self.instance = build_instance(self.topology, self.scenario, self.np_random)
        elif resample or self.resample_instance:
            self.instance = build_instance(self.topology, self.scenario, self._instance_rng)
        seeds = self.np_random.integers(0, 2**63 - 1, size=2)
        self._arrival_rng = np.random.default_rng(int(seeds[0]))
        self._choice_rng = np.random.default_rng(int(seeds[1]))
        self.state = State()
        self.last_result = None
        self._history = [] if self.render_mode else None
        self._needs_reset = False
        self._closed = False
        return self._observe(None), self._info(None, "")

    def close(self) -> None:
        """Release the episode; ``step()`` then raises RuntimeError until the next ``reset()``."""
        self._closed = True
        super().close()

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if getattr(self, "_closed", False):
            raise RuntimeError("step() after close(): the env is closed; call reset() (or make a new env) first")
        if self._needs_reset:
            raise RuntimeError("call reset() before step() (at the start and after the episode ended)")
        policy = self._check_action(action)
        result = simulate_window(self.instance, self.state, policy, self._arrival_rng, self._choice_rng)
        self.last_result = result
        queries = result.totals[0]
        obs = self._observe(result)
        info = self._info(result, POLICY_NAMES[policy])
        reward = info["success"]  # the window's success fraction (window_outcomes)
        terminated = bool(reward < self.theta)
        truncated = bool(self.state.window >= self.horizon and not terminated)
        self._needs_reset = terminated or truncated
        if self._history is not None:
            self._history.append({
                "policy": policy, "success": info["success"], "failed": info["failed"],
                "rejected": info["rejected"], "queries": queries,
                "load": float(result.load_kw.sum(axis=1).mean() / self.instance.worker_capacity_qps.sum()),
                "streams": float(result.streams_kw.sum(axis=1).mean()),
            })
        return obs, float(reward), terminated, truncated, info

    def render(self) -> str | np.ndarray | None:
        """``"ansi"``: one status line; ``"rgb_array"``: per window so far, the policy chosen, the success /
        failure / rejection fractions and the offered load (see ``envs.aset.render``). None (with a
        warning) without a render mode."""
        return render_frame(self, started=self._history is not None, module="envs.aset.render")

    def fork(self, rng: np.random.Generator) -> ASETEnv:
        """An independent copy of the env in its present state whose unrevealed randomness is redrawn from ``rng``.

        The copy shares the (immutable) instance and holds the same live streams, bindings, clock and last window;
        what no scheduler has observed yet is drawn afresh from the instance's distributions: the arrivals of the
        windows to come and the random policies' choices (new ``_arrival_rng`` / ``_choice_rng``), and the end of
        every live stream's life, redrawn from the exponential lifetime (memoryless, so this is its law given that
        the stream is still alive). So the fork holds no information about the realised future: the
        non-anticipative online references (``offline.aset.online``) simulate candidates on forks; two forks
        made from generators in the same state are identical (common random numbers across candidates).
        """
        twin, _ = present_copy(self, rng, started=not self._needs_reset)
        seeds = rng.integers(0, 2**63 - 1, size=2)
        twin._arrival_rng = np.random.default_rng(int(seeds[0]))
        twin._choice_rng = np.random.default_rng(int(seeds[1]))
        streams = twin.state.streams
        if len(streams):
            inst = self.instance
            life_s = rng.exponential(inst.mean_lifetime_s, size=len(streams))
            first = twin.state.window * inst.sub_windows  # every kept stream is alive in this sub-window
            streams.end_sub = first + np.maximum(1, np.ceil(life_s / inst.sub_window_s)).astype(np.int64) - 1
        return twin

    def action_masks(self) -> np.ndarray:
        """All seven policies are always allowed (for uniformity with the masked envs)."""
        return np.ones(len(POLICY_NAMES), dtype=np.int8)

    # ------------------------------------------------------------------------------ helpers
    def _observe(self, result: WindowResult | None) -> np.ndarray:
        tensor = observation_features(self.instance, result)
        return tensor if self.obs_layout == "2d" else tensor.reshape(-1)

    def _check_action(self, action: Any) -> int:
        return check_discrete_action(action, len(POLICY_NAMES), POLICY_NAMES)

    def _info(self, result: WindowResult | None, policy: str) -> dict[str, Any]:
        n_a = self.instance.num_apps
        info: dict[str, Any] = {"action_mask": self.action_masks(), "window": self.state.window, "policy": policy}
        if result is None:
            zeros = np.zeros(n_a)
            info.update(
                queries=0.0, success=1.0, failed=0.0, rejected=0.0, class_queries=zeros,
                class_success=zeros.copy(), class_failed=zeros.copy(), class_rejected=zeros.copy(),
                arrivals=0, rejected_streams=0,
            )
            return info
        totals = result.totals
        out = window_outcomes(np.array([totals]), np.stack([
            result.app_queries, result.app_succeeded, result.app_failed, result.app_rejected,
        ])[None])
        info.update(
            queries=totals[0],
            success=float(out["success"][0]),
            failed=float(out["failed"][0]),
            rejected=float(out["rejected"][0]),
            class_queries=result.app_queries.copy(),
            class_success=out["class_success"][0],
            class_failed=out["class_failed"][0],
            class_rejected=out["class_rejected"][0],
            arrivals=result.arrivals,
            rejected_streams=result.rejected_at_arrival,
        )
        return info


def window_outcomes(totals: np.ndarray, app: np.ndarray) -> dict[str, np.ndarray]:
    """Outcome fractions of N windows (the one formula of the reward and the outcome infos).

    ``totals`` (N, 4): queries, succeeded, failed, rejected of each window (:attr:`WindowResult.totals`);
    ``app`` (N, 4, A): the same per application class. Returns ``success`` (the reward: 1 for an empty
    window), ``failed``, ``rejected`` (N,) and ``class_success``, ``class_failed``, ``class_rejected``
    (N, A; 0 where a class issued no queries). Elementwise, so each row is one window's numbers.
    """
    queries = totals[:, 0]
    has = queries > 0
    denom = np.where(has, queries, 1.0)
    per_class = np.where(app[:, 0] > 0, app[:, 0], 1.0)
    return {
        "success": np.where(has, totals[:, 1] / denom, 1.0),
        "failed": totals[:, 2] / denom,
        "rejected": totals[:, 3] / denom,
        "class_success": app[:, 1] / per_class,
        "class_failed": app[:, 2] / per_class,
        "class_rejected": app[:, 3] / per_class,
    }


class ASETEnvV1(ASETEnv):
    """ASET-v1: ASETEnv with per-replica queues and capacities calibrated to lambda = 100 (see Version History)."""

    env_id: ClassVar[str] = "ASET-v1"
    scenario_defaults: ClassVar[dict[str, Any]] = dict(V1_DEFAULTS)


def _instance_from_file(fields: dict) -> Instance:
    """Assemble an ASET Instance read from an instance file: check it, then recompute the scheduler x worker tables
    (``*_sw``) and ``worker_capacity_qps`` exactly as ``generator.build_instance`` does. The workload scalars are
    checked by the generator's own ``Scenario.validate`` (the same ranges as a generated instance)."""
    names, variants = fields["cluster_names"], fields["variant_names"]
    if len(fields["cluster_tiers"]) != len(names):
        raise ValueError(f"field cluster_tiers has {len(fields['cluster_tiers'])} entries: expected one per "
                         f"cluster ({len(names)})")
    for tier in fields["cluster_tiers"]:
        check_choice("field cluster_tiers entry", tier, CLUSTER_TIERS)
    workers = check_array("worker_cluster", fields["worker_cluster"], (None,), low=0, high=len(names) - 1).shape[0]
    if workers < 1:
        raise ValueError("field worker_cluster is empty: expected at least one worker")
    check_array("worker_variant", fields["worker_variant"], (workers,), low=0, high=len(variants) - 1)
    check_array("worker_replicas", fields["worker_replicas"], (workers,), low=1)
    check_array("replica_capacity_qps", fields["replica_capacity_qps"], (workers,), positive=True)
    check_array("worker_delay_ms", fields["worker_delay_ms"], (workers,), nonnegative=True)
    check_array("worker_accuracy", fields["worker_accuracy"], (workers,), low=0.0, high=1.0)
    schedulers = check_array("delay_ms", fields["delay_ms"], (None, len(names)), nonnegative=True).shape[0]
    if schedulers < 1:
        raise ValueError("field delay_ms has 0 rows: expected (S, N) with S >= 1 schedulers (antennas)")
    check_array("sigma_ms", fields["sigma_ms"], (schedulers, len(names)), nonnegative=True)
    check_array("rate_phase", fields["rate_phase"], (schedulers,))
    apps = len(fields["app_names"])
    check_array("app_latency_ms", fields["app_latency_ms"], (apps,), positive=True)
    probs = check_array("app_probs", fields["app_probs"], (schedulers, apps), low=0.0, high=1.0)
    if apps < 1 or not np.allclose(probs.sum(axis=1), 1.0, atol=1e-9):
        raise ValueError("field app_probs is invalid: expected each antenna's row to sum to 1 (an application mix)")
    check_array("fps_choices", fields["fps_choices"], (None,))
    check_array("accuracy_choices", fields["accuracy_choices"], (None,))
    scenario_fields = ("lam", "rate_variation", "rate_period_windows", "fps_choices", "frame_kb", "accuracy_choices",
                       "uplink_mbps", "mean_lifetime_s", "access_delay_ms", "queueing", "service_headroom",
                       "window_s", "sub_windows")
    Scenario(**{name: (tuple(fields[name].tolist()) if isinstance(fields[name], np.ndarray) else fields[name])
                for name in scenario_fields}).validate()
    d_sw = fields["delay_ms"][:, fields["worker_cluster"]]
    s_sw = fields["sigma_ms"][:, fields["worker_cluster"]]
    net_key = d_sw + 2.0 * s_sw
    return Instance(
        **fields,
        worker_capacity_qps=fields["worker_replicas"] * fields["replica_capacity_qps"],
        net_key_sw=net_key,
        e2e_key_sw=2.0 * net_key + fields["worker_delay_ms"][None, :],
        rtt_ms_sw=2.0 * d_sw,
        jitter_sd_ms_sw=2.0 * s_sw,
    )


#: How an ASET Instance is written to and read from an instance file (``envs.common.instance_io``).
INSTANCE_SCHEMA = InstanceSchema(
    cls=Instance,
    build=_instance_from_file,
    dtypes={"worker_cluster": "int64", "worker_variant": "int64", "worker_replicas": "int64"},
    derived=("worker_capacity_qps", "net_key_sw", "e2e_key_sw", "rtt_ms_sw", "jitter_sd_ms_sw"),
)
