"""The UEC model, once: profit (eq. 1), budgets, capacity sums, reserved-task feasibility and EDF.

numpy, no gymnasium import. The per-pair and per-slot formulas of reserved-task feasibility
(``pair_reach``, ``pair_reduction``, ``lindley_trajectory``, with ``BLOCK_TOL`` and ``UNBOUNDED``) are
numba-compiled in ``envs.uec.kernels`` and re-exported here: UEC-v0's vector-env kernels in that file
call the very same code (and numba's cache, which only watches the compiled function's own file, stays
consistent). The env, its vector env, RESCUE's LP and value functions, the baselines and the tests all
call these functions; nothing else recomputes a profit.

Reserved-task feasibility. Reserved tasks are served by EDF in the slots where their server runs no
retraining task. Their demands are divisible and their windows are intervals, so (Hall's theorem on a
convex bipartite graph) they can all be met on a capacity profile iff for every interval [a, b] whose
ends are a release and a deadline, the demand of the tasks whose windows lie inside [a, b] is at most
the capacity left in [a, b]; and EDF meets them whenever anything can. Each such interval is a "pair"
with a *slack* (capacity left minus demand). Blocking a server for a retraining task removes capacity
from the pairs it overlaps, so a block is feasible iff no pair's slack goes negative; the longest
feasible block from slot t is therefore one binary search per pair on the capacity prefix sums.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from envs.uec.kernels import (  # noqa: F401  (re-exported: the compiled formulas of this model)
    BLOCK_TOL,
    UNBOUNDED,
    lindley_trajectory,
    pair_reach,
    pair_reduction,
)
from envs.uec.kernels import block_slack_reductions as _block_slack_reduction
from envs.uec.kernels import max_feasible_blocks as _max_feasible_block


class Instance(Protocol):
    """The fields of a UEC instance the model reads (``envs.uec.types.Instance`` provides them).

    Declared here, not imported, so the model depends on no container: types.py builds on dynamics.py,
    never the other way round.
    """

    capacity: np.ndarray  # (K, T) tera-MAC per slot
    base_capacity: np.ndarray  # (K,)
    weight: np.ndarray  # (J,)
    alpha0: np.ndarray  # (J,)
    alpha_max: float
    decay: np.ndarray  # (J,)
    perf_scale: np.ndarray  # (J,)
    perf_rate: np.ndarray  # (J,)
    sla: np.ndarray  # (J,)
    tx_delay_s: np.ndarray  # (J, K)
    arrival_prob: np.ndarray  # (T, J)
    duration_pmf: np.ndarray  # (L, D)
    slot_seconds: float
    reserved: Any  # envs.uec.types.ReservedTasks

    @property
    def horizon(self) -> int: ...
    @property
    def num_servers(self) -> int: ...
    @property
    def budget(self) -> np.ndarray: ...
    @property
    def accuracy_gap(self) -> np.ndarray: ...
    @property
    def cumulative_capacity(self) -> np.ndarray: ...

#: Relative tolerance for demand/capacity comparisons (floating-point sums of capacities).
FEASIBILITY_TOL = 1e-9
# BLOCK_TOL (absolute tolerance, tera-MAC, when a block may use exactly a pair's slack) and UNBOUNDED
# ("no limit" for the longest feasible block) are defined with the compiled formulas, in envs.uec.kernels.


# --- profit model ------------------------------------------------------------------------------

def resource_to_performance(work: np.ndarray | float, scale: np.ndarray | float, rate: np.ndarray | float):
    """F_j[U] = A_j·log(1 + B_j·U): accuracy gain from ``work`` tera-MAC of retraining (concave)."""
    return scale * np.log1p(rate * work)


def accuracy_gap(alpha0: np.ndarray, alpha_max: float, decay: np.ndarray, horizon: int) -> np.ndarray:
    """(J, T) a_j(t) = 1 - α_j(0)·exp(-γ_j·t_paper)/α_max, with t_paper = t + 1 (paper slots start at 1)."""
    t_paper = np.arange(1, horizon + 1)
    return 1.0 - alpha0[:, None] * np.exp(-decay[:, None] * t_paper[None, :]) / alpha_max


def remaining_budget(sla: np.ndarray, tx_delay_s: np.ndarray, slot_seconds: float) -> np.ndarray:
    """(J, K) d̄_jk = d_max_j - ⌈d_jk / slot⌉ slots left for retraining after transmission."""
    return sla[:, None].astype(np.int64) - np.ceil(tx_delay_s / slot_seconds - 1e-12).astype(np.int64)


def cumulative_capacity(capacity: np.ndarray, base_capacity: np.ndarray, max_duration: int) -> np.ndarray:
    """(K, T + D + 1) prefix sums C[k, x] = Σ_{τ<x} c_k(τ), extended past T with the base capacity."""
    extended = np.concatenate([capacity, np.repeat(base_capacity[:, None], max_duration, axis=1)], axis=1)
    cum = np.zeros((capacity.shape[0], extended.shape[1] + 1))
    np.cumsum(extended, axis=1, out=cum[:, 1:])
    return cum


def support_max(duration_pmf: np.ndarray) -> np.ndarray:
    """(L,) the largest duration with positive probability, per profile."""
    positive = duration_pmf > 0
    return duration_pmf.shape[1] - np.argmax(positive[:, ::-1], axis=1)


def duration_survival(duration_pmf: np.ndarray) -> np.ndarray:
    """(L, D) Pr(d_l ≥ s) for s = 1..D."""
    from envs.common.durations import survival

    return survival(duration_pmf)


def expected_profit_table(inst: Instance) -> np.ndarray:
    """(J, K, L, T) R_jkl(t) = w_j·a_j(t)·Σ_{d=1}^{d̄_jk} Pr(d_l = d)·F_j[U_kl(t, d)] (eq. 1), vectorised."""
    budget = inst.budget
    d_max = int(min(inst.duration_pmf.shape[1], max(1, budget.max())))
    horizon = inst.horizon
    cum = inst.cumulative_capacity
    starts = np.arange(horizon)
    ends = starts[:, None] + np.arange(1, d_max + 1)[None, :]
    work = cum[:, ends] - cum[:, starts][:, :, None]  # (K, T, d)
    gain = resource_to_performance(
        work[None], inst.perf_scale[:, None, None, None], inst.perf_rate[:, None, None, None]
    )  # (J, K, T, d)
    within_budget = np.arange(1, d_max + 1)[None, None, :] <= budget[:, :, None]  # (J, K, d)
    gain = gain * within_budget[:, :, None, :]
    expected_gain = np.einsum("jktd,ld->jklt", gain, inst.duration_pmf[:, :d_max], optimize=True)
    return (inst.weight[:, None] * inst.accuracy_gap)[:, None, None, :] * expected_gain


def realised_profit(inst: Instance, device: int, server: int, start: int, duration: int) -> float:
    """Profit of a task of ``device`` run on ``server`` from ``start`` for ``duration`` slots:
    w_j·a_j(t)·F_j[U_k(t, d)] if d ≤ d̄_jk, else 0 (the task still occupies the server)."""
    if duration > inst.budget[device, server]:
        return 0.0
    cum = inst.cumulative_capacity
    work = cum[server, start + duration] - cum[server, start]
    gain = resource_to_performance(work, inst.perf_scale[device], inst.perf_rate[device])
    return float(inst.weight[device] * inst.accuracy_gap[device, start] * gain)


# --- reserved tasks: Hall interval constraints -------------------------------------------------

@dataclass(frozen=True)
class HallPairs:
    """Interval constraints of the reserved tasks of one server.

    Attributes:
        start, end: (P,) interval [start, end] (inclusive slots) of each constraint.
        slack: (P,) capacity in the interval minus the demand of the tasks inside it, with no retraining.
    """

    start: np.ndarray
    end: np.ndarray
    slack: np.ndarray


def interval_slacks(capacity_profile: np.ndarray, start: np.ndarray, end: np.ndarray, demand: np.ndarray) -> HallPairs:
    """Hall's interval condition for one server: the pairs (a = a release, b = a deadline) with their
    slack = capacity([a, b]) - demand of the tasks whose window lies inside [a, b]. The reserved tasks
    are feasible on this profile iff every slack is ≥ 0.

    Only non-redundant pairs are kept: those whose inside tasks start at a, end at b and have windows
    that overlap into one block. Any other pair splits into sub-intervals (or shrinks to a tighter one)
    whose constraints imply it, since a block removes at most the capacity of the parts it overlaps.
    """
    positive = demand > 0
    start, end, demand = start[positive], end[positive], demand[positive]
    if start.size == 0:
        return HallPairs(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0))
    cum = np.concatenate([[0.0], np.cumsum(capacity_profile)])
    kept_a, kept_b, kept_slack = [], [], []
    for a in np.unique(start):
        for b in np.unique(end[end >= a]):
            inside = (start >= a) & (end <= b)
            if not inside.any() or start[inside].min() != a or end[inside].max() != b:
                continue
            order = np.argsort(start[inside], kind="stable")
            starts, ends = start[inside][order], end[inside][order]
            if np.any(np.maximum.accumulate(ends)[:-1] < starts[1:]):
                continue  # the inside windows fall apart into independent blocks
            kept_a.append(a)
            kept_b.append(b)
            kept_slack.append(cum[b + 1] - cum[a] - demand[inside].sum())
    return HallPairs(np.array(kept_a, np.int64), np.array(kept_b, np.int64), np.array(kept_slack))


def hall_pairs(inst: Instance) -> list[HallPairs]:
    """The interval constraints of every server of ``inst``."""
    res = inst.reserved
    return [
        interval_slacks(inst.capacity[k], res.start[res.server == k], res.end[res.server == k], res.demand[res.server == k])
        for k in range(inst.num_servers)
    ]


def max_feasible_block(pairs: HallPairs, slack: np.ndarray, cum: np.ndarray, times: np.ndarray) -> np.ndarray:
    """(n,) for each start slot in ``times``, the longest block [t, t + B) one server can give a
    retraining task while all its reserved tasks stay satisfiable (``UNBOUNDED`` where nothing binds).

    ``slack`` is the server's current pair slack (after earlier blocks, all ending before ``times``),
    ``cum`` its capacity prefix sums. For a pair [a, b] with slack s, the block may take at most s
    from [max(a, t), b]: it may reach the last x with C[x] ≤ C[max(a, t)] + s, so B = x - t
    (:func:`pair_reach`; the minimum over the pairs).
    """
    times = np.asarray(times, np.int64)
    if pairs.start.size == 0:
        return np.full(times.shape, UNBOUNDED, dtype=np.int64)
    return _max_feasible_block(np.asarray(pairs.start, np.int64), np.asarray(pairs.end, np.int64),
                               np.asarray(slack, np.float64), np.asarray(cum, np.float64), times.reshape(-1)
                               ).reshape(times.shape)


def block_slack_reduction(pairs: HallPairs, cum: np.ndarray, start: int, duration: int) -> np.ndarray:
    """(P,) capacity a block [start, start + duration) on a server removes from each of its pairs
    (:func:`pair_reduction`)."""
    return _block_slack_reduction(np.asarray(pairs.start, np.int64), np.asarray(pairs.end, np.int64),
                                  np.asarray(cum, np.float64), int(start), int(start) + int(duration))


def backlog_trajectory(initial: float, releases: np.ndarray, available: np.ndarray) -> np.ndarray:
    """(n + 1,) reserved work released but unserved at the start of each slot of a span, given the
    backlog ``initial`` at its start, the demand ``releases`` and the capacity ``available`` to reserved
    tasks in each of its n slots (0 where a retraining task holds the server).

    EDF is work-conserving, so the aggregate backlog follows Lindley's recursion
    Q(τ+1) = max(0, Q(τ) + released(τ) - available(τ)), i.e. with W the running sum of the net input,
    Q(τ) = max(initial + W(τ), W(τ) - min_{s ≤ τ} W(s)) (:func:`lindley_trajectory`).
    """
    net = np.asarray(releases - available, np.float64).reshape(-1)
    out = np.empty(net.size + 1)
    lindley_trajectory(float(initial), net, out)
    return out


# --- reserved tasks: EDF service ---------------------------------------------------------------

def edf_service(available: np.ndarray, start: np.ndarray, end: np.ndarray, demand: np.ndarray) -> np.ndarray:
    """Serve reserved tasks of one server by preemptive, divisible EDF on ``available`` capacity per slot.

    Returns the demand served to each task within its window (a task is met iff served ≥ demand).
    EDF gives each slot's capacity to the released unfinished task with the earliest deadline, the rest
    to the next. Computed task by task in deadline order, each taking the earliest capacity its window
    still has: a task is never delayed by later-deadline tasks, so this allocates exactly as EDF does
    (tests/uec check it against the slot-by-slot rule).
    """
    residual = np.asarray(available, dtype=float).copy()
    served = np.zeros(demand.shape[0])
    for i in np.lexsort((start, end)):  # by deadline, then release
        window = residual[start[i] : end[i] + 1]
        filled = np.cumsum(window)
        if filled.size == 0 or demand[i] <= 0:
            continue
        if filled[-1] <= demand[i]:  # the whole window is not enough (or just enough)
            served[i] = filled[-1]
            window[:] = 0.0
            continue
        last = int(np.searchsorted(filled, demand[i]))  # first slot where the demand is reached
        window[last] = filled[last] - demand[i]
        window[:last] = 0.0
        served[i] = demand[i]
    return served


# --- validation --------------------------------------------------------------------------------

def _check_shape(name: str, array: np.ndarray, shape: tuple[int, ...]) -> None:
    if np.shape(array) != shape:
        raise ValueError(f"{name} has shape {np.shape(array)}, expected {shape}")


def validate_instance(inst: Instance) -> None:
    """Raise ValueError naming the field if ``inst`` is inconsistent or its reserved tasks infeasible."""
    if np.ndim(inst.capacity) != 2 or inst.capacity.shape[0] < 1:
        raise ValueError(
            f"capacity must be a (K, T) array with at least one server (K >= 1), got shape {np.shape(inst.capacity)}"
        )
    num_servers, horizon = inst.capacity.shape
    num_devices = np.shape(inst.weight)[0] if np.ndim(inst.weight) == 1 else 0
    if num_devices < 1:
        raise ValueError(f"weight must be a (J,) array with J >= 1 devices, got shape {np.shape(inst.weight)}")
    if horizon < 1:
        raise ValueError(f"horizon T must be >= 1 slot, got {horizon}")
    _check_shape("base_capacity", inst.base_capacity, (num_servers,))
    for name in ("alpha0", "decay", "perf_scale", "perf_rate", "sla"):
        _check_shape(name, getattr(inst, name), (num_devices,))
    _check_shape("tx_delay_s", inst.tx_delay_s, (num_devices, num_servers))
    _check_shape("arrival_prob", inst.arrival_prob, (horizon, num_devices))
    if np.ndim(inst.duration_pmf) != 2 or inst.duration_pmf.shape[0] < 1:
        raise ValueError(f"duration_pmf must be an (L, D) array with L >= 1, got shape {np.shape(inst.duration_pmf)}")
    if not (np.all(inst.capacity > 0) and np.all(inst.base_capacity > 0)):
        raise ValueError("capacity and base_capacity must be > 0 tera-MAC per slot")
    if np.any(inst.weight < 0) or np.any(inst.perf_scale < 0) or np.any(inst.perf_rate < 0):
        raise ValueError("weight, perf_scale and perf_rate must be >= 0")
    if not 0 < inst.alpha_max <= 1 or np.any(inst.alpha0 < 0) or np.any(inst.alpha0 > inst.alpha_max):
        raise ValueError(f"accuracies must satisfy 0 <= alpha0 <= alpha_max <= 1 (alpha_max={inst.alpha_max})")
    if np.any(inst.decay < 0) or np.any(inst.tx_delay_s < 0) or inst.slot_seconds <= 0:
        raise ValueError("decay, tx_delay_s must be >= 0 and slot_seconds > 0")
    pmf = inst.duration_pmf
    if np.any(pmf < 0) or not np.allclose(pmf.sum(axis=1), 1.0, atol=1e-9):
        raise ValueError("each row of duration_pmf must be a probability distribution over durations 1..D")
    means = pmf @ np.arange(1, pmf.shape[1] + 1)
    if np.any(np.diff(means) <= 0):
        raise ValueError(f"profile mean durations must be strictly increasing (RESCUE's ordering), got {means}")
    p = inst.arrival_prob
    if np.any(p < 0) or np.any(p.sum(axis=1) > 1 + 1e-9):
        raise ValueError("arrival_prob must be >= 0 with sum_j p_j(t) <= 1 in every slot (at most one arrival)")
    res = inst.reserved
    n = len(res)
    for name in ("start", "end", "demand"):
        _check_shape(f"reserved.{name}", getattr(res, name), (n,))
    if n:
        if res.server.min() < 0 or res.server.max() >= num_servers:
            raise ValueError(f"reserved.server must lie in [0, {num_servers - 1}]")
        if res.start.min() < 0 or res.end.max() >= horizon or np.any(res.start > res.end):
            raise ValueError(f"reserved windows must satisfy 0 <= start <= end <= T-1 = {horizon - 1}")
        if np.any(res.demand < 0):
            raise ValueError("reserved.demand must be >= 0")
        for k in range(num_servers):
            on_k = res.server == k
            slack = interval_slacks(inst.capacity[k], res.start[on_k], res.end[on_k], res.demand[on_k]).slack
            if slack.size and slack.min() < -FEASIBILITY_TOL * max(1.0, inst.capacity[k].sum()):
                raise ValueError(
                    f"reserved tasks on server {k} are not EDF-feasible even with no retraining "
                    f"(worst interval short by {-slack.min():.4g} tera-MAC)"
                )


def ceil_slots(seconds: float, slot_seconds: float) -> int:
    """⌈seconds / slot⌉ as an int (helper for hand computations in tests and docs)."""
    return math.ceil(seconds / slot_seconds - 1e-12)
