"""Ours (not from the CoRaiS paper): an anytime iterated local search (ILS) for the CoRaiS dispatch.

``iterated_local_search(instance, time_limit=..., max_iterations=..., seed=...)`` starts from
``offline.corais.greedy.list_greedy`` and alternates

1. a best-improvement descent on the lexicographic objective (R, sum_j T_j^2): R = max_j T_j is the cost,
   the sum of squares breaks R's plateaus (it rewards draining the most loaded edges even when another
   edge is as critical). The neighbourhood is every *move* (one request to any other edge: all Z x Q) and
   every *swap* of a request on one of the ``swap_edges`` most loaded edges with a request on any other
   edge (all edge pairs when ``swap_edges >= Q``). Both are evaluated at once with numpy from per-edge
   aggregates (compute sums split local / transferred-in, the two largest input and result transfers,
   so a request can be taken out in O(1)); every T_j comes from
   ``envs.corais.dynamics.edge_times_from_aggregates``, the cost model's one formula.
2. a random kick: ``kick_size`` requests, drawn uniformly, each moved to a uniformly drawn other edge.
   The new local optimum replaces the current one when its R is at most ``(1 + accept_worse)`` x the
   current R; after ``restart_after`` kicks without a new best, the search restarts from the best.

It stops at ``time_limit`` seconds (wall clock, checked between descent steps) or after
``max_iterations`` kicks, whichever comes first; with ``time_limit=None`` the result is a deterministic
function of (instance, seed, max_iterations). The best dispatch found is returned, never worse than the
list-greedy start; its cost is recomputed with ``envs.corais.dynamics.dispatch_cost``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from envs.corais.dynamics import dispatch_cost, edge_times_from_aggregates
from envs.corais.types import Instance
from offline.corais.greedy import list_greedy, top2_per_edge

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


class _Dispatch:
    """A dispatch with its per-edge aggregates and every request's edge time with itself taken out."""

    def __init__(self, instance: Instance, action: np.ndarray) -> None:
        tab = instance.tables
        self.workload = tab.workload
        self.cmp, self.trn, self.res, self.src = tab.cmp, tab.trn, tab.res, tab.src
        self.z, self.q = tab.cmp.shape
        self.rows = np.arange(self.z)
        is_local = self.src[:, None] == np.arange(self.q)[None, :]
        self.cmp_local = np.where(is_local, self.cmp, 0.0)
        self.cmp_in = np.where(is_local, 0.0, self.cmp)
        self.set(action)

    def set(self, action: np.ndarray) -> None:
        """Recompute every aggregate for ``action`` (O(Z log Z))."""
        q, rows = self.q, self.rows
        self.action = action
        c_loc, c_in = self.cmp_local[rows, action], self.cmp_in[rows, action]
        trn_sel, res_sel = self.trn[rows, action], self.res[rows, action]
        self.local = np.bincount(action, weights=c_loc, minlength=q)
        self.inc = np.bincount(action, weights=c_in, minlength=q)
        trn1, trn1_idx, trn2 = top2_per_edge(trn_sel, action, q)
        res1, res1_idx, res2 = top2_per_edge(res_sel, action, q)
        self.trn1, self.res1 = trn1, res1
        self.times = edge_times_from_aggregates(self.workload, self.local, self.inc, trn1, res1)
        # each request's edge without it
        self.local_wo = self.local[action] - c_loc
        self.inc_wo = self.inc[action] - c_in
        self.trn_wo = np.where(trn1_idx[action] == rows, trn2[action], trn1[action])
        self.res_wo = np.where(res1_idx[action] == rows, res2[action], res1[action])
        self.t_wo = edge_times_from_aggregates(self.workload[action], self.local_wo, self.inc_wo, self.trn_wo,
                                               self.res_wo)

    @property
    def cost(self) -> float:
        return float(self.times.max())

    def rest_max(self) -> np.ndarray:
        """(Q, Q): max_j T_j over the edges other than a and b (0 when there is none)."""
        q = self.q
        order = np.argsort(-self.times, kind="stable")[:3]
        top = np.r_[self.times[order], np.zeros(3 - order.size)]
        idx = np.r_[order, np.full(3 - order.size, -1)]
        a = np.arange(q)[:, None]
        b = np.arange(q)[None, :]
        hit0 = (a == idx[0]) | (b == idx[0])
        hit1 = (a == idx[1]) | (b == idx[1])
        return np.where(~hit0, top[0], np.where(~hit1, top[1], top[2]))

    def best_neighbour(self, swap_edges: int) -> tuple[float, float, np.ndarray | None]:
        """The lexicographically best (R', delta of sum T^2) move or swap, and the dispatch it leads to."""
        t, action, w = self.times, self.action, self.workload
        rest = self.rest_max()
        sq = t * t
        # moves: request i from a_i to b
        move_t = edge_times_from_aggregates(
            w, self.local[None, :] + self.cmp_local, self.inc[None, :] + self.cmp_in,
            np.maximum(self.trn1[None, :], self.trn), np.maximum(self.res1[None, :], self.res),
        )
        move_r = np.maximum(np.maximum(self.t_wo[:, None], move_t), rest[action])
        move_r[self.rows, action] = np.inf
        move_f = (self.t_wo * self.t_wo - sq[action])[:, None] + move_t * move_t - sq[None, :]
        # swaps: request i on a hot edge with request k on another edge
        if swap_edges >= self.q:
            hot_rows = self.rows
        else:
            hot = np.argsort(-t, kind="stable")[:swap_edges]
            hot_rows = np.flatnonzero(np.isin(action, hot))
        a_i = action[hot_rows]
        # A[i, k] = T of edge a_i without i plus k
        swap_a = edge_times_from_aggregates(
            w[a_i][:, None, :],
            self.local_wo[hot_rows, None] + self.cmp_local[:, a_i].T,
            self.inc_wo[hot_rows, None] + self.cmp_in[:, a_i].T,
            np.maximum(self.trn_wo[hot_rows, None], self.trn[:, a_i].T),
            np.maximum(self.res_wo[hot_rows, None], self.res[:, a_i].T),
        )
        # B[i, k] = T of edge a_k without k plus i
        swap_b = edge_times_from_aggregates(
            w[action][None, :, :],
            self.local_wo[None, :] + self.cmp_local[hot_rows][:, action],
            self.inc_wo[None, :] + self.cmp_in[hot_rows][:, action],
            np.maximum(self.trn_wo[None, :], self.trn[hot_rows][:, action]),
            np.maximum(self.res_wo[None, :], self.res[hot_rows][:, action]),
        )
        swap_r = np.maximum(np.maximum(swap_a, swap_b), rest[a_i[:, None], action[None, :]])
        swap_r[a_i[:, None] == action[None, :]] = np.inf
        swap_f = swap_a * swap_a + swap_b * swap_b - sq[a_i][:, None] - sq[action][None, :]
        r_min = min(float(move_r.min()), float(swap_r.min()) if swap_r.size else np.inf)
        if not np.isfinite(r_min):
            return np.inf, 0.0, None
        tol = _RTOL * max(r_min, 1.0)
        move_f = np.where(move_r <= r_min + tol, move_f, np.inf)
        swap_f = np.where(swap_r <= r_min + tol, swap_f, np.inf)
        m = int(np.argmin(move_f))
        new = action.copy()
        if swap_f.size and float(swap_f.min()) < float(move_f.flat[m]):
            s = int(np.argmin(swap_f))
            i, k = hot_rows[s // self.z], s % self.z
            new[i], new[k] = action[k], action[i]
            return r_min, float(swap_f.flat[s]), new
        new[m // self.q] = m % self.q
        return r_min, float(move_f.flat[m]), new


def local_descent(instance: Instance, action: np.ndarray, *, swap_edges: int = 3, max_steps: int | None = None,
                  deadline: float | None = None) -> tuple[np.ndarray, int]:
    """Best-improvement descent on (R, sum T^2) from ``action`` until no move or swap improves it,
    ``max_steps`` steps or the ``perf_counter`` ``deadline``; returns (dispatch, steps)."""
    state = _Dispatch(instance, np.asarray(action, dtype=np.int64).copy())
    steps = _descend(state, swap_edges, max_steps, deadline)
    return state.action, steps


def _descend(state: _Dispatch, swap_edges: int, max_steps: int | None, deadline: float | None) -> int:
    steps = 0
    while max_steps is None or steps < max_steps:
        if deadline is not None and time.perf_counter() > deadline:
            break
        r = state.cost
        f = float(np.dot(state.times, state.times))
        r_new, df, new = state.best_neighbour(swap_edges)
        if new is None:
            break
        if not (r_new < r - _RTOL * max(r, 1.0) or (r_new <= r + _RTOL * max(r, 1.0) and df < -_RTOL * max(f, 1.0))):
            break
        state.set(new)
        steps += 1
    return steps


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
) -> SearchResult:
    """Anytime ILS (module docstring): stops at ``time_limit`` s or ``max_iterations`` kicks (at least one
    of them must be set); deterministic given ``seed`` when ``time_limit`` is None."""
    if time_limit is None and max_iterations is None:
        raise ValueError("time_limit=None and max_iterations=None: set at least one budget")
    if time_limit is not None and not time_limit > 0:
        raise ValueError(f"time_limit={time_limit!r} is invalid: expected seconds > 0 or None")
    if kick_size < 1 or restart_after < 1 or swap_edges < 1 or accept_worse < 0:
        raise ValueError(f"invalid search parameters: kick_size={kick_size}, restart_after={restart_after}, "
                         f"swap_edges={swap_edges}, accept_worse={accept_worse}")
    begin = time.perf_counter()
    deadline = None if time_limit is None else begin + float(time_limit)
    rng = np.random.default_rng(seed)
    z, q = instance.tables.cmp.shape
    first = list_greedy(instance) if start is None else np.asarray(start, dtype=np.int64).copy()
    start_cost = float(dispatch_cost(instance, first))
    state = _Dispatch(instance, first)
    steps = _descend(state, swap_edges, None, deadline)
    best, best_cost = state.action.copy(), state.cost
    current, current_cost = best.copy(), best_cost
    iterations, since_best = 0, 0
    kick = int(min(kick_size, z))
    while q > 1 and (max_iterations is None or iterations < max_iterations):
        if deadline is not None and time.perf_counter() > deadline:
            break
        kicked = current.copy()
        chosen = rng.choice(z, size=kick, replace=False)
        shift = rng.integers(1, q, size=kick)  # another edge, uniformly
        kicked[chosen] = (kicked[chosen] + shift) % q
        state.set(kicked)
        steps += _descend(state, swap_edges, None, deadline)
        iterations += 1
        cost = state.cost
        if cost < best_cost * (1 - _RTOL):
            best, best_cost = state.action.copy(), cost
            since_best = 0
        else:
            since_best += 1
        if cost <= current_cost * (1 + accept_worse):
            current, current_cost = state.action.copy(), cost
        if since_best >= restart_after:
            current, current_cost, since_best = best.copy(), best_cost, 0
    final = float(dispatch_cost(instance, best))
    if final > start_cost:  # pragma: no cover (the descent never increases R)
        best, final = first, start_cost
    return SearchResult(best, final, start_cost, iterations, steps, time.perf_counter() - begin)
