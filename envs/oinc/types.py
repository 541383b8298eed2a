"""Typed containers of OINC-v0: the drawn Instance, one episode's exogenous randomness, the job table.

Units are SI throughout (bits, cycles, Hz, seconds, watts) so that the formulas in ``dynamics.py`` need
no conversion factors.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from envs.common.instance_io import InstanceSchema, check_array


@dataclass(frozen=True, eq=False)
class Instance:
    """What the generator draws and what stays fixed across the episodes played on it.

    Attributes:
        cpu_hz: (J,) edge CPU capacity f_j.
        bandwidth_hz: (J,) edge radio bandwidth B_j (after the scenario's bandwidth scale).
        tx_power_w: (I,) device transmit power rho_i.
        distance_km: (I, J) device-edge distances.
        slo_s: (I,) latency SLO of device i's tasks.
        full_rate_bps: (I, J) uplink rate with the whole band, B_j·log2(1 + rho_i g_ij / sigma^2)
            (precomputed once; a share v gives v·full_rate).
        trace_data_bits: (T, I) task input sizes from a user trace, or None (synthetic workload per episode).
        trace_cycles: (T, I) task workloads from a user trace, or None.
    """

    cpu_hz: np.ndarray
    bandwidth_hz: np.ndarray
    tx_power_w: np.ndarray
    distance_km: np.ndarray
    slo_s: np.ndarray
    full_rate_bps: np.ndarray
    trace_data_bits: np.ndarray | None = None
    trace_cycles: np.ndarray | None = None

    @property
    def num_devices(self) -> int:
        return int(self.slo_s.shape[0])

    @property
    def num_edges(self) -> int:
        return int(self.cpu_hz.shape[0])


@dataclass(frozen=True, eq=False)
class EpisodeDraws:
    """All exogenous randomness of one episode, drawn at reset (common random numbers across policies).

    Attributes:
        data_bits: (T, I) input size d_i^t of the task device i generates in slot t.
        cycles: (T, I) workload c_i^t of that task.
        drift_u: (T, I) uniforms; a drift event on device i at t when drift_u < p_drift and i has no job.
        job_cycles: (T, I) workload w_k a job created by that event would have.
        job_slack_s: (T, I) deadline slack D_k - a_k of that job.
    """

    data_bits: np.ndarray
    cycles: np.ndarray
    drift_u: np.ndarray
    job_cycles: np.ndarray
    job_slack_s: np.ndarray


@dataclass
class Jobs:
    """Growable table of retraining jobs (structure of arrays, one row per job k).

    ``edge`` is -1 before dispatch; ``finish_s`` is NaN until the remaining workload reaches 0.
    """

    device: np.ndarray
    arrival_s: np.ndarray
    deadline_s: np.ndarray
    workload: np.ndarray
    remaining: np.ndarray
    edge: np.ndarray
    finish_s: np.ndarray
    count: int = 0

    @classmethod
    def empty(cls, capacity: int) -> Jobs:
        capacity = max(int(capacity), 1)
        return cls(
            device=np.zeros(capacity, dtype=np.int64),
            arrival_s=np.zeros(capacity),
            deadline_s=np.zeros(capacity),
            workload=np.zeros(capacity),
            remaining=np.zeros(capacity),
            edge=np.full(capacity, -1, dtype=np.int64),
            finish_s=np.full(capacity, np.nan),
        )

    def add(self, device: np.ndarray, arrival_s: float, deadline_s: np.ndarray, workload: np.ndarray) -> np.ndarray:
        """Append jobs and return their indices."""
        n = int(np.size(device))
        if self.count + n > self.device.shape[0]:
            self._grow(max(2 * self.device.shape[0], self.count + n))
        idx = np.arange(self.count, self.count + n)
        self.device[idx] = device
        self.arrival_s[idx] = arrival_s
        self.deadline_s[idx] = deadline_s
        self.workload[idx] = workload
        self.remaining[idx] = workload
        self.edge[idx] = -1
        self.finish_s[idx] = np.nan
        self.count += n
        return idx

    def _grow(self, capacity: int) -> None:
        for name in ("device", "arrival_s", "deadline_s", "workload", "remaining", "edge", "finish_s"):
            old = getattr(self, name)
            fill = -1 if name == "edge" else (np.nan if name == "finish_s" else 0)
            new = np.full(capacity, fill, dtype=old.dtype)
            new[: old.shape[0]] = old
            setattr(self, name, new)

    def active(self) -> np.ndarray:
        """Indices of jobs that are not finished (dispatched or not)."""
        return np.flatnonzero(np.isnan(self.finish_s[: self.count]))

    def queued_on(self, edge: int) -> np.ndarray:
        """Indices of unfinished jobs dispatched to ``edge``."""
        n = self.count
        return np.flatnonzero((self.edge[:n] == edge) & np.isnan(self.finish_s[:n]))


def _instance_from_file(fields: dict) -> Instance:
    """Assemble and check an OINC Instance read from an instance file (shapes I devices x J edges, SI units > 0;
    the traces both given, (T, I), or both left out)."""
    num_edges = check_array("cpu_hz", fields["cpu_hz"], (None,), positive=True).shape[0]
    num_devices = check_array("slo_s", fields["slo_s"], (None,), positive=True).shape[0]
    if num_edges < 1 or num_devices < 1:
        raise ValueError(f"fields cpu_hz and slo_s have {num_edges} edges and {num_devices} devices: "
                         "expected >= 1 each")
    check_array("bandwidth_hz", fields["bandwidth_hz"], (num_edges,), positive=True)
    check_array("tx_power_w", fields["tx_power_w"], (num_devices,), positive=True)
    check_array("distance_km", fields["distance_km"], (num_devices, num_edges), positive=True)
    check_array("full_rate_bps", fields["full_rate_bps"], (num_devices, num_edges), positive=True)
    data, cycles = fields.get("trace_data_bits"), fields.get("trace_cycles")
    if (data is None) != (cycles is None):
        raise ValueError("fields trace_data_bits and trace_cycles: expected both (a trace) or neither (synthetic)")
    if data is not None:
        horizon = check_array("trace_data_bits", data, (None, num_devices), positive=True).shape[0]
        if horizon < 1:
            raise ValueError("field trace_data_bits has 0 rows: expected (T, I) with T >= 1 slots")
        check_array("trace_cycles", cycles, (horizon, num_devices), positive=True)
    return Instance(**fields)


#: How an OINC Instance is written to and read from an instance file (``envs.common.instance_io``).
INSTANCE_SCHEMA = InstanceSchema(cls=Instance, build=_instance_from_file)
