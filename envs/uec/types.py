"""Typed containers of UEC-v0: the Instance a generator draws and the State an episode changes.

Time is 0-based inside the code: slot ``t`` here is the paper's slot ``t + 1``; slot ``T`` is the first
slot after the horizon. Durations are in slots, capacities and demands in tera-MAC.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from envs.common.instance_io import InstanceSchema
from envs.uec import dynamics


@dataclass(frozen=True, eq=False)
class ReservedTasks:
    """High-priority reserved tasks: task i needs ``demand[i]`` on ``server[i]`` within slots
    ``start[i]..end[i]`` (inclusive), served fractionally and non-contiguously."""

    server: np.ndarray
    start: np.ndarray
    end: np.ndarray
    demand: np.ndarray

    @staticmethod
    def empty() -> ReservedTasks:
        return ReservedTasks(
            server=np.zeros(0, dtype=np.int64),
            start=np.zeros(0, dtype=np.int64),
            end=np.zeros(0, dtype=np.int64),
            demand=np.zeros(0),
        )

    def __len__(self) -> int:
        return int(self.server.size)


@dataclass(frozen=True, eq=False)
class Instance:
    """Everything fixed across the episodes of one UEC scenario draw (RESCUE's Section III).

    Attributes (K servers, J devices = task types, L service profiles, T slots, D longest duration):
        capacity: (K, T) c_k(t), tera-MAC per slot.
        base_capacity: (K,) capacity of slots past the horizon (a task may run past T).
        weight: (J,) profit weight w_j.
        alpha0: (J,) accuracy α_j(0); ``alpha_max`` the attainable accuracy.
        decay: (J,) accuracy decay rate γ_j per slot.
        perf_scale, perf_rate: (J,) resource-to-performance curve F_j[U] = A_j·log(1 + B_j·U).
        sla: (J,) SLA deadline d_max_j in slots.
        tx_delay_s: (J, K) transmission delay (upload + download) in seconds.
        duration_pmf: (L, D) Pr(d_l = d) for d = 1..D; profile means strictly increasing.
        arrival_prob: (T, J) p_j(t), with Σ_j p_j(t) ≤ 1 (at most one arrival per slot).
        reserved: the reserved tasks, EDF-feasible on every server (checked here).
        slot_seconds: slot length in seconds (turns ``tx_delay_s`` into slots).
        duration_family: label of the pmf family ("normal", ..., or "custom").
        name: free text for reports.
    """

    capacity: np.ndarray
    base_capacity: np.ndarray
    weight: np.ndarray
    alpha0: np.ndarray
    alpha_max: float
    decay: np.ndarray
    perf_scale: np.ndarray
    perf_rate: np.ndarray
    sla: np.ndarray
    tx_delay_s: np.ndarray
    duration_pmf: np.ndarray
    arrival_prob: np.ndarray
    reserved: ReservedTasks = field(default_factory=ReservedTasks.empty)
    slot_seconds: float = 60.0
    duration_family: str = "custom"
    name: str = ""

    def __post_init__(self) -> None:
        dynamics.validate_instance(self)

    # --- sizes -------------------------------------------------------------------------------
    @property
    def num_servers(self) -> int:
        return int(self.capacity.shape[0])

    @property
    def horizon(self) -> int:
        return int(self.capacity.shape[1])

    @property
    def num_devices(self) -> int:
        return int(self.weight.shape[0])

    @property
    def num_profiles(self) -> int:
        return int(self.duration_pmf.shape[0])

    # --- quantities derived once per instance (the single sources used by env, LP, DP, baselines) ---
    @cached_property
    def budget(self) -> np.ndarray:
        """(J, K) remaining retraining budget d̄_jk in slots (may be ≤ 0: no profit possible)."""
        return dynamics.remaining_budget(self.sla, self.tx_delay_s, self.slot_seconds)

    @cached_property
    def max_duration(self) -> np.ndarray:
        """(L,) longest possible duration of each profile (the block length the feasibility mask checks)."""
        return dynamics.support_max(self.duration_pmf)

    @cached_property
    def mean_duration(self) -> np.ndarray:
        """(L,) E[d_l]."""
        return self.duration_pmf @ np.arange(1, self.duration_pmf.shape[1] + 1)

    @cached_property
    def duration_survival(self) -> np.ndarray:
        """(L, D) Pr(d_l ≥ s) for s = 1..D."""
        return dynamics.duration_survival(self.duration_pmf)

    @cached_property
    def cumulative_capacity(self) -> np.ndarray:
        """(K, T + D + 1) prefix sums of capacity, extended past T with the base capacity."""
        return dynamics.cumulative_capacity(self.capacity, self.base_capacity, self.duration_pmf.shape[1])

    @cached_property
    def accuracy_gap(self) -> np.ndarray:
        """(J, T) a_j(t) = 1 - α_j(t)/α_max."""
        return dynamics.accuracy_gap(self.alpha0, self.alpha_max, self.decay, self.horizon)

    @cached_property
    def expected_profit(self) -> np.ndarray:
        """(J, K, L, T) R_jkl(t) of eq. (1): the expected profit of assigning j to (k, l) at t."""
        return dynamics.expected_profit_table(self)

    @cached_property
    def feasibility_pairs(self) -> list[dynamics.HallPairs]:
        """Interval (Hall) constraints of the reserved tasks of each server, for the feasibility mask."""
        return dynamics.hall_pairs(self)

    @cached_property
    def reserved_releases(self) -> np.ndarray:
        """(K, T) reserved demand released at each slot (a task's whole demand at its window start)."""
        releases = np.zeros((self.num_servers, self.horizon))
        np.add.at(releases, (self.reserved.server, self.reserved.start), self.reserved.demand)
        return releases

    @cached_property
    def free_block_limits(self) -> np.ndarray:
        """(T, K) longest feasible retraining block from each slot on a server with no retraining yet."""
        times = np.arange(self.horizon)
        cum = self.cumulative_capacity
        return np.stack(
            [
                dynamics.max_feasible_block(pairs, pairs.slack, cum[k], times)
                for k, pairs in enumerate(self.feasibility_pairs)
            ],
            axis=1,
        )

    @cached_property
    def free_backlog(self) -> np.ndarray:
        """(T + 1, K) reserved backlog at the start of each slot when no retraining ever runs."""
        return np.stack(
            [
                dynamics.backlog_trajectory(0.0, self.reserved_releases[k], self.capacity[k])
                for k in range(self.num_servers)
            ],
            axis=1,
        )

    def describe(self) -> str:
        """One line naming the sizes, used in error messages and reports."""
        return (
            f"UEC instance {self.name or '(unnamed)'}: K={self.num_servers} servers, J={self.num_devices} "
            f"devices, L={self.num_profiles} profiles, T={self.horizon} slots, "
            f"{len(self.reserved)} reserved tasks, durations={self.duration_family}"
        )


@dataclass
class State:
    """What changes during an episode (owned by the env; copied into ``info`` where useful).

    Attributes:
        decision: index of the pending arrival in the episode's arrival list.
        time: current slot (the pending arrival's slot).
        busy_until: (K,) first slot at which each server is free of retraining.
        task_start: (K,) slot at which the running retraining task started (valid while busy).
        pair_slack: per server, the remaining slack of each reserved-task interval constraint.
        block_limits: (N, K) longest feasible block at each of the episode's N arrivals, given the blocks so far.
        backlog: (T + 1, K) reserved backlog at the start of each slot, given the blocks so far.
        profit, accepted, rejected, invalid_actions, preempted: running totals.
        retraining_work: capacity (tera-MAC, within the horizon) given to retraining so far.
        blocks: (server, start, duration) of every accepted task, for reports and audits.
    """

    decision: int
    time: int
    busy_until: np.ndarray
    task_start: np.ndarray
    pair_slack: list[np.ndarray]
    block_limits: np.ndarray
    backlog: np.ndarray
    profit: float = 0.0
    accepted: int = 0
    rejected: int = 0
    invalid_actions: int = 0
    preempted: int = 0
    retraining_work: float = 0.0
    blocks: list[tuple[int, int, int]] = field(default_factory=list)


def _instance_from_file(fields: dict) -> Instance:
    """Assemble a UEC Instance read from an instance file (``Instance.__post_init__`` validates it, as for a
    generated one); the file-only extra: SLAs must be >= 0 slots."""
    sla = fields.get("sla")
    if isinstance(sla, np.ndarray) and sla.size and sla.min() < 0:
        raise ValueError(f"field sla has a negative entry ({int(sla.min())}): expected SLA deadlines >= 0 slots")
    return Instance(**fields)


#: How a UEC Instance is written to and read from an instance file (``envs.common.instance_io``).
INSTANCE_SCHEMA = InstanceSchema(
    cls=Instance,
    build=_instance_from_file,
    dtypes={"sla": "int64", "reserved.server": "int64", "reserved.start": "int64", "reserved.end": "int64"},
    nested={"reserved": ReservedTasks},
)
