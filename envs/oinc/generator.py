"""Scenario (validated parameter ranges + named presets) and the draws of OINC-v0.

``Scenario.draw_instance(rng)`` draws what stays fixed across episodes (edges, devices, distances, SLOs,
the radio table, an optional user trace); ``Scenario.draw_episode(instance, rng)`` draws one episode's
exogenous randomness (synthetic workload, drift events, job sizes and deadlines) up front, so every
policy and controller faces the same realisation for the same reset seed.

Defaults are the paper's (Section V-A) completed by the design's choices (paper-gaps.md B9-B12):
retraining workload w_k ~ U[150, 350] Gcycles at the default retraining set of 1024 samples (a job given
half an average 7-GHz edge finishes in 43-100 s), linear in the set size; drift probability 0.01 per
device and slot; deadlines a_k + U[60, 150] s; SLO_i ~ U[0.3, 1.0] s.

Data unit. The paper gives d in [0.8, 1.6] "MB". With the paper-literal channel (about 67 Mbit/s for a
whole 2.5-MHz band) and I/J = 40/12 devices per edge, the optimal (square-root) bandwidth split uploads
1.2 MB in about 0.48 s on average, so the paper's reported 0.25 s mean inference latency is impossible
under "MB" (paper-gaps.md B12 reaches the same conclusion). Read as Mbit (0.06 s uploads) the model
reproduces the paper's latency scale, so ``data_unit="Mbit"`` is the default and the ``paper_mb``
preset keeps the literal MB reading.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from envs.common.radio import CHANNEL_PRESETS, channel_model, shannon_rate_bps
from envs.common.validation import check_choice, check_in_range, check_interval
from envs.oinc import workload
from envs.oinc.types import EpisodeDraws, Instance

BITS_PER_MB = 8.0e6
BITS_PER_MBIT = 1.0e6
#: Reference retraining-set size at which ``retrain_gcycles`` is given (the paper's default).
REFERENCE_SET_SIZE = 1024


@dataclass(frozen=True)
class Scenario:
    """Parameter ranges of OINC-v0 (paper defaults). Intervals are (lo, hi) of a uniform draw."""

    num_devices: int = 40
    num_edges: int = 12
    horizon: int = 200
    cpu_ghz: tuple[float, float] = (5.0, 9.0)
    bandwidth_mhz: tuple[float, float] = (2.0, 3.0)
    bandwidth_scale: float = 1.0
    tx_power_mw: tuple[float, float] = (80.0, 100.0)
    distance_km: tuple[float, float] = (0.15, 0.45)
    slo_s: tuple[float, float] = (0.3, 1.0)
    data_mb: tuple[float, float] = (0.8, 1.6)
    data_unit: str = "Mbit"
    megacycles: tuple[float, float] = (100.0, 200.0)
    channel: str = "paper"
    drift_prob: float = 0.01
    deadline_slack_s: tuple[float, float] = (60.0, 150.0)
    retrain_set_size: int = 1024
    retrain_gcycles: tuple[float, float] = (150.0, 350.0)
    workload: str = "synthetic"
    trace_path: str | None = None
    burst_prob: float = 0.1
    burst_persistence: float = 0.9
    ar_coef: float = 0.9
    noise_std: float = 0.05

    def __post_init__(self) -> None:
        check_in_range("num_devices", self.num_devices, 1, 500, integer=True)
        check_in_range("num_edges", self.num_edges, 1, 100, integer=True)
        check_in_range("horizon", self.horizon, 1, 100_000, integer=True)
        for name, low, high in (
            ("cpu_ghz", 0.01, 1000.0),
            ("bandwidth_mhz", 0.001, 10_000.0),
            ("tx_power_mw", 0.001, 100_000.0),
            ("distance_km", 0.001, 100.0),
            ("slo_s", 0.001, 1000.0),
            ("data_mb", 1e-6, 1e5),
            ("megacycles", 1e-3, 1e7),
            ("deadline_slack_s", 1.0, 1e6),
            ("retrain_gcycles", 1e-3, 1e7),
        ):
            object.__setattr__(self, name, check_interval(name, getattr(self, name), low, high))
        check_in_range("bandwidth_scale", self.bandwidth_scale, 0.01, 100.0)
        check_choice("data_unit", self.data_unit, ("MB", "Mbit"))
        check_choice("channel", self.channel, tuple(CHANNEL_PRESETS))
        check_in_range("drift_prob", self.drift_prob, 0.0, 1.0)
        check_in_range("retrain_set_size", self.retrain_set_size, 1, 10_000_000, integer=True)
        check_choice("workload", self.workload, ("synthetic", "trace"))
        if self.workload == "trace" and not self.trace_path:
            raise ValueError("trace_path=None is invalid with workload='trace': expected the path of a trace CSV")
        if self.trace_path is not None:
            if not isinstance(self.trace_path, (str, os.PathLike)) or not os.path.isfile(self.trace_path):
                raise ValueError(f"trace_path={self.trace_path!r} is invalid: expected the path of an existing trace CSV")
            if self.workload != "trace":
                raise ValueError(f"trace_path={self.trace_path!r} is given but workload={self.workload!r} ignores it: "
                                 "set workload='trace' or drop trace_path")
        check_in_range("burst_prob", self.burst_prob, 0.0, 1.0)
        check_in_range("burst_persistence", self.burst_persistence, 0.0, 1.0)
        check_in_range("ar_coef", self.ar_coef, 0.0, 0.999)
        check_in_range("noise_std", self.noise_std, 0.0, 1.0)

    # ------------------------------------------------------------------ draws
    @property
    def bits_per_data_unit(self) -> float:
        return BITS_PER_MB if self.data_unit == "MB" else BITS_PER_MBIT

    def draw_instance(self, rng: np.random.Generator) -> Instance:
        """Edges, devices, distances, SLOs and the full-band rate table (and the trace, if any)."""
        n_i, n_j = self.num_devices, self.num_edges
        cpu_hz = rng.uniform(*self.cpu_ghz, size=n_j) * 1e9
        bandwidth_hz = rng.uniform(*self.bandwidth_mhz, size=n_j) * 1e6 * self.bandwidth_scale
        tx_power_w = rng.uniform(*self.tx_power_mw, size=n_i) * 1e-3
        distance_km = rng.uniform(*self.distance_km, size=(n_i, n_j))
        slo_s = rng.uniform(*self.slo_s, size=n_i)
        full_rate = shannon_rate_bps(bandwidth_hz[None, :], tx_power_w[:, None], distance_km, channel_model(self.channel))
        if not np.all(full_rate > 0):
            raise ValueError(f"channel={self.channel!r} gives a zero uplink rate for this scenario: {self}")
        trace_data = trace_cycles = None
        if self.workload == "trace":
            trace_data, trace_cycles = self._trace_series(rng)
        return Instance(
            cpu_hz=cpu_hz,
            bandwidth_hz=bandwidth_hz,
            tx_power_w=tx_power_w,
            distance_km=distance_km,
            slo_s=slo_s,
            full_rate_bps=full_rate,
            trace_data_bits=trace_data,
            trace_cycles=trace_cycles,
        )

    def _trace_series(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        labels, first, second, kind = workload.load_trace_csv(str(self.trace_path), self.horizon)
        if len(labels) < self.num_devices:
            raise ValueError(
                f"num_devices={self.num_devices} is out of range for trace_path={self.trace_path!r}: "
                f"expected at most {len(labels)} (the trace's distinct devices)"
            )
        pick = np.sort(rng.choice(len(labels), size=self.num_devices, replace=False))
        first, second = first[:, pick], second[:, pick]
        if kind == "raw":
            data_units = self._map(workload.minmax_per_column(first), self.data_mb)
            mcycles = self._map(workload.minmax_per_column(second), self.megacycles)
        else:
            data_units = np.clip(first, *self.data_mb)
            mcycles = np.clip(second, *self.megacycles)
        return data_units * self.bits_per_data_unit, mcycles * 1e6

    @staticmethod
    def _map(unit: np.ndarray, interval: tuple[float, float]) -> np.ndarray:
        return interval[0] + (interval[1] - interval[0]) * unit

    def draw_episode(self, instance: Instance, rng: np.random.Generator) -> EpisodeDraws:
        """One episode's workload series, drift uniforms, job sizes and deadline slacks (all (T, I))."""
        shape = (self.horizon, instance.num_devices)
        if instance.trace_data_bits is not None and instance.trace_cycles is not None:
            data_bits, cycles = instance.trace_data_bits, instance.trace_cycles
        else:
            x, y = workload.synthetic_unit_series(
                rng,
                self.horizon,
                instance.num_devices,
                burst_prob=self.burst_prob,
                burst_persistence=self.burst_persistence,
                ar_coef=self.ar_coef,
                noise_std=self.noise_std,
            )
            data_bits = self._map(x, self.data_mb) * self.bits_per_data_unit
            cycles = self._map(y, self.megacycles) * 1e6
        scale = self.retrain_set_size / REFERENCE_SET_SIZE
        return EpisodeDraws(
            data_bits=data_bits,
            cycles=cycles,
            drift_u=rng.random(shape),
            job_cycles=rng.uniform(*self.retrain_gcycles, size=shape) * 1e9 * scale,
            job_slack_s=rng.uniform(*self.deadline_slack_s, size=shape),
        )


def scenario_fields() -> list[str]:
    """Names of the Scenario fields accepted in ``scenario_overrides``."""
    return [f.name for f in dataclasses.fields(Scenario)]


#: Named presets: the paper's default (data sizes read as Mbit, see the module docstring), the literal
#: "MB" reading, and a tiny scenario for tests (jobs finish within a short horizon).
PRESETS: dict[str, dict[str, Any]] = {
    "paper": {},
    "paper_mb": {"data_unit": "MB"},
    "tiny": {
        "num_devices": 3,
        "num_edges": 2,
        "horizon": 20,
        "drift_prob": 0.2,
        "retrain_set_size": 32,
        "deadline_slack_s": (5.0, 15.0),
    },
}

#: The paper's sweeps (Figs. 4-10): name -> (Scenario field, values). bandwidth_scale 0.8 = "-20 %".
SWEEPS: dict[str, tuple[str, list[Any]]] = {
    "devices": ("num_devices", [20, 30, 40, 50]),
    "edges": ("num_edges", [10, 11, 12, 13, 14, 15]),
    "retraining_workload": ("retrain_set_size", [256, 512, 1024, 2048, 4096]),
    "bandwidth": ("bandwidth_scale", [0.6, 0.8, 1.0, 1.2, 1.4]),
}


def make_scenario(preset: str = "paper", **overrides: Any) -> Scenario:
    """Scenario from a named preset plus field overrides; ValueError on unknown names or bad values."""
    check_choice("scenario", preset, PRESETS)
    params: dict[str, Any] = dict(PRESETS[preset])
    valid = scenario_fields()
    unknown = sorted(set(overrides) - set(valid))
    if unknown:
        raise ValueError(f"scenario_overrides has unknown fields {unknown}: valid fields {valid}")
    params.update(overrides)
    for key, value in list(params.items()):
        if isinstance(value, list):
            params[key] = tuple(value)
    return Scenario(**params)


def sweep_scenarios(name: str, preset: str = "paper") -> list[tuple[Any, Scenario]]:
    """The scenarios of one of the paper's sweeps (``SWEEPS``) as (swept value, Scenario) pairs."""
    field, values = SWEEPS[check_choice("sweep", name, SWEEPS)]
    return [(value, make_scenario(preset, **{field: value})) for value in values]
