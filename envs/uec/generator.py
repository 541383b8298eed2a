"""Draw UEC instances from a Scenario (RESCUE's Section VI-A ranges) and the named presets.

``generate_instance(scenario, rng)`` is the only place where an Instance is sampled; the env calls it
with a dedicated Generator (``instance_seed``) or with its ``np_random`` when resampling.

Presets (``PRESETS``): ``"paper"`` (the default, K=4, J=14, L=4, T=200, 18 reserved tasks, density
0.35, demand 0.15, mean arrival probability 0.45, normal durations), ``"tiny"`` (K=2, J=3, L=2, T=12,
small enough for brute force). Fixed instances (``FIXED_INSTANCES``): ``"theorem2"`` (RESCUE's
tightness instance) and ``"fig3"`` (a toy one-server instance in the spirit of Fig. 3).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from envs.common.durations import DURATION_FAMILIES, duration_table
from envs.common.radio import CHANNEL_PRESETS, channel_model, shannon_rate_bps
from envs.common.validation import check_choice, check_in_range, check_interval
from envs.uec.types import Instance, ReservedTasks

BITS_PER_MB = 8e6  # 1 MB = 10^6 bytes


@dataclass(frozen=True)
class Scenario:
    """Parameter ranges an Instance is drawn from. Ranges are (lo, hi) pairs sampled uniformly.

    Paper ranges (RESCUE Sec. VI-A): K ∈ [2, 7], J ∈ [10, 18], L ∈ [3, 8] (Fig. 8 from 1), 6–36
    reserved tasks, density 10–60 %, demand 5–30 %, mean arrival probability 20–70 %, mean SLA 18–28
    slots. The allowed ranges checked by :meth:`validate` are wider, so users can go beyond the paper.
    """

    num_servers: int = 4
    num_devices: int = 14
    num_profiles: int = 4
    horizon: int = 200
    slot_seconds: float = 60.0
    capacity_range: tuple[float, float] = (5.0, 10.0)
    capacity_jitter: float = 0.0
    weight_range: tuple[float, float] = (0.5, 10.0)
    sla_range: tuple[float, float] = (18.0, 28.0)
    upload_mb_range: tuple[float, float] = (8.0, 32.0)
    download_mb_range: tuple[float, float] = (1.0, 4.0)
    distance_km_range: tuple[float, float] = (0.15, 0.45)
    bandwidth_hz: float = 3e6
    tx_power_w: float = 0.1
    channel: str = "physical"
    alpha0_range: tuple[float, float] = (0.55, 0.80)
    alpha_max: float = 0.95
    decay_range: tuple[float, float] = (0.005, 0.02)
    perf_scale_range: tuple[float, float] = (0.1, 0.3)
    perf_rate_range: tuple[float, float] = (0.02, 0.2)
    duration_family: str = "normal"
    duration_mean_range: tuple[float, float] = (3.0, 18.0)
    mean_arrival_prob: float = 0.45
    arrival_amplitude: float = 0.5
    num_reserved: int = 18
    reserved_density: float = 0.35
    reserved_demand: float = 0.15
    over_provisioning: float = 0.10
    name: str = "paper"

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise ValueError naming the first parameter outside its allowed range."""
        check_in_range("num_servers", self.num_servers, 1, 64, integer=True)
        check_in_range("num_devices", self.num_devices, 1, 256, integer=True)
        check_in_range("num_profiles", self.num_profiles, 1, 8, integer=True)
        check_in_range("horizon", self.horizon, 2, 10_000, integer=True)
        check_in_range("slot_seconds", self.slot_seconds, 0.0, 86_400.0, low_inclusive=False)
        check_interval("capacity_range", self.capacity_range, 1e-6, 1e6)
        check_in_range("capacity_jitter", self.capacity_jitter, 0.0, 0.9)
        check_interval("weight_range", self.weight_range, 0.0, 1e6)
        check_interval("sla_range", self.sla_range, 1.0, float(self.horizon))
        check_interval("upload_mb_range", self.upload_mb_range, 0.0, 1e5)
        check_interval("download_mb_range", self.download_mb_range, 0.0, 1e5)
        check_interval("distance_km_range", self.distance_km_range, 1e-3, 100.0)
        check_in_range("bandwidth_hz", self.bandwidth_hz, 1e3, 1e11)
        check_in_range("tx_power_w", self.tx_power_w, 1e-6, 100.0)
        check_choice("channel", self.channel, CHANNEL_PRESETS)
        check_interval("alpha0_range", self.alpha0_range, 0.0, 1.0)
        check_in_range("alpha_max", self.alpha_max, 0.0, 1.0, low_inclusive=False)
        if self.alpha0_range[1] > self.alpha_max:
            raise ValueError(
                f"alpha0_range={self.alpha0_range} is out of range: its upper end must be <= alpha_max={self.alpha_max}"
            )
        check_interval("decay_range", self.decay_range, 0.0, 1.0)
        check_interval("perf_scale_range", self.perf_scale_range, 0.0, 1e3)
        check_interval("perf_rate_range", self.perf_rate_range, 0.0, 1e3)
        check_choice("duration_family", self.duration_family, DURATION_FAMILIES)
        check_interval("duration_mean_range", self.duration_mean_range, 1.0, 1000.0)
        if self.num_profiles > 1 and self.duration_mean_range[0] >= self.duration_mean_range[1]:
            raise ValueError(
                f"duration_mean_range={self.duration_mean_range} is invalid: with num_profiles > 1 the means "
                "must be strictly increasing, so lo < hi is required"
            )
        check_in_range("mean_arrival_prob", self.mean_arrival_prob, 0.0, 1.0)
        check_in_range("arrival_amplitude", self.arrival_amplitude, 0.0, 1.0)
        check_in_range("num_reserved", self.num_reserved, 0, 100_000, integer=True)
        check_in_range("reserved_density", self.reserved_density, 0.0, 1.0, low_inclusive=False)
        check_in_range("reserved_demand", self.reserved_demand, 0.0, 1.0, high_inclusive=False)
        check_in_range("over_provisioning", self.over_provisioning, 0.0, 10.0)
        covered = round(self.reserved_density * self.horizon)  # slots covered by windows on each server
        max_demand = covered / self.horizon / (1.0 + self.over_provisioning)
        if self.num_reserved > 0 and self.reserved_demand > max_demand * (1 - 1e-9):
            raise ValueError(
                f"reserved_demand={self.reserved_demand} cannot be over-provisioned by "
                f"{self.over_provisioning:.0%} within reserved_density={self.reserved_density} "
                f"({covered} of horizon={self.horizon} slots): allowed values are reserved_demand < "
                f"reserved_density / (1 + over_provisioning) = {max_demand:.4g}"
            )
        per_server = math.ceil(self.num_reserved / self.num_servers)
        if self.num_reserved > 0 and per_server > covered:
            raise ValueError(
                f"num_reserved={self.num_reserved} does not fit: {per_server} windows per server need at least "
                f"{per_server} slots but reserved_density={self.reserved_density} covers {covered} of "
                f"horizon={self.horizon}; allowed values are num_reserved <= num_servers * {covered}"
            )

    def replace(self, **overrides: Any) -> Scenario:
        """A copy with some fields replaced (validated); unknown names raise ValueError listing the fields."""
        known = {f.name for f in fields(self)}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise ValueError(f"unknown scenario parameter(s) {unknown}; valid parameters: {sorted(known)}")
        converted = {k: tuple(v) if isinstance(v, list) else v for k, v in overrides.items()}
        return dataclasses.replace(self, **converted)


PRESETS: dict[str, Scenario] = {
    "paper": Scenario(),
    "tiny": Scenario(
        num_servers=2,
        num_devices=3,
        num_profiles=2,
        horizon=12,
        sla_range=(6.0, 8.0),
        duration_mean_range=(1.5, 3.0),
        num_reserved=2,
        reserved_density=0.5,
        reserved_demand=0.2,
        mean_arrival_prob=0.5,
        name="tiny",
    ),
}


def theorem2_instance(epsilon: float = 0.01) -> Instance:
    """RESCUE's Theorem 2 instance: one server, T = 2, one profile of duration exactly 2.

    Slot 0 (paper t=1): device 0 arrives surely with profit 1. Slot 1: device 1 with probability ε and
    profit 1/ε, else device 2 with profit 0. The best online profit is 1, the offline optimum 2 - ε.
    Weights are solved so that R_jkl(t) equals those profits under the model's formula.
    """
    check_in_range("epsilon", epsilon, 0.0, 1.0, low_inclusive=False, high_inclusive=False)
    capacity = np.ones((1, 2))
    gain = math.log1p(2.0)  # F[U] with A = B = 1 and U = 2 slots of capacity 1
    gap = 0.5  # a_j(t) with alpha0 = 0.5, alpha_max = 1, no decay
    weight = np.array([1.0, 1.0 / epsilon, 0.0]) / (gap * gain)
    arrival = np.array([[1.0, 0.0, 0.0], [0.0, epsilon, 1.0 - epsilon]])
    return Instance(
        capacity=capacity,
        base_capacity=np.ones(1),
        weight=weight,
        alpha0=np.full(3, 0.5),
        alpha_max=1.0,
        decay=np.zeros(3),
        perf_scale=np.ones(3),
        perf_rate=np.ones(3),
        sla=np.full(3, 2),
        tx_delay_s=np.zeros((3, 1)),
        duration_pmf=np.array([[0.0, 1.0]]),
        arrival_prob=arrival,
        slot_seconds=60.0,
        duration_family="deterministic",
        name=f"theorem2(eps={epsilon:g})",
    )


def fig3_instance() -> Instance:
    """A toy in the spirit of RESCUE's Fig. 3: one server of capacity 3 over 8 slots, three reserved
    tasks (start, end, demand) = (0, 3, 6), (3, 5, 4), (6, 7, 3), one device arriving with probability
    1 at slot 1 and 0.5 afterwards, two profiles of deterministic durations 2 and 3."""
    horizon = 8
    arrival = np.full((horizon, 1), 0.5)
    arrival[0], arrival[1] = 0.0, 1.0
    return Instance(
        capacity=np.full((1, horizon), 3.0),
        base_capacity=np.array([3.0]),
        weight=np.array([1.0]),
        alpha0=np.array([0.6]),
        alpha_max=0.95,
        decay=np.array([0.01]),
        perf_scale=np.array([0.2]),
        perf_rate=np.array([0.1]),
        sla=np.array([5]),
        tx_delay_s=np.zeros((1, 1)),
        duration_pmf=np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]),
        arrival_prob=arrival,
        reserved=ReservedTasks(
            server=np.zeros(3, np.int64),
            start=np.array([0, 3, 6]),
            end=np.array([3, 5, 7]),
            demand=np.array([6.0, 4.0, 3.0]),
        ),
        duration_family="deterministic",
        name="fig3",
    )


FIXED_INSTANCES: dict[str, Callable[[], Instance]] = {"theorem2": theorem2_instance, "fig3": fig3_instance}
SCENARIO_NAMES: tuple[str, ...] = (*PRESETS, *FIXED_INSTANCES)


def resolve_scenario(scenario: str | Scenario, overrides: Mapping[str, Any] | None = None) -> Scenario | Instance:
    """A preset name / Scenario plus overrides -> a Scenario, or the fixed Instance of a fixed preset."""
    overrides = dict(overrides or {})
    if isinstance(scenario, Scenario):
        return scenario.replace(**overrides) if overrides else scenario
    check_choice("scenario", scenario, SCENARIO_NAMES)
    if scenario in FIXED_INSTANCES:
        if overrides:
            raise ValueError(f"scenario={scenario!r} is a fixed instance and takes no scenario_overrides")
        return FIXED_INSTANCES[scenario]()
    return PRESETS[scenario].replace(**overrides) if overrides else PRESETS[scenario]


def _uniform(rng: np.random.Generator, bounds: tuple[float, float], size: Any = None) -> np.ndarray:
    return rng.uniform(bounds[0], bounds[1], size=size)


def arrival_probabilities(scenario: Scenario, device_shares: np.ndarray) -> np.ndarray:
    """(T, J) p_j(t) = P(t)·q_j with the day/night profile P(t) = clip(P̄·(1 + amp·sin(2πt/T)), 0, 1)."""
    t_paper = np.arange(1, scenario.horizon + 1)
    total = np.clip(
        scenario.mean_arrival_prob * (1 + scenario.arrival_amplitude * np.sin(2 * np.pi * t_paper / scenario.horizon)),
        0.0,
        1.0,
    )
    return total[:, None] * device_shares[None, :]


def draw_reserved_tasks(scenario: Scenario, capacity: np.ndarray, rng: np.random.Generator) -> ReservedTasks:
    """Tasks spread evenly over the servers (in random order); on each server, non-overlapping windows
    covering ``reserved_density`` of its slots with random lengths and gaps; each server's
    reserved demand is ``reserved_demand`` of its total capacity, split in proportion to window capacity,
    so every window is over-provisioned by the same factor density/demand ≥ 1 + over_provisioning."""
    num_servers, horizon = capacity.shape
    n = scenario.num_reserved
    if n == 0:
        return ReservedTasks.empty()
    servers = rng.permutation(np.arange(n) % num_servers)  # spread evenly: counts differ by at most one
    covered = round(scenario.reserved_density * horizon)
    starts, ends, demands, owners = [], [], [], []
    for k in range(num_servers):
        count = int(np.sum(servers == k))
        if count == 0:
            continue
        lengths = 1 + rng.multinomial(covered - count, rng.dirichlet(np.ones(count)))
        gaps = rng.multinomial(horizon - covered, rng.dirichlet(np.ones(count + 1)))
        begin = gaps[0] + np.concatenate([[0], np.cumsum(lengths[:-1] + gaps[1:-1])])
        finish = begin + lengths - 1
        cum = np.concatenate([[0.0], np.cumsum(capacity[k])])
        window_capacity = cum[finish + 1] - cum[begin]
        demand = scenario.reserved_demand * capacity[k].sum() * window_capacity / window_capacity.sum()
        if np.any(demand * (1 + scenario.over_provisioning) > window_capacity * (1 + 1e-9)):
            raise ValueError(
                f"reserved_demand={scenario.reserved_demand} with reserved_density={scenario.reserved_density} "
                f"leaves a window on server {k} over-provisioned by less than {scenario.over_provisioning:.0%}; "
                "lower reserved_demand or capacity_jitter"
            )
        starts.append(begin)
        ends.append(finish)
        demands.append(demand)
        owners.append(np.full(count, k))
    return ReservedTasks(
        server=np.concatenate(owners).astype(np.int64),
        start=np.concatenate(starts).astype(np.int64),
        end=np.concatenate(ends).astype(np.int64),
        demand=np.concatenate(demands),
    )


def generate_instance(scenario: str | Scenario, rng: np.random.Generator) -> Instance:
    """Draw one Instance of ``scenario`` (a Scenario or preset name) using only ``rng``."""
    resolved = resolve_scenario(scenario)
    if isinstance(resolved, Instance):
        return resolved
    sc = resolved
    num_servers, num_devices, horizon = sc.num_servers, sc.num_devices, sc.horizon
    base = _uniform(rng, sc.capacity_range, num_servers)
    jitter = _uniform(rng, (1 - sc.capacity_jitter, 1 + sc.capacity_jitter), (num_servers, horizon))
    capacity = base[:, None] * jitter
    distance = _uniform(rng, sc.distance_km_range, (num_devices, num_servers))
    rate = shannon_rate_bps(sc.bandwidth_hz, sc.tx_power_w, distance, channel_model(sc.channel))
    data_mb = _uniform(rng, sc.upload_mb_range, num_devices) + _uniform(rng, sc.download_mb_range, num_devices)
    tx_delay_s = data_mb[:, None] * BITS_PER_MB / rate  # d_jk = (φ_j + φ'_j) / r_jk
    means = np.linspace(sc.duration_mean_range[0], sc.duration_mean_range[1], sc.num_profiles)
    pmf = duration_table(sc.duration_family, means)
    realised = pmf @ np.arange(1, pmf.shape[1] + 1)
    if np.any(np.diff(realised) <= 1e-9):
        raise ValueError(
            f"duration_mean_range={sc.duration_mean_range} is too narrow for num_profiles={sc.num_profiles} with "
            f"duration_family={sc.duration_family!r}: the discretised means {np.round(realised, 3).tolist()} are not "
            "strictly increasing; allowed values space the profile means at least ~1 slot apart"
        )
    shares = rng.dirichlet(np.ones(num_devices))
    return Instance(
        capacity=capacity,
        base_capacity=base,
        weight=_uniform(rng, sc.weight_range, num_devices),
        alpha0=_uniform(rng, sc.alpha0_range, num_devices),
        alpha_max=sc.alpha_max,
        decay=_uniform(rng, sc.decay_range, num_devices),
        perf_scale=_uniform(rng, sc.perf_scale_range, num_devices),
        perf_rate=_uniform(rng, sc.perf_rate_range, num_devices),
        sla=np.rint(_uniform(rng, sc.sla_range, num_devices)).astype(np.int64),
        tx_delay_s=tx_delay_s,
        duration_pmf=pmf,
        arrival_prob=arrival_probabilities(sc, shares),
        reserved=draw_reserved_tasks(sc, capacity, rng),
        slot_seconds=sc.slot_seconds,
        duration_family=sc.duration_family,
        name=sc.name,
    )
