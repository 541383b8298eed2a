"""The UEC model, once: profit (eq. 1), budgets, capacity sums, reserved-task feasibility and EDF.

Pure numpy, no gymnasium import. The env, RESCUE's LP and value functions, the baselines and the tests
all call these functions; nothing else recomputes a profit.

Reserved-task feasibility. Reserved tasks are served by EDF in the slots where their server runs no
retraining task. Their demands are divisible and their windows are intervals, so (Hall's theorem on a
convex bipartite graph) they can all be met on a capacity profile iff for every interval [a, b] whose
ends are a release and a deadline, the demand of the tasks whose windows lie inside [a, b] is at most
the capacity left in [a, b]; and EDF meets them whenever anything can. Each such interval is a "pair"
with a *slack* (capacity left minus demand). Blocking a server for a retraining task removes capacity
from the pairs it overlaps, so a block is feasible iff no pair's slack goes negative; the longest
feasible block from slot t is therefore one ``searchsorted`` per pair on the capacity prefix sums.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from envs.uec.types import Instance

#: Relative tolerance for demand/capacity comparisons (floating-point sums of capacities).
FEASIBILITY_TOL = 1e-9


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
    """Interval constraints of the reserved tasks, padded to (K, P).

    Attributes:
        start, end: (K, P) interval [start, end] (inclusive slots) of each constraint.
        slack: (K, P) capacity in the interval minus the demand of the tasks inside it, before any
            retraining block; padding entries have +inf slack.
        flat_cum: (K·W,) capacity prefix sums of all servers laid end to end with an offset that keeps
            them increasing, so one ``searchsorted`` serves every server.
        width: W, the length of one server's prefix-sum row.
        offset: (K, 1) the value offset of each server's row in ``flat_cum``.
    """

    start: np.ndarray
    end: np.ndarray
    slack: np.ndarray
    flat_cum: np.ndarray
    width: int
    offset: np.ndarray


def interval_slacks(capacity_profile: np.ndarray, start: np.ndarray, end: np.ndarray, demand: np.ndarray):
    """Hall's interval condition for one server: for each pair (a = a release, b = a deadline, a ≤ b)
    return (a, b, capacity([a, b]) - demand of tasks with window ⊆ [a, b]); only pairs with demand."""
    if start.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
    releases, deadlines = np.unique(start), np.unique(end)
    a, b = np.meshgrid(releases, deadlines, indexing="ij")
    a, b = a.ravel(), b.ravel()
    keep = a <= b
    a, b = a[keep], b[keep]
    inside = (start[None, :] >= a[:, None]) & (end[None, :] <= b[:, None])
    demand_inside = inside.astype(float) @ demand
    cum = np.concatenate([[0.0], np.cumsum(capacity_profile)])
    slack = cum[b + 1] - cum[a] - demand_inside
    has_demand = demand_inside > 0
    return a[has_demand], b[has_demand], slack[has_demand]


def hall_pairs(inst: Instance) -> HallPairs:
    """Build the per-server interval constraints of ``inst`` (raises if a server is infeasible)."""
    res, num_servers = inst.reserved, inst.num_servers
    per_server = []
    for k in range(num_servers):
        on_k = res.server == k
        per_server.append(interval_slacks(inst.capacity[k], res.start[on_k], res.end[on_k], res.demand[on_k]))
    width_pairs = max(1, max(p[0].size for p in per_server))
    start = np.zeros((num_servers, width_pairs), np.int64)
    end = np.full((num_servers, width_pairs), -1, np.int64)
    slack = np.full((num_servers, width_pairs), np.inf)
    for k, (a, b, s) in enumerate(per_server):
        start[k, : a.size], end[k, : a.size], slack[k, : a.size] = a, b, s
    cum = inst.cumulative_capacity
    width = cum.shape[1]
    offset = (np.arange(num_servers) * (cum[:, -1].max() + 1.0))[:, None]
    return HallPairs(start=start, end=end, slack=slack, flat_cum=(cum + offset).ravel(), width=width, offset=offset)


def max_feasible_block(pairs: HallPairs, slack: np.ndarray, cum: np.ndarray, time: int) -> np.ndarray:
    """(K,) the longest block [time, time + B) each server can give a retraining task while every
    reserved task stays satisfiable (``np.iinfo(int64).max`` where nothing binds). Assumes the servers
    run nothing from ``time`` on; ``slack`` is the current (K, P) slack after earlier blocks."""
    first = np.maximum(pairs.start, time)  # blocked capacity counts from max(a, t)
    room = cum[np.arange(cum.shape[0])[:, None], first] + slack  # prefix value the block may reach
    binding = (pairs.end >= time) & (room < cum[np.arange(cum.shape[0])[:, None], np.maximum(pairs.end + 1, first)])
    if not binding.any():
        return np.full(cum.shape[0], np.iinfo(np.int64).max, dtype=np.int64)
    server_of = np.broadcast_to(np.arange(cum.shape[0])[:, None], room.shape)
    flat = np.searchsorted(pairs.flat_cum, (room + pairs.offset)[binding] * (1 + 1e-15) + 1e-12, side="right") - 1
    reach = flat - server_of[binding] * pairs.width  # last prefix index x with C[x] ≤ room → block [t, x)
    limit = np.full(room.shape, np.iinfo(np.int64).max, dtype=np.int64)
    limit[binding] = reach - time
    return limit.min(axis=1)


def block_slack_reduction(pairs: HallPairs, cum: np.ndarray, server: int, start: int, duration: int) -> np.ndarray:
    """(P,) capacity a block [start, start + duration) on ``server`` removes from each of its pairs."""
    lo = np.maximum(pairs.start[server], start)
    hi = np.minimum(pairs.end[server] + 1, start + duration)
    return np.where(hi > lo, cum[server, np.maximum(hi, lo)] - cum[server, lo], 0.0)


# --- reserved tasks: EDF service ---------------------------------------------------------------

def edf_service(available: np.ndarray, start: np.ndarray, end: np.ndarray, demand: np.ndarray) -> np.ndarray:
    """Serve reserved tasks of one server by preemptive, divisible EDF on ``available`` capacity per slot.

    Returns the demand served to each task within its window (a task is met iff served ≥ demand).
    A slot's capacity is split: the earliest-deadline released task first, the rest to the next.
    """
    order = np.lexsort((start, end))
    remaining = demand[order].astype(float).copy()
    s, e = start[order], end[order]
    served = np.zeros_like(remaining)
    if remaining.size == 0:
        return served
    for t in range(int(s.min()), int(e.max()) + 1):
        cap = float(available[t])
        if cap <= 0:
            continue
        for i in range(remaining.size):  # tasks sorted by deadline
            if s[i] <= t <= e[i] and remaining[i] > 0:
                give = min(cap, remaining[i])
                remaining[i] -= give
                served[i] += give
                cap -= give
                if cap <= 0:
                    break
    out = np.empty_like(served)
    out[order] = served
    return out


def advance_backlog(
    backlog: np.ndarray,
    releases: np.ndarray,
    capacity: np.ndarray,
    busy_until: np.ndarray,
    t0: int,
    t1: int,
) -> np.ndarray:
    """(K,) reserved work released and unserved at ``t1`` given the backlog at ``t0``.

    EDF is work-conserving, so the aggregate backlog follows Lindley's recursion
    Q(τ+1) = max(0, Q(τ) + released(τ) - available(τ)); over [t0, t1) in closed form
    Q(t1) = max(0, Q(t0) + Σ net, max_s Σ_{τ ≥ s} net). Servers are blocked while τ < busy_until.
    """
    if t1 <= t0:
        return backlog
    span = slice(t0, t1)
    free = np.arange(t0, t1)[None, :] >= busy_until[:, None]
    net = releases[:, span] - capacity[:, span] * free
    suffix = np.cumsum(net[:, ::-1], axis=1)[:, ::-1]
    return np.maximum(np.maximum(suffix.max(axis=1), backlog + suffix[:, 0]), 0.0)


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
            _, _, slack = interval_slacks(inst.capacity[k], res.start[on_k], res.end[on_k], res.demand[on_k])
            if slack.size and slack.min() < -FEASIBILITY_TOL * max(1.0, inst.capacity[k].sum()):
                raise ValueError(
                    f"reserved tasks on server {k} are not EDF-feasible even with no retraining "
                    f"(worst interval short by {-slack.min():.4g} tera-MAC)"
                )


def ceil_slots(seconds: float, slot_seconds: float) -> int:
    """⌈seconds / slot⌉ as an int (helper for hand computations in tests and docs)."""
    return math.ceil(seconds / slot_seconds - 1e-12)
