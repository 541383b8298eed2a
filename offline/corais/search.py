"""Ours (not from the CoRaiS paper): an anytime iterated local search (ILS) for the CoRaiS dispatch.

``iterated_local_search(instance, time_limit=..., max_iterations=..., seed=...)`` starts from
``offline.corais.greedy.list_greedy`` and alternates

1. a best-improvement descent on the lexicographic objective (R, sum_j T_j^2): R = max_j T_j is the cost,
   the sum of squares breaks R's plateaus (it rewards draining the most loaded edges even when another
   edge is as critical). The neighbourhood is every *move* (one request to any other edge: all Z x Q) and
   every *swap* of a request on one of the ``swap_edges`` most loaded edges with a request on any other
   edge (all edge pairs when ``swap_edges >= Q``). A descent step runs in numba-compiled code from
   per-edge aggregates (compute sums split local / transferred-in, the two largest input and result
   transfers, so a request can be taken out in O(1)); every T_j comes from
   ``envs.corais.dynamics.edge_time_scalar``, the cost model's formula for one edge (the same float as
   ``edge_times_from_aggregates``; tested), and neighbours that cannot beat the least R' seen are skipped.
   The steps are those of the numpy implementation it replaced, bit for bit (checked on 128 descents
   when it was replaced; ``tests/corais/test_corais_ladder.py`` checks each step against brute force), and
   about 7-9x faster at (20, 10, 100).
2. a random kick: ``kick_size`` requests, drawn uniformly, each moved to a uniformly drawn other edge
   (with ``kick_probs``: drawn from a learned dispatcher's probabilities, see ``iterated_local_search``).
   The new local optimum replaces the current one when its R is at most ``(1 + accept_worse)`` x the
   current R; after ``restart_after`` kicks without a new best, the search restarts from the best.

It stops at ``time_limit`` seconds (wall clock, checked every ``_CHUNK`` descent steps) or after
``max_iterations`` kicks, whichever comes first; with ``time_limit=None`` the result is a deterministic
function of (instance, seed, max_iterations). The best dispatch found is returned, never worse than the
list-greedy start; its cost is recomputed with ``envs.corais.dynamics.dispatch_cost``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numba
import numpy as np

from envs.corais.dynamics import dispatch_cost, edge_time_scalar
from envs.corais.types import Instance
from offline.corais.greedy import list_greedy

__all__ = ["DEFAULT_SEARCH", "SearchResult", "iterated_local_search", "local_descent"]

#: Default search parameters (tuned values live in offline/corais/tuned.yaml).
DEFAULT_SEARCH: dict[str, float | int] = {"kick_size": 4, "accept_worse": 0.0, "restart_after": 50,
                                          "swap_edges": 3}
#: Relative tolerance of a strict improvement.
_RTOL = 1e-12


@dataclass
class SearchResult:
    """Best dispatch found, its cost R, the list-greedy start's cost and the work done."""

    action: np.ndarray
    cost: float
    start_cost: float
    iterations: int
    descent_steps: int
    seconds: float


class _Problem:
    """The per-instance arrays the compiled kernels read, computed once per dispatch."""

    def __init__(self, instance: Instance) -> None:
        tab = instance.tables
        z, q = tab.cmp.shape
        is_local = tab.src[:, None] == np.arange(q)[None, :]
        self.cmp_local = np.ascontiguousarray(np.where(is_local, tab.cmp, 0.0), dtype=np.float64)
        self.cmp_in = np.ascontiguousarray(np.where(is_local, 0.0, tab.cmp), dtype=np.float64)
        self.trn = np.ascontiguousarray(tab.trn, dtype=np.float64)
        self.res = np.ascontiguousarray(tab.res, dtype=np.float64)
        self.workload = np.ascontiguousarray(tab.workload, dtype=np.float64)
        self.z, self.q = z, q

    def arrays(self) -> tuple[np.ndarray, ...]:
        return self.cmp_local, self.cmp_in, self.trn, self.res, self.workload


@numba.njit(cache=True)
def _push_top2(value: float, i: int, edge: int, first: np.ndarray, second: np.ndarray, holder: np.ndarray) -> None:
    """Add request ``i``'s ``value`` to ``edge``'s two largest (ties: the earlier request stays first)."""
    if holder[edge] == -1 or value > first[edge]:
        second[edge] = first[edge]
        first[edge] = value
        holder[edge] = i
    elif value > second[edge]:
        second[edge] = value


@numba.njit(cache=True)
def _aggregates(cmp_local: np.ndarray, cmp_in: np.ndarray, trn: np.ndarray, res: np.ndarray, workload: np.ndarray,
                action: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per-edge times T_j and, per request, the time of its edge with it taken out (T_j without i).

    Per edge: compute sums split local / transferred-in, the largest input and result transfers with the
    request holding them and the second largest (so one request can be taken out in O(1)).
    """
    z, q = cmp_local.shape
    local = np.zeros(q)
    inc = np.zeros(q)
    trn1 = np.zeros(q)
    trn2 = np.zeros(q)
    res1 = np.zeros(q)
    res2 = np.zeros(q)
    trn_idx = np.full(q, -1)
    res_idx = np.full(q, -1)
    for i in range(z):
        a = action[i]
        local[a] += cmp_local[i, a]
        inc[a] += cmp_in[i, a]
        _push_top2(trn[i, a], i, a, trn1, trn2, trn_idx)
        _push_top2(res[i, a], i, a, res1, res2, res_idx)
    times = np.empty(q)
    for j in range(q):
        times[j] = edge_time_scalar(workload, j, local[j], inc[j], trn1[j], res1[j])
    local_wo = np.empty(z)
    inc_wo = np.empty(z)
    trn_wo = np.empty(z)
    res_wo = np.empty(z)
    t_wo = np.empty(z)
    for i in range(z):
        a = action[i]
        local_wo[i] = local[a] - cmp_local[i, a]
        inc_wo[i] = inc[a] - cmp_in[i, a]
        trn_wo[i] = trn2[a] if trn_idx[a] == i else trn1[a]
        res_wo[i] = res2[a] if res_idx[a] == i else res1[a]
        t_wo[i] = edge_time_scalar(workload, a, local_wo[i], inc_wo[i], trn_wo[i], res_wo[i])
    return times, t_wo, local, inc, trn1, res1, local_wo, inc_wo, trn_wo, res_wo


@numba.njit(cache=True)
def _best_neighbour(cmp_local: np.ndarray, cmp_in: np.ndarray, trn: np.ndarray, res: np.ndarray,
                    workload: np.ndarray, action: np.ndarray, swap_edges: int,
                    aggregates: tuple[np.ndarray, ...]) -> tuple[float, float, int, int, int]:
    """The lexicographically best (R', delta of sum T^2) move or swap of ``action`` (``aggregates``:
    ``_aggregates`` of it).

    Returns (R', delta, kind, i, x): kind 0 = move request i to edge x, 1 = swap requests i and x,
    -1 = no neighbour. Among the neighbours within a relative 1e-12 of the least R', the least delta wins;
    ties go to the first in (request, edge) order, moves before swaps. A neighbour whose R' already
    exceeds the least R' seen so far (plus the tolerance) is skipped: it cannot be chosen.
    """
    z, q = cmp_local.shape
    times, t_wo, local, inc, trn1, res1, local_wo, inc_wo, trn_wo, res_wo = aggregates
    # the three slowest edges (ties: lower index first): max T over edges other than a and b
    top_idx = np.full(3, -1)
    top_val = np.zeros(3)
    for j in range(q):
        t = times[j]
        for r in range(3):
            if top_idx[r] == -1 or t > top_val[r]:
                for s in range(2, r, -1):
                    top_idx[s] = top_idx[s - 1]
                    top_val[s] = top_val[s - 1]
                top_idx[r] = j
                top_val[r] = t
                break
    # hot edges for swaps: the swap_edges slowest (all when swap_edges >= q)
    hot = np.zeros(q, dtype=np.bool_)
    if swap_edges >= q:
        hot[:] = True
    else:
        order = np.argsort(-times, kind="mergesort")
        for r in range(swap_edges):
            hot[order[r]] = True
    sq = times * times
    # candidates within the tolerance of the least R' seen when found, in (request, edge) order
    size = z * q + z * z
    cand_r = np.empty(size)
    cand_f = np.empty(size)
    cand_i = np.empty(size, dtype=np.int64)
    cand_x = np.empty(size, dtype=np.int64)
    n_moves = 0
    r_min = np.inf
    for i in range(z):
        a = action[i]
        if t_wo[i] > r_min + _RTOL * max(r_min, 1.0):
            continue  # every move of i leaves its edge above the best R' seen
        for b in range(q):
            if b == a:
                continue
            t_b = edge_time_scalar(workload, b, local[b] + cmp_local[i, b], inc[b] + cmp_in[i, b],
                                   max(trn1[b], trn[i, b]), max(res1[b], res[i, b]))
            r = max(max(t_wo[i], t_b), _rest(top_idx, top_val, a, b))
            if r > r_min + _RTOL * max(r_min, 1.0):
                continue
            cand_r[n_moves] = r
            cand_f[n_moves] = ((t_wo[i] * t_wo[i] - sq[a]) + t_b * t_b) - sq[b]
            cand_i[n_moves] = i
            cand_x[n_moves] = b
            n_moves += 1
            if r < r_min:
                r_min = r
    n = n_moves
    for i in range(z):
        a = action[i]
        if not hot[a]:
            continue
        for k in range(z):
            c = action[k]
            if c == a:
                continue
            bound = r_min + _RTOL * max(r_min, 1.0)
            rest = _rest(top_idx, top_val, a, c)
            if rest > bound:
                continue
            t_a = edge_time_scalar(workload, a, local_wo[i] + cmp_local[k, a], inc_wo[i] + cmp_in[k, a],
                                   max(trn_wo[i], trn[k, a]), max(res_wo[i], res[k, a]))
            if t_a > bound:
                continue
            t_c = edge_time_scalar(workload, c, local_wo[k] + cmp_local[i, c], inc_wo[k] + cmp_in[i, c],
                                   max(trn_wo[k], trn[i, c]), max(res_wo[k], res[i, c]))
            r = max(max(t_a, t_c), rest)
            if r > bound:
                continue
            cand_r[n] = r
            cand_f[n] = ((t_a * t_a + t_c * t_c) - sq[a]) - sq[c]
            cand_i[n] = i
            cand_x[n] = k
            n += 1
            if r < r_min:
                r_min = r
    if n == 0:
        return np.inf, 0.0, -1, -1, -1
    bound = r_min + _RTOL * max(r_min, 1.0)
    best_f, kind, bi, bx = np.inf, -1, -1, -1
    for m in range(n):
        if cand_r[m] <= bound and (kind == -1 or cand_f[m] < best_f):
            best_f, kind, bi, bx = cand_f[m], (0 if m < n_moves else 1), cand_i[m], cand_x[m]
    return r_min, best_f, kind, bi, bx


@numba.njit(cache=True)
def _rest(top_idx: np.ndarray, top_val: np.ndarray, a: int, b: int) -> float:
    """max_j T_j over the edges other than a and b (0 when there is none)."""
    for r in range(3):
        j = top_idx[r]
        if j == -1:
            return 0.0
        if j != a and j != b:
            return top_val[r]
    return 0.0


@numba.njit(cache=True)
def _descend_kernel(cmp_local: np.ndarray, cmp_in: np.ndarray, trn: np.ndarray, res: np.ndarray,
                    workload: np.ndarray, action: np.ndarray, swap_edges: int,
                    max_steps: int) -> tuple[int, float, bool]:
    """Best-improvement descent on (R, sum T^2), in place on ``action``; returns (steps, R, converged)."""
    steps = 0
    while steps < max_steps:
        aggregates = _aggregates(cmp_local, cmp_in, trn, res, workload, action)
        times = aggregates[0]
        r = times.max()
        f = 0.0
        for j in range(times.shape[0]):
            f += times[j] * times[j]
        r_new, df, kind, i, x = _best_neighbour(cmp_local, cmp_in, trn, res, workload, action, swap_edges,
                                                aggregates)
        if kind == -1:
            return steps, r, True
        if not (r_new < r - _RTOL * max(r, 1.0) or (r_new <= r + _RTOL * max(r, 1.0) and df < -_RTOL * max(f, 1.0))):
            return steps, r, True
        if kind == 0:
            action[i] = x
        else:
            action[i], action[x] = action[x], action[i]
        steps += 1
    times = _aggregates(cmp_local, cmp_in, trn, res, workload, action)[0]
    return steps, times.max(), False


#: Most descent steps per compiled call between two wall-clock checks (a step takes ~40 us at Z = 100,
#: ~0.4 ms at Z = 400); with a deadline the first chunk is short and the next ones fit the time left.
_CHUNK = 64
_FIRST_CHUNK = 4


def _descend(problem: _Problem, action: np.ndarray, swap_edges: int, max_steps: int | None,
             deadline: float | None) -> tuple[int, float]:
    """Descend ``action`` in place until a local optimum, ``max_steps`` or the ``perf_counter`` deadline
    (checked every ``_CHUNK`` steps); returns (steps, R)."""
    steps, chunk = 0, (_CHUNK if deadline is None else _FIRST_CHUNK)
    while True:
        budget = chunk if max_steps is None else min(chunk, max_steps - steps)
        if budget <= 0:
            break
        began = time.perf_counter()
        done, cost, converged = _descend_kernel(*problem.arrays(), action, swap_edges, budget)
        steps += done
        now = time.perf_counter()
        if converged or (deadline is not None and now > deadline):
            break
        if deadline is not None and done:  # the next chunk ends about at the deadline, not a chunk past it
            chunk = int(max(1, min(_CHUNK, (deadline - now) * done / max(now - began, 1e-9))))
    if steps == 0:
        cost = float(_aggregates(*problem.arrays(), action)[0].max())
    return steps, float(cost)


def local_descent(instance: Instance, action: np.ndarray, *, swap_edges: int = 3, max_steps: int | None = None,
                  deadline: float | None = None) -> tuple[np.ndarray, int]:
    """Best-improvement descent on (R, sum T^2) from ``action`` until no move or swap improves it,
    ``max_steps`` steps or the ``perf_counter`` ``deadline``; returns (dispatch, steps)."""
    out = np.array(action, dtype=np.int64)
    steps, _ = _descend(_Problem(instance), out, int(swap_edges), max_steps, deadline)
    return out, steps


def iterated_local_search(
    instance: Instance,
    *,
    time_limit: float | None = 1.0,
    max_iterations: int | None = None,
    seed: int | None = 0,
    kick_size: int = 4,
    accept_worse: float = 0.0,
    restart_after: int = 50,
    swap_edges: int = 3,
    start: np.ndarray | None = None,
    kick_probs: np.ndarray | None = None,
    trace: list[tuple[float, int, float]] | None = None,
) -> SearchResult:
    """Anytime ILS (module docstring): stops at ``time_limit`` s or ``max_iterations`` kicks (at least one
    of them must be set); deterministic given ``seed`` when ``time_limit`` is None.

    ``start``: the dispatch to start from (default ``list_greedy``). ``kick_probs``: optional (Z, Q)
    probabilities of each request's edge (a learned dispatcher's, agents.corais): a kick then moves the
    requests where they are least likely (weight 1 - p_{i, a_i}) to an edge drawn from p_i without its
    current edge, instead of uniformly.

    ``trace``: a list the search appends ``(seconds since the call, kicks done, best R so far)`` to: once
    for the start, after every chunk of the first descent and after every kick's descent (for the anytime
    cost-vs-time profile, ``benchmarks.corais_profile``; the search's path is the same with or without it)."""
    if time_limit is None and max_iterations is None:
        raise ValueError("time_limit=None and max_iterations=None: set at least one budget")
    if time_limit is not None and (isinstance(time_limit, bool) or not isinstance(time_limit, (int, float))
                                   or not time_limit > 0):
        raise ValueError(f"time_limit={time_limit!r} is invalid: expected seconds > 0 or None")
    if max_iterations is not None and (isinstance(max_iterations, bool)
                                       or not isinstance(max_iterations, (int, np.integer)) or max_iterations < 0):
        raise ValueError(f"max_iterations={max_iterations!r} is invalid: expected an integer >= 0 or None")
    if kick_size < 1 or restart_after < 1 or swap_edges < 1 or accept_worse < 0:
        raise ValueError(f"invalid search parameters: kick_size={kick_size}, restart_after={restart_after}, "
                         f"swap_edges={swap_edges}, accept_worse={accept_worse}")
    begin = time.perf_counter()
    deadline = None if time_limit is None else begin + float(time_limit)
    rng = np.random.default_rng(seed)
    z, q = instance.tables.cmp.shape
    first = list_greedy(instance) if start is None else np.asarray(start, dtype=np.int64).copy()
    start_cost = float(dispatch_cost(instance, first))
    problem = _Problem(instance)
    weights = None if kick_probs is None else _kick_weights(kick_probs, z, q)
    state = first.copy()
    if trace is None:
        steps, cost = _descend(problem, state, swap_edges, None, deadline)
    else:
        steps, cost = _traced_descent(problem, state, swap_edges, deadline, trace, begin, start_cost)
    best, best_cost = state.copy(), cost
    current, current_cost = best.copy(), best_cost
    iterations, since_best = 0, 0
    kick = int(min(kick_size, z))
    while q > 1 and (max_iterations is None or iterations < max_iterations):
        if deadline is not None and time.perf_counter() > deadline:
            break
        state = current.copy()
        if weights is None:
            chosen = rng.choice(z, size=kick, replace=False)
            shift = rng.integers(1, q, size=kick)  # another edge, uniformly
            state[chosen] = (state[chosen] + shift) % q
        else:
            _guided_kick(state, weights, kick, rng)
        done, cost = _descend(problem, state, swap_edges, None, deadline)
        steps += done
        iterations += 1
        if cost < best_cost * (1 - _RTOL):
            best, best_cost = state.copy(), cost
            since_best = 0
        else:
            since_best += 1
        if cost <= current_cost * (1 + accept_worse):
            current, current_cost = state.copy(), cost
        if since_best >= restart_after:
            current, current_cost, since_best = best.copy(), best_cost, 0
        if trace is not None:
            trace.append((time.perf_counter() - begin, iterations, float(best_cost)))
    final = float(dispatch_cost(instance, best))
    if final > start_cost:  # pragma: no cover (the descent never increases R)
        best, final = first, start_cost
    return SearchResult(best, final, start_cost, iterations, steps, time.perf_counter() - begin)


#: Descent steps between two trace points of the first descent (a step: ~40 us at Z = 100, ~0.4 ms at Z = 400).
_TRACE_STEPS = 8


def _traced_descent(problem: _Problem, state: np.ndarray, swap_edges: int, deadline: float | None,
                    trace: list[tuple[float, int, float]], begin: float, start_cost: float) -> tuple[int, float]:
    """The first descent of ``iterated_local_search`` in chunks of ``_TRACE_STEPS`` steps, appending a trace
    point after each (the steps are those of one uninterrupted descent: each step starts from the dispatch
    alone). Returns (steps, R)."""
    trace.append((time.perf_counter() - begin, 0, float(start_cost)))
    steps = 0
    while True:
        done, cost = _descend(problem, state, swap_edges, _TRACE_STEPS, deadline)
        steps += done
        trace.append((time.perf_counter() - begin, 0, float(min(cost, start_cost))))
        if done < _TRACE_STEPS or (deadline is not None and time.perf_counter() > deadline):
            return steps, cost


def _kick_weights(kick_probs: np.ndarray, z: int, q: int) -> np.ndarray:
    """Validated (Z, Q) kick probabilities, each row normalised, with a floor so every edge stays reachable."""
    probs = np.asarray(kick_probs, dtype=np.float64)
    if probs.shape != (z, q) or not np.all(np.isfinite(probs)) or np.any(probs < 0):
        raise ValueError(f"kick_probs must be finite non-negative (Z={z}, Q={q}) probabilities, got shape "
                         f"{probs.shape}")
    probs = probs + 1e-3 / q
    return probs / probs.sum(axis=1, keepdims=True)


def _guided_kick(action: np.ndarray, weights: np.ndarray, kick: int, rng: np.random.Generator) -> None:
    """Move ``kick`` requests, drawn with weight 1 - p_{i, a_i}, each to an edge drawn from p_i without a_i."""
    z = action.size
    rows = np.arange(z)
    doubt = 1.0 - weights[rows, action]
    chosen = rng.choice(z, size=kick, replace=False, p=doubt / doubt.sum())
    p = weights[chosen].copy()
    p[np.arange(kick), action[chosen]] = 0.0
    cum = np.cumsum(p, axis=1)
    u = rng.random(kick) * cum[:, -1]
    action[chosen] = np.minimum((cum < u[:, None]).sum(axis=1), weights.shape[1] - 1)
