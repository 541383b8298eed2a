"""Instance generator for CoRaiS-v0: a validated ``Scenario`` (scale + parameter ranges) and named scales.

Defaults are the calibrated generator of design/corais.md (paper-gaps 1.14): coordinates U[0,1]^2,
replicas m_j ~ U{1..10}, f_j(d) = a_j d + b_j with a_j, b_j ~ U[0.1, 1], per region edge backlogs
|Q^L_j|, |Q^I_j| ~ U{0..8} with d, o ~ U[0,1] and predicted edge ~ U[N] (Q^I source: another region edge),
new requests with source ~ U[Q], predicted edge ~ U[N], d, o ~ U[0,1]; mu = 1. The region edges are the
first Q of the N edges.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from envs.common.validation import check_choice, check_in_range, check_interval
from envs.corais.dynamics import backlog_times, cost_tables, workload_features
from envs.corais.types import Backlog, Instance

#: Largest supported scale (the paper's largest is (2000, 1000, 15000)).
MAX_EDGES = 10_000
MAX_REQUESTS = 100_000

#: The paper's scales (N, Q, Z) by group.
TRAINING_SCALES: tuple[tuple[int, int, int], ...] = ((10, 5, 50), (10, 5, 100), (20, 10, 50), (20, 10, 100))
GENERALISATION_SCALES: tuple[tuple[int, int, int], ...] = (
    (20, 10, 200),
    (60, 30, 400),
    (100, 50, 600),
    (100, 50, 800),
)
LARGE_SCALES: tuple[tuple[int, int, int], ...] = (
    (200, 100, 2000),
    (600, 300, 4000),
    (1000, 500, 6000),
    (2000, 1000, 10000),
    (2000, 1000, 15000),
)
#: How backlogs are drawn: "uniform" (CoRaiS-v0, the paper's reading: counts U{0..backlog_max} whatever the
#: edge or the load) and "load" (CoRaiS-v1: each edge's backlog compute time is a random share of the
#: batch's fluid level, so queue lengths scale with the edge's replicas and the batch's load).
BACKLOG_MODELS: tuple[str, ...] = ("uniform", "load")
#: Scenario fields of CoRaiS-v1 that differ from CoRaiS-v0 (design in docs/envs/corais.md, "CoRaiS-v1").
V1_DEFAULTS: dict[str, Any] = {"backlog": "load", "backlog_load": 1.0}

#: Named presets: "N-Q-Z" for every paper scale, plus "tiny" (brute-forceable) for tests.
PRESETS: dict[str, tuple[int, int, int]] = {
    f"{n}-{q}-{z}": (n, q, z) for (n, q, z) in TRAINING_SCALES + GENERALISATION_SCALES + LARGE_SCALES
}
PRESETS["tiny"] = (4, 3, 6)


@dataclass(frozen=True)
class Scenario:
    """Scale and parameter ranges of the instance distribution (validated on construction)."""

    num_edges: int = 10  # N
    num_region: int = 5  # Q
    num_requests: int = 100  # Z
    coord_max: float = 1.0  # coordinates ~ U[0, coord_max]^2
    replicas: tuple[int, int] = (1, 10)  # m_j ~ U{lo..hi}
    coef_a: tuple[float, float] = (0.1, 1.0)
    coef_b: tuple[float, float] = (0.1, 1.0)
    backlog_max: int = 8  # backlog="uniform": |Q^L_j|, |Q^I_j| ~ U{0..backlog_max}
    data_size: tuple[float, float] = (0.0, 1.0)  # d, o ~ U[lo, hi] (new and backlog requests)
    mu: float = 1.0
    backlog: str = "uniform"  # "uniform" (v0) or "load" (v1: backlog time ~ U[0, backlog_load] x fluid level)
    backlog_load: float = 1.0  # backlog="load": the largest backlog compute time, in units of the fluid level L

    def __post_init__(self) -> None:
        check_in_range("num_edges (N)", self.num_edges, 1, MAX_EDGES, integer=True)
        check_in_range("num_region (Q)", self.num_region, 1, self.num_edges, integer=True)
        check_in_range("num_requests (Z)", self.num_requests, 1, MAX_REQUESTS, integer=True)
        check_in_range("coord_max", self.coord_max, 0.0, 1e6, low_inclusive=False)
        lo, hi = check_interval("replicas", self.replicas, 1, 1000)
        if not (float(lo).is_integer() and float(hi).is_integer()):
            raise ValueError(f"replicas={self.replicas!r} is invalid: expected integers 1 <= lo <= hi")
        object.__setattr__(self, "replicas", (int(lo), int(hi)))
        object.__setattr__(self, "coef_a", check_interval("coef_a", self.coef_a, 0.0, 1e6))
        object.__setattr__(self, "coef_b", check_interval("coef_b", self.coef_b, 0.0, 1e6))
        if self.coef_a[1] + self.coef_b[1] <= 0:
            raise ValueError("coef_a, coef_b: at least one upper bound must be > 0 (positive compute times)")
        check_in_range("backlog_max", self.backlog_max, 0, 10_000, integer=True)
        object.__setattr__(self, "data_size", check_interval("data_size", self.data_size, 0.0, 1e6))
        check_in_range("mu", self.mu, 0.0, 1e6)
        check_choice("backlog", self.backlog, BACKLOG_MODELS)
        check_in_range("backlog_load", self.backlog_load, 0.0, 100.0)

    @property
    def scale(self) -> tuple[int, int, int]:
        """(N, Q, Z)."""
        return (self.num_edges, self.num_region, self.num_requests)


def parse_scale(scale: Any) -> tuple[int, int, int]:
    """A preset name ("10-5-100", "tiny", ...) or an (N, Q, Z) triple -> validated (N, Q, Z)."""
    if isinstance(scale, str):
        if scale not in PRESETS:
            raise ValueError(f"scale={scale!r} is not a preset: expected one of {sorted(PRESETS)} or (N,Q,Z)")
        return PRESETS[scale]
    try:
        n, q, z = (int(v) for v in scale)
        exact = all(float(v) == int(v) for v in scale)
    except (TypeError, ValueError):
        raise ValueError(
            f"scale={scale!r} is invalid: expected (N, Q, Z) integers with 1 <= Q <= N <= {MAX_EDGES}, "
            f"1 <= Z <= {MAX_REQUESTS}, or a preset in {sorted(PRESETS)}"
        ) from None
    if not exact or not (1 <= q <= n <= MAX_EDGES and 1 <= z <= MAX_REQUESTS):
        raise ValueError(
            f"scale={tuple(scale)!r} is out of range: expected (N, Q, Z) integers with "
            f"1 <= Q <= N <= {MAX_EDGES} and 1 <= Z <= {MAX_REQUESTS}"
        )
    return (n, q, z)


def make_scenario(scale: Any = (10, 5, 100), **overrides: Any) -> Scenario:
    """Scenario at ``scale`` with any ``Scenario`` field overridden (unknown names raise ValueError)."""
    names = {f.name for f in dataclasses.fields(Scenario)} - {"num_edges", "num_region", "num_requests"}
    unknown = set(overrides) - names
    if unknown:
        raise ValueError(f"scenario_overrides has unknown keys {sorted(unknown)}; allowed: {sorted(names)}")
    n, q, z = parse_scale(scale)
    return Scenario(num_edges=n, num_region=q, num_requests=z, **overrides)


def generate(scenario: Scenario, rng: np.random.Generator) -> Instance:
    """Draw one instance (all randomness from ``rng``); workload features and cost tables precomputed."""
    n, q, z = scenario.scale
    coords = rng.uniform(0.0, scenario.coord_max, size=(n, 2))
    replicas = rng.integers(scenario.replicas[0], scenario.replicas[1] + 1, size=q).astype(np.float64)
    coef_a = rng.uniform(*scenario.coef_a, size=q)
    coef_b = rng.uniform(*scenario.coef_b, size=q)

    if scenario.backlog == "uniform":
        backlog = uniform_backlog(scenario, coords, q, rng)
    else:
        backlog = load_backlog(scenario, coords, replicas, coef_a, coef_b, rng)
    workload = workload_features(coords, replicas, coef_a, coef_b, scenario.mu, backlog)

    req_src = rng.integers(0, q, size=z).astype(np.int64)
    req_pred = rng.integers(0, n, size=z).astype(np.int64)
    req_d = rng.uniform(*scenario.data_size, size=z)
    req_o = rng.uniform(*scenario.data_size, size=z)
    return build_instance(
        coords, replicas, coef_a, coef_b, scenario.mu, backlog, req_src, req_pred, req_d, req_o, workload
    )


def uniform_backlog(scenario: Scenario, coords: np.ndarray, q: int, rng: np.random.Generator) -> Backlog:
    """The "uniform" backlog model (CoRaiS-v0): |Q^L_j|, |Q^I_j| ~ U{0..backlog_max} per region edge."""
    n = coords.shape[0]
    counts = rng.integers(0, scenario.backlog_max + 1, size=(q, 2))  # column 0: Q^L, column 1: Q^I
    edge = np.concatenate([np.repeat(np.arange(q), counts[:, 0]), np.repeat(np.arange(q), counts[:, 1])])
    transferred = np.concatenate([np.zeros(counts[:, 0].sum(), bool), np.ones(counts[:, 1].sum(), bool)])
    k = edge.size
    # a transferred-in request comes from another region edge
    other = (edge + 1 + rng.integers(0, q - 1, size=k)) % q if q > 1 else edge.copy()
    return Backlog(
        edge=edge.astype(np.int64),
        transferred=transferred,
        src=np.where(transferred, other, edge).astype(np.int64),
        pred=rng.integers(0, n, size=k).astype(np.int64),
        d=rng.uniform(*scenario.data_size, size=k),
        o=rng.uniform(*scenario.data_size, size=k),
    )


def fluid_level(scenario: Scenario, replicas: np.ndarray, coef_a: np.ndarray, coef_b: np.ndarray) -> float:
    """L = Z / sum_j m_j / f_j(d_mean): the time the Q edges need for the batch if it were spread
    perfectly in proportion to their speeds (mean request size, no backlog, no transfers)."""
    d_mean = 0.5 * (scenario.data_size[0] + scenario.data_size[1])
    speed = replicas / np.maximum(coef_a * d_mean + coef_b, 1e-12)  # requests per unit time
    return scenario.num_requests / float(speed.sum())


def load_backlog(
    scenario: Scenario,
    coords: np.ndarray,
    replicas: np.ndarray,
    coef_a: np.ndarray,
    coef_b: np.ndarray,
    rng: np.random.Generator,
) -> Backlog:
    """The "load" backlog model (CoRaiS-v1).

    Each region edge j gets a target tau_j = u_j * L, u_j ~ U[0, backlog_load], L = ``fluid_level`` (the
    batch's load per unit of the region's capacity). Candidate backlog requests are drawn as in v0 (Q^L or
    Q^I with probability 1/2, a Q^I source among the other region edges, predicted edge ~ U[N], d, o ~
    ``data_size``) and queued while the edge's backlog-only time T_j (the one formula,
    ``dynamics.backlog_times``: compute / m_j plus pending transfers and result transfers) stays <= tau_j.
    Queues therefore grow with the edge's replicas and speed and with the batch's load, and no edge's
    backlog alone takes longer than backlog_load * L.
    """
    n, q = coords.shape[0], replicas.shape[0]
    level = fluid_level(scenario, replicas, coef_a, coef_b)
    tau = rng.uniform(0.0, scenario.backlog_load, size=q) * level
    d_min = max(scenario.data_size[0], 0.0)
    parts: list[tuple[np.ndarray, ...]] = []
    for j in range(q):
        f_min = (coef_a[j] * d_min + coef_b[j]) / replicas[j]
        k = int(min(tau[j] / max(f_min, 1e-9), 100_000)) + 1  # more candidates than can fit
        transferred = rng.random(k) < 0.5
        src = (j + 1 + rng.integers(0, q - 1, size=k)) % q if q > 1 else np.full(k, j)
        src = np.where(transferred, src, j)
        pred = rng.integers(0, n, size=k)
        d = rng.uniform(*scenario.data_size, size=k)
        o = rng.uniform(*scenario.data_size, size=k)
        compute = (coef_a[j] * d + coef_b[j]) / replicas[j]
        trn = scenario.mu * d * np.linalg.norm(coords[src] - coords[j], axis=1)
        res = scenario.mu * o * np.linalg.norm(coords[j] - coords[pred], axis=1)
        prefix = np.stack(
            [
                np.cumsum(np.where(transferred, 0.0, compute)),
                np.maximum.accumulate(np.where(transferred, trn, 0.0)),
                np.cumsum(np.where(transferred, compute, 0.0)),
                np.maximum.accumulate(np.where(transferred, 0.0, res)),
                np.maximum.accumulate(np.where(transferred, res, 0.0)),
            ],
            axis=1,
        )
        fits = int(np.sum(backlog_times(prefix) <= tau[j]))  # T_j of a prefix grows with its length
        keep = slice(0, fits)
        parts.append((np.full(fits, j), transferred[keep], src[keep], pred[keep], d[keep], o[keep]))
    edge, transferred, src, pred, d, o = (np.concatenate([p[i] for p in parts]) for i in range(6))
    order = np.argsort(transferred, kind="stable")  # Q^L first, as in v0
    return Backlog(
        edge=edge[order].astype(np.int64),
        transferred=transferred[order].astype(bool),
        src=src[order].astype(np.int64),
        pred=pred[order].astype(np.int64),
        d=d[order].astype(np.float64),
        o=o[order].astype(np.float64),
    )


def build_instance(
    coords: np.ndarray,
    replicas: np.ndarray,
    coef_a: np.ndarray,
    coef_b: np.ndarray,
    mu: float,
    backlog: Backlog,
    req_src: np.ndarray,
    req_pred: np.ndarray,
    req_d: np.ndarray,
    req_o: np.ndarray,
    workload: np.ndarray | None = None,
) -> Instance:
    """Assemble an Instance from explicit arrays (hand-made instances, characteristic tests)."""
    coords = np.asarray(coords, dtype=np.float64)
    replicas = np.asarray(replicas, dtype=np.float64)
    coef_a, coef_b = np.asarray(coef_a, dtype=np.float64), np.asarray(coef_b, dtype=np.float64)
    req_src, req_pred = np.asarray(req_src, dtype=np.int64), np.asarray(req_pred, dtype=np.int64)
    req_d, req_o = np.asarray(req_d, dtype=np.float64), np.asarray(req_o, dtype=np.float64)
    if workload is None:
        workload = workload_features(coords, replicas, coef_a, coef_b, mu, backlog)
    tables = cost_tables(coords, replicas, coef_a, coef_b, mu, workload, req_src, req_pred, req_d, req_o)
    return Instance(
        num_edges=coords.shape[0],
        num_region=replicas.shape[0],
        num_requests=req_src.shape[0],
        coords=coords,
        replicas=replicas,
        coef_a=coef_a,
        coef_b=coef_b,
        mu=float(mu),
        backlog=backlog,
        workload=workload,
        req_src=req_src,
        req_pred=req_pred,
        req_d=req_d,
        req_o=req_o,
        tables=tables,
    )


def empty_backlog() -> Backlog:
    """A backlog with no requests."""
    e = np.zeros(0, dtype=np.int64)
    return Backlog(edge=e, transferred=np.zeros(0, bool), src=e, pred=e, d=np.zeros(0), o=np.zeros(0))


def edge_features(instance: Instance) -> np.ndarray:
    """(Q, 10) float32: coordinates, a_j, b_j, m_j, the five workload features (the env's "edges")."""
    q = instance.num_region
    return np.concatenate(
        [
            instance.coords[:q],
            instance.coef_a[:, None],
            instance.coef_b[:, None],
            instance.replicas[:, None],
            instance.workload,
        ],
        axis=1,
    ).astype(np.float32)


def request_features(instance: Instance) -> np.ndarray:
    """(Z, 6) float32: source coordinates, d_i, predicted-edge coordinates, o_i (the env's "requests")."""
    return np.concatenate(
        [
            instance.coords[instance.req_src],
            instance.req_d[:, None],
            instance.coords[instance.req_pred],
            instance.req_o[:, None],
        ],
        axis=1,
    ).astype(np.float32)


#: The paper's characteristic tests (Table VI): five edges, Z identical requests.
CHARACTERISTICS: tuple[str, ...] = (
    "load_balancing", "workload_perception", "heterogeneity", "heterogeneity_mixed_sizes"
)


def characteristic_instance(kind: str, rng: np.random.Generator, num_requests: int = 100) -> Instance:
    """One instance of a Table-VI characteristic test (5 region edges = 5 edges, identical requests).

    - ``load_balancing``: identical edges (a = b = 0.5, m = 2) with identical backlogs (4 local requests
      each): a good dispatcher gives every edge about the same number of requests.
    - ``workload_perception``: identical edges, local backlogs of 0, 2, 4, 6, 8 requests (edges A..E):
      more backlog should get fewer new requests.
    - ``heterogeneity``: slopes a = 1.0, 0.8, 0.6, 0.4, 0.2 (A slowest, E fastest), b = 0.1, m = 2,
      backlogs whose compute times are equalised (4 requests of size 0.2 / a, all 0.6 s): faster edges
      should get more requests.
    - ``heterogeneity_mixed_sizes``: the heterogeneity system with new requests of random sizes
      d, o ~ U[0, 1] instead of identical ones. A one-shot policy that learnt to split a batch by
      request size (large requests to low-slope edges) sends identical mid-sized requests to the
      mid-slope edges; this variant asks the same question on a batch it can split.
    Every number lies inside the default generator's ranges, so a model trained on it is not asked to
    extrapolate.
    Edges sit on a circle of radius 0.25 around (0.5, 0.5); new requests have d = o = 0.5 and a
    uniformly random source and predicted edge (the only randomness, with the sizes of the mixed variant).
    """
    from envs.common.validation import check_choice

    check_choice("characteristic", kind, CHARACTERISTICS)
    check_in_range("num_requests (Z)", num_requests, 1, MAX_REQUESTS, integer=True)
    q = 5
    angles = 2 * np.pi * np.arange(q) / q
    coords = 0.5 + 0.25 * np.stack([np.cos(angles), np.sin(angles)], axis=1)
    replicas = np.full(q, 2.0)
    coef_a = np.full(q, 0.5)
    coef_b = np.full(q, 0.5)
    if kind == "load_balancing":
        counts, sizes = np.full(q, 4), np.full(q, 0.5)
    elif kind == "workload_perception":
        counts, sizes = np.array([0, 2, 4, 6, 8]), np.full(q, 0.5)
    else:
        coef_a = np.array([1.0, 0.8, 0.6, 0.4, 0.2])
        coef_b = np.full(q, 0.1)
        counts, sizes = np.full(q, 4), 0.2 / coef_a
    edge = np.repeat(np.arange(q), counts).astype(np.int64)
    backlog = Backlog(
        edge=edge,
        transferred=np.zeros(edge.size, bool),
        src=edge.copy(),
        pred=edge.copy(),
        d=sizes[edge],
        o=np.full(edge.size, 0.5),
    )
    z = int(num_requests)
    src, pred = rng.integers(0, q, size=z), rng.integers(0, q, size=z)
    if kind == "heterogeneity_mixed_sizes":
        d, o = rng.uniform(0.0, 1.0, size=z), rng.uniform(0.0, 1.0, size=z)
    else:
        d, o = np.full(z, 0.5), np.full(z, 0.5)
    return build_instance(coords, replicas, coef_a, coef_b, 1.0, backlog, src, pred, d, o)
