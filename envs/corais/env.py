"""CoRaiS-v0 / CoRaiS-v1: dispatch a batch of Z requests across the Q cooperating edges of a control region."""

from __future__ import annotations

from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from envs.common import instance_io
from envs.common.instance_io import InstanceSchema, check_array
from envs.common.render import RENDER_FPS, RENDER_MODES, check_render_mode, render_frame
from envs.common.validation import check_bool, check_choice, check_in_range, check_reset_options, check_seed
from envs.corais.dynamics import response_times
from envs.corais.generator import (
    CHARACTERISTICS,
    V1_DEFAULTS,
    Scenario,
    build_instance,
    characteristic_instance,
    edge_features,
    generate,
    generate_seeded,
    make_scenario,
    parse_scale,
    request_features,
)
from envs.corais.types import WORKLOAD_FEATURES, Backlog, Instance


def observation_bounds(scenario: Scenario) -> tuple[np.ndarray, np.ndarray]:
    """Upper bounds of one "edges" row (10,) and one "requests" row (6,) for the scenario's ranges."""
    c, d_hi = scenario.coord_max, scenario.data_size[1]
    a_hi, b_hi = scenario.coef_a[1], scenario.coef_b[1]
    m_lo, m_hi = scenario.replicas
    if scenario.backlog == "uniform":
        backlog_cmp = scenario.backlog_max * (a_hi * d_hi + b_hi) / m_lo
    else:  # "load": every backlog compute time <= the edge's backlog-only time <= backlog_load * L
        d_mean = 0.5 * (scenario.data_size[0] + d_hi)
        level_max = scenario.num_requests * (a_hi * d_mean + b_hi) / (scenario.num_region * m_lo)
        backlog_cmp = scenario.backlog_load * level_max
    transfer = scenario.mu * d_hi * c * np.sqrt(2.0)
    edge = np.array([c, c, a_hi, b_hi, m_hi, backlog_cmp, transfer, backlog_cmp, transfer, transfer])
    request = np.array([c, c, d_hi, c, c, d_hi])
    # float32 rounding of the bounds must not cut off values at the bound
    return (np.nextafter(edge.astype(np.float32), np.float32(np.inf)),
            np.nextafter(request.astype(np.float32), np.float32(np.inf)))


class CoRaiSEnv(gym.Env[dict[str, np.ndarray], np.ndarray]):
    """
    ## Description
    A control region of Q heterogeneous edges (inside a service subsystem of N edges) receives Z new
    requests. Each edge j runs the service with m_j replicas and compute time f_j(d) = a_j d + b_j, and
    already holds a backlog summarised by five workload features (eqs. 1-5 of CoRaiS, Hu et al. 2024).
    The scheduler dispatches every request to one region edge at once; the cost is the time until the
    last edge has finished everything, R(pi) = max_j T_j with
    T_j = max(C^L_j, S_j) + C^I_j + O_j (local compute overlaps incoming transfers, transferred-in
    requests run after their data has arrived, results are sent last); see ``envs.corais.dynamics``.

    ## Action Space
    ``MultiDiscrete([Q] * Z)``: entry i is the region edge (0..Q-1) that executes request i.

    ## Observation Space
    ``Dict`` of two float32 arrays:

    | key        | shape   | columns                                                                    |
    |------------|---------|----------------------------------------------------------------------------|
    | "edges"    | (Q, 10) | x, y, a_j, b_j, m_j, T^{L,cmp}, T^{I,trn}, T^{I,cmp}, T^{L,res}, T^{I,res} |
    | "requests" | (Z, 6)  | source x, source y, d_i, predicted-edge x, predicted-edge y, o_i           |

    All entries lie in [0, high] with per-column upper bounds derived from the scenario's ranges
    (``observation_bounds``); with ``flat_observation=True`` both arrays are flattened row-major to
    (Q*10,) and (Z*6,) (for MLP policies; stable-baselines3's checker advises 1-D Boxes).

    ## Starting State
    ``reset`` draws a fresh instance from the scenario with a Generator seeded from ``self.np_random``
    (so the same reset seed gives the same instance), unless ``instance_seed`` pins one instance for the
    env's lifetime or ``options={"instance": inst}`` supplies one.

    ## Rewards
    ``-R(pi)`` (a Python float), the negative response time of the whole batch.

    ## Episode End
    Every episode is one dispatch: ``terminated=True`` after the first step; ``truncated`` is False.

    ## Information
    - ``reset``: ``"scale"`` (N, Q, Z).
    - ``step``: ``"edge_times"`` (Q,) float64 per-edge T_j; ``"cost"`` R(pi) (float);
      ``"requests_per_edge"`` (Q,) int64 number of new requests dispatched to each edge;
      ``"data_per_edge"`` (Q,) float64 their summed input size sum d_i (the work an edge takes on);
      ``"scale"`` (N, Q, Z).

    ## Arguments
    - ``scale``: (N, Q, Z) or a preset name from ``envs.corais.generator.PRESETS`` ("10-5-100", "tiny",
      every paper scale "N-Q-Z"); default (10, 5, 100).
    - ``scenario_overrides``: dict of ``Scenario`` fields (``replicas``, ``coef_a``, ``coef_b``,
      ``backlog_max``, ``data_size``, ``mu``, ``coord_max``, ``backlog`` ("uniform" | "load"),
      ``backlog_load``).
    - ``instance_seed``: a non-negative int, or None (default): no fixed instance; every reset draws the
      instance from ``np_random``, so ``reset(seed=s)`` always gives the same instance (as in every env of
      the suite). If set, the env always serves the instance drawn from it.
    - ``flat_observation``: False (default) or True to flatten the two observation arrays.
    - ``characteristic``: None (default) or one of ``CHARACTERISTICS`` ("load_balancing",
      "workload_perception", "heterogeneity"): serve the paper's Table-VI test instances (scale (5, 5, Z)).
    - ``instance_file``: path of an instance file (``env.unwrapped.export_instance(path)`` writes one; schema in
      docs/envs/corais.md): the env serves that instance at every reset (the scale is the file's; observations
      clip at the scenario's ranges, costs do not).
    - ``render_mode``: None (default), ``"ansi"`` (a text summary) or ``"rgb_array"`` (the dispatch map and
      each edge's finish time, ``envs.corais.render``), as in every env of the suite.

    ## Version History
    - v0: initial version (cost model reconstructed in design/corais.md). Later, without a new id (no
      default and no valid call changes): unknown reset options, a negative ``instance_seed`` or reset
      seed, a non-bool ``flat_observation`` and float actions raise ValueError; ``render_mode=None`` is
      accepted and ``step()`` after ``close()`` raises RuntimeError.
    - v1 (``CoRaiSEnvV1``): same dynamics, cost and spaces; the default instance distribution draws
      backlogs with the "load" model (``envs.corais.generator.V1_DEFAULTS``): each edge's backlog compute
      time is U[0, 1] x the batch's fluid level, so queues scale with replicas and load and the optimum
      exceeds the backlog-only bound on almost every instance (v0: on 0-55 % depending on the scale).
    """

    #: what a policy's view shows besides the instance and spaces (offline.protocol.PolicyView): the present only
    POLICY_VISIBLE: tuple[str, ...] = ()

    metadata: ClassVar[dict[str, Any]] = {"render_modes": list(RENDER_MODES), "render_fps": RENDER_FPS}
    #: The registered id and the Scenario defaults that distinguish this version.
    env_id: ClassVar[str] = "CoRaiS-v0"
    scenario_defaults: ClassVar[dict[str, Any]] = {}

    def __init__(
        self,
        scale: Any = (10, 5, 100),
        scenario_overrides: dict[str, Any] | None = None,
        instance_seed: int | None = None,
        flat_observation: bool = False,
        characteristic: str | None = None,
        render_mode: str | None = None,
        instance_file: str | None = None,
    ) -> None:
        self.render_mode = check_render_mode(render_mode, self.metadata["render_modes"])
        #: The last dispatch (action, edge times) for render(); kept only when rendering.
        self._last_dispatch: tuple[np.ndarray, np.ndarray] | None = None
        self._closed = False
        self.instance_file = instance_file
        loaded: Instance | None = None
        if instance_file is not None:  # the user's instance, served at every reset; the scale is the file's
            if characteristic is not None:
                raise ValueError(f"characteristic={characteristic!r} is invalid with instance_file: expected None")
            loaded = instance_io.load_instance(self.env_id, instance_file)
            if parse_scale(scale) not in ((10, 5, 100), loaded.scale):
                raise ValueError(f"scale={scale!r} is invalid with instance_file: the file's instance has scale "
                                 f"{loaded.scale} (leave scale out)")
            scale = loaded.scale
        if characteristic is not None:
            check_choice("characteristic", characteristic, CHARACTERISTICS)
            z = parse_scale(scale)[2]
            if parse_scale(scale) != (5, 5, z):
                raise ValueError(f"scale={scale!r} is invalid with characteristic: expected (5, 5, Z)")
        self.characteristic = characteristic
        self.scenario = make_scenario(scale, **{**self.scenario_defaults, **dict(scenario_overrides or {})})
        _, q, z = self.scenario.scale
        self.flat_observation = check_bool("flat_observation", flat_observation)
        edge_high, request_high = observation_bounds(self.scenario)
        edge_high = np.tile(edge_high, (q, 1))
        request_high = np.tile(request_high, (z, 1))
        if self.flat_observation:
            edge_high, request_high = edge_high.ravel(), request_high.ravel()
        self.observation_space = spaces.Dict(
            {
                "edges": spaces.Box(np.zeros_like(edge_high), edge_high, dtype=np.float32),
                "requests": spaces.Box(np.zeros_like(request_high), request_high, dtype=np.float32),
            }
        )
        self.action_space = spaces.MultiDiscrete(np.full(z, q, dtype=np.int64))
        instance_seed = check_seed("instance_seed", instance_seed)
        self.instance_seed = instance_seed
        self._fixed: Instance | None = None
        if instance_seed is not None:
            seeded = np.random.default_rng(int(instance_seed))
            self._fixed = (
                generate(self.scenario, seeded)
                if characteristic is None
                else characteristic_instance(characteristic, seeded, z)
            )
        if loaded is not None:
            self._fixed = loaded
        self.instance: Instance | None = None
        self._done = True

    def export_instance(self, path: str) -> str:
        """Write the current instance (the fixed one, else the last reset's) to ``path`` (``.yaml``/``.yml``/
        ``.json``) for ``instance_file=`` or ``envs.corais.load_instance``; schema in docs/envs/corais.md."""
        instance = self.instance if self.instance is not None else self._fixed
        if instance is None:
            raise ValueError("export_instance() needs an instance: call reset() first (instance_seed=None draws one "
                             "per reset)")
        return str(instance_io.export_instance(instance, instance_io.env_id_of(self, self.env_id), path))

    def _observation(self) -> dict[str, np.ndarray]:
        assert self.instance is not None
        edges, requests = edge_features(self.instance), request_features(self.instance)
        if self.flat_observation:
            edges, requests = edges.ravel(), requests.ravel()
        high_e, high_r = self.observation_space["edges"].high, self.observation_space["requests"].high
        # hand-made instances (options["instance"]) may exceed the scenario's ranges: clip into the space
        return {"edges": np.minimum(edges, high_e), "requests": np.minimum(requests, high_r)}

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        super().reset(seed=check_seed("seed", seed))
        options = check_reset_options(options, ("instance",))
        if options.get("instance") is not None:
            inst = options["instance"]
            if not isinstance(inst, Instance) or inst.scale != self.scenario.scale:
                raise ValueError(
                    f"options['instance']={inst!r} is invalid: expected an envs.corais.types.Instance of scale "
                    f"{self.scenario.scale}, or None"
                )
            self.instance = inst
        elif self._fixed is not None:
            self.instance = self._fixed
        else:
            sub_seed = int(self.np_random.integers(0, 2**63 - 1))
            if self.characteristic is not None:
                sub_rng = np.random.default_rng(sub_seed)
                self.instance = characteristic_instance(self.characteristic, sub_rng, self.scenario.num_requests)
            else:  # = generate(self.scenario, np.random.default_rng(sub_seed)), without making the generator
                self.instance = generate_seeded(self.scenario, [sub_seed]).instance(0)
        self._done = False
        self._closed = False
        self._last_dispatch = None
        return self._observation(), {"scale": self.scenario.scale}

    def validate_action(self, action: Any) -> np.ndarray:
        """The action as an int64 (Z,) array; ValueError naming ``action`` and the allowed values."""
        _, q, z = self.scenario.scale
        arr = np.asarray(action)
        if arr.shape != (z,):
            raise ValueError(f"action has shape {arr.shape}: expected shape ({z},), integers in [0, {q - 1}]")
        if not np.issubdtype(arr.dtype, np.integer):
            raise ValueError(f"action dtype {arr.dtype} is invalid: expected integers in [0, {q - 1}] "
                             "(floats are rejected even when integral)")
        arr = arr.astype(np.int64)
        if arr.min() < 0 or arr.max() >= q:
            raise ValueError(f"action has entries outside [0, {q - 1}] (the region edges): min {arr.min()}, "
                             f"max {arr.max()}")
        return arr

    def close(self) -> None:
        """Release the episode; ``step()`` then raises RuntimeError until the next ``reset()``."""
        self._closed = True
        super().close()

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        if getattr(self, "_closed", False):
            raise RuntimeError("step() after close(): the env is closed; call reset() (or make a new env) first")
        if self.instance is None or self._done:
            raise RuntimeError(f"call reset() before step(): {self.env_id} episodes are one dispatch long")
        act = self.validate_action(action)
        cost, times = response_times(self.instance.tables, act[None, :])
        self._done = True
        if self.render_mode is not None:
            self._last_dispatch = (act.copy(), times[0].copy())
        info = {
            "edge_times": times[0].copy(),
            "cost": float(cost[0]),
            "requests_per_edge": np.bincount(act, minlength=self.scenario.num_region).astype(np.int64),
            "data_per_edge": np.bincount(act, weights=self.instance.req_d, minlength=self.scenario.num_region),
            "scale": self.scenario.scale,
        }
        return self._observation(), -float(cost[0]), True, False, info


    def render(self) -> str | np.ndarray | None:
        """``"ansi"``: the batch and, after the step, each edge's requests and finish time; ``"rgb_array"``:
        a map of the edges with the dispatch (source edge -> executing edge) and a bar chart of each region
        edge's finish time T_j (see ``envs.corais.render``). None (with a warning) without a render mode."""
        return render_frame(self, started=self.instance is not None, module="envs.corais.render")


class CoRaiSEnvV1(CoRaiSEnv):
    """CoRaiS-v1: CoRaiSEnv with backlogs that scale with replicas and load (see Version History)."""

    env_id: ClassVar[str] = "CoRaiS-v1"
    scenario_defaults: ClassVar[dict[str, Any]] = dict(V1_DEFAULTS)


def _instance_from_file(fields: dict) -> Instance:
    """Check a CoRaiS Instance read from an instance file and assemble it with ``generator.build_instance``
    (sizes N, Q, Z from the shapes; cost tables, and ``workload`` when the file leaves it out, recomputed)."""
    num_edges = check_array("coords", fields["coords"], (None, 2), nonnegative=True).shape[0]
    num_region = check_array("replicas", fields["replicas"], (None,), low=1.0).shape[0]
    if not 1 <= num_region <= num_edges:
        raise ValueError(f"field replicas has {num_region} entries: expected 1 <= Q <= N = {num_edges} (coords rows)")
    check_array("coef_a", fields["coef_a"], (num_region,), nonnegative=True)
    check_array("coef_b", fields["coef_b"], (num_region,), nonnegative=True)
    check_in_range("field mu", fields["mu"], 0.0, 1e12)
    num_requests = check_array("req_src", fields["req_src"], (None,), low=0, high=num_region - 1).shape[0]
    if num_requests < 1:
        raise ValueError("field req_src is empty: expected Z >= 1 requests")
    check_array("req_pred", fields["req_pred"], (num_requests,), low=0, high=num_edges - 1)
    check_array("req_d", fields["req_d"], (num_requests,), nonnegative=True)
    check_array("req_o", fields["req_o"], (num_requests,), nonnegative=True)
    backlog = fields["backlog"]
    size = check_array("backlog.edge", backlog.edge, (None,), low=0, high=num_region - 1).shape[0]
    check_array("backlog.transferred", backlog.transferred, (size,))
    check_array("backlog.src", backlog.src, (size,), low=0, high=num_region - 1)
    check_array("backlog.pred", backlog.pred, (size,), low=0, high=num_edges - 1)
    check_array("backlog.d", backlog.d, (size,), nonnegative=True)
    check_array("backlog.o", backlog.o, (size,), nonnegative=True)
    local = ~np.asarray(backlog.transferred)
    if np.any(backlog.src[local] != backlog.edge[local]):
        raise ValueError("field backlog.src is invalid: expected src == edge for every local (transferred: false) "
                         "entry")
    if fields.get("workload") is not None:
        check_array("workload", fields["workload"], (num_region, len(WORKLOAD_FEATURES)), nonnegative=True)
    return build_instance(fields["coords"], fields["replicas"], fields["coef_a"], fields["coef_b"], fields["mu"],
                          backlog, fields["req_src"], fields["req_pred"], fields["req_d"], fields["req_o"],
                          workload=fields.get("workload"))


#: How a CoRaiS Instance is written to and read from an instance file (``envs.common.instance_io``).
INSTANCE_SCHEMA = InstanceSchema(
    cls=Instance,
    build=_instance_from_file,
    dtypes={"backlog.edge": "int64", "backlog.transferred": "bool", "backlog.src": "int64", "backlog.pred": "int64",
            "req_src": "int64", "req_pred": "int64"},
    nested={"backlog": Backlog},
    derived=("num_edges", "num_region", "num_requests", "tables"),
    optional=("workload",),
)
