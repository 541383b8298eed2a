"""Strong simple CoRaiS baselines: list scheduling (earliest completion) and move/swap local search.

``list_greedy(instance)``: requests in decreasing input size d_i (= decreasing compute time on every
edge, since f_j is increasing in d), each to the region edge whose completion time T_j is smallest
after adding it (ties: the smallest growth of T_j, then the lowest index) — LPT list scheduling with the
CoRaiS edge time. ``local_search(instance, action)``: while a critical edge (T_j = R) can be relieved,
move one of its requests to another edge, or swap it with a request of another edge, so that both edges
end strictly below the old R (best target first); stops when some critical edge admits no such move or
swap (then R cannot drop by a single move or swap), or at ``max_moves``. Never worse than its start.

Every T_j is computed by ``envs.corais.dynamics.edge_times_from_aggregates`` from per-edge aggregates
(compute sums split local / transferred-in, top-2 transfer and result times), the same formula as
``response_times``; the final cost is recomputed with ``dispatch_cost``.
"""

from __future__ import annotations

import time

import numpy as np

from envs.corais.dynamics import backlog_bound, backlog_times, dispatch_cost, edge_times_from_aggregates
from envs.corais.types import Instance

__all__ = ["fluid_bound", "list_greedy", "list_greedy_ls", "local_search"]


def list_greedy(instance: Instance) -> np.ndarray:
    """LPT list scheduling with earliest completion (see the module docstring); (Z,) int64."""
    tab = instance.tables
    z, q = tab.cmp.shape
    w = tab.workload
    local = np.zeros(q)
    inc = np.zeros(q)
    trn = np.zeros(q)
    res = np.zeros(q)
    times = edge_times_from_aggregates(w, local, inc, trn, res)
    edges = np.arange(q)
    action = np.empty(z, dtype=np.int64)
    for i in np.argsort(-instance.req_d, kind="stable"):
        is_local = edges == tab.src[i]
        cand = edge_times_from_aggregates(
            w,
            local + np.where(is_local, tab.cmp[i], 0.0),
            inc + np.where(is_local, 0.0, tab.cmp[i]),
            np.maximum(trn, tab.trn[i]),
            np.maximum(res, tab.res[i]),
        )
        best = np.flatnonzero(cand <= cand.min() * (1 + 1e-12) + 1e-15)
        j = int(best[np.argmin(cand[best] - times[best])]) if best.size > 1 else int(best[0])
        action[i] = j
        if is_local[j]:
            local[j] += tab.cmp[i, j]
        else:
            inc[j] += tab.cmp[i, j]
        trn[j] = max(trn[j], tab.trn[i, j])
        res[j] = max(res[j], tab.res[i, j])
        times[j] = cand[j]
    return action


def top2_per_edge(values: np.ndarray, action: np.ndarray, q: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per edge: the largest value, the request holding it (-1: none) and the second largest (0: none)."""
    first = np.zeros(q)
    first_idx = np.full(q, -1, dtype=np.int64)
    second = np.zeros(q)
    if action.size == 0:
        return first, first_idx, second
    order = np.lexsort((-values, action))  # by edge, then decreasing value
    edge_sorted, val_sorted = action[order], values[order]
    starts = np.flatnonzero(np.r_[True, edge_sorted[1:] != edge_sorted[:-1]])
    e = edge_sorted[starts]
    first[e], first_idx[e] = val_sorted[starts], order[starts]
    has2 = np.r_[starts[1:], edge_sorted.size] - starts >= 2
    second[e[has2]] = val_sorted[starts[has2] + 1]
    return first, first_idx, second


class _Aggregates:
    """Per-edge aggregates of a dispatch, with top-2 maxima so one request can be taken out in O(1)."""

    def __init__(self, instance: Instance, action: np.ndarray) -> None:
        tab = instance.tables
        self.tab = tab
        self.q = tab.cmp.shape[1]
        self.rows = np.arange(tab.cmp.shape[0])
        self.update(action)

    def _top2(self, values: np.ndarray, action: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return top2_per_edge(values, action, self.q)

    def update(self, action: np.ndarray) -> None:
        tab, q = self.tab, self.q
        self.action = action
        self.cmp_sel = tab.cmp[self.rows, action]
        self.trn_sel = tab.trn[self.rows, action]
        self.res_sel = tab.res[self.rows, action]
        self.is_local = action == tab.src
        self.local = np.bincount(action, weights=np.where(self.is_local, self.cmp_sel, 0.0), minlength=q)
        self.inc = np.bincount(action, weights=np.where(self.is_local, 0.0, self.cmp_sel), minlength=q)
        self.trn1, self.trn1_idx, self.trn2 = self._top2(self.trn_sel, action)
        self.res1, self.res1_idx, self.res2 = self._top2(self.res_sel, action)
        self.times = edge_times_from_aggregates(tab.workload, self.local, self.inc, self.trn1, self.res1)

    def without(self, reqs: np.ndarray) -> tuple[np.ndarray, ...]:
        """Aggregates of each request's own edge with that request taken out (vectors over ``reqs``)."""
        e = self.action[reqs]
        loc = self.is_local[reqs]
        c = self.cmp_sel[reqs]
        local = self.local[e] - np.where(loc, c, 0.0)
        inc = self.inc[e] - np.where(loc, 0.0, c)
        trn = np.where(self.trn1_idx[e] == reqs, self.trn2[e], self.trn1[e])
        res = np.where(self.res1_idx[e] == reqs, self.res2[e], self.res1[e])
        return e, local, inc, trn, res

    def with_added(self, edges: np.ndarray, local: np.ndarray, inc: np.ndarray, trn: np.ndarray,
                   res: np.ndarray, reqs: np.ndarray | int) -> np.ndarray:
        """T of ``edges`` (aggregates given) after adding request(s) ``reqs`` to them."""
        tab = self.tab
        c = tab.cmp[reqs, edges]
        loc = tab.src[reqs] == edges
        return edge_times_from_aggregates(
            tab.workload[edges],
            local + np.where(loc, c, 0.0),
            inc + np.where(loc, 0.0, c),
            np.maximum(trn, tab.trn[reqs, edges]),
            np.maximum(res, tab.res[reqs, edges]),
        )


def _improve_edge(agg: _Aggregates, j: int, level: float) -> np.ndarray | None:
    """An improving move or swap out of critical edge ``j`` (both edges end < ``level``), or None."""
    members = np.flatnonzero(agg.action == j)
    if members.size == 0:
        return None
    q = agg.q
    all_edges = np.arange(q)
    _, j_local, j_inc, j_trn, j_res = agg.without(members)
    t_j_wo = edge_times_from_aggregates(agg.tab.workload[j], j_local, j_inc, j_trn, j_res)
    # a member can only leave if edge j without it drops below the level
    order = np.argsort(-agg.cmp_sel[members])  # biggest first
    others = np.flatnonzero(agg.action != j)
    if others.size:
        o_edge, o_local, o_inc, o_trn, o_res = agg.without(others)
    best_action, best_value = None, level
    for k in order:
        i = int(members[k])
        if t_j_wo[k] >= level:
            continue
        # move i -> every other edge
        t_add = agg.with_added(all_edges, agg.local, agg.inc, agg.trn1, agg.res1, i)
        t_add[j] = np.inf
        worst = np.maximum(t_add, t_j_wo[k])
        m = int(np.argmin(worst))
        if worst[m] < best_value:
            best_value = float(worst[m])
            best_action = agg.action.copy()
            best_action[i] = m
        # swap i with a request i2 of another edge
        if others.size:
            t_j_new = agg.with_added(np.full(others.size, j), np.full(others.size, j_local[k]),
                                     np.full(others.size, j_inc[k]), np.full(others.size, j_trn[k]),
                                     np.full(others.size, j_res[k]), others)
            t_o_new = agg.with_added(o_edge, o_local, o_inc, o_trn, o_res, np.full(others.size, i))
            worst_s = np.maximum(t_j_new, t_o_new)
            s = int(np.argmin(worst_s))
            if worst_s[s] < best_value:
                best_value = float(worst_s[s])
                best_action = agg.action.copy()
                best_action[i], best_action[others[s]] = agg.action[others[s]], j
        if best_action is not None:
            return best_action
    return best_action


def local_search(instance: Instance, action: np.ndarray, *, max_moves: int | None = None,
                 time_limit: float | None = None) -> np.ndarray:
    """Move/swap local search on the critical edges from ``action`` (see the module docstring)."""
    action = np.asarray(action, dtype=np.int64).copy()
    agg = _Aggregates(instance, action)
    max_moves = 20 * instance.num_requests if max_moves is None else int(max_moves)
    start = time.perf_counter()
    for _ in range(max_moves):
        level = float(agg.times.max())
        j = int(np.argmax(agg.times))  # a critical edge; once relieved, the next one is taken
        new = _improve_edge(agg, j, level * (1 - 1e-12))
        if new is None:
            break  # this critical edge cannot drop: R cannot drop by one move or swap
        agg.update(new)
        if time_limit is not None and time.perf_counter() - start > time_limit:
            break
    return agg.action


def list_greedy_ls(instance: Instance, **kwargs: float | int | None) -> np.ndarray:
    """``list_greedy`` followed by ``local_search``; its cost is never above list_greedy's."""
    start = list_greedy(instance)
    out = local_search(instance, start, **kwargs)
    if float(dispatch_cost(instance, out)) > float(dispatch_cost(instance, start)):  # pragma: no cover
        return start
    return out


def fluid_bound(instance: Instance) -> float:
    """A proven lower bound on the optimum from the compute alone, at least the backlog-only bound.

    For any dispatch with R <= T, every edge j that receives requests has sum_{i -> j} cmp_ij <= T - base_j,
    base_j = T^{L,cmp} + T^{I,cmp} + max(T^{L,res}, T^{I,res}) (= T_j with no request and no pending input
    transfer). Weighting edge j by w_j >= 0 and summing: sum_i min_j w_j cmp_ij <= sum_j w_j (T - base_j)^+,
    so the T where the right side reaches the left side bounds R from below (weak LP duality). Weights
    tried: w_j = m_j / f_j(d) for d at the 10th ... 90th percentile of the batch's sizes (speeds). O(Z Q).
    """
    tab = instance.tables
    workload = tab.workload.copy()
    workload[:, 1] = 0.0  # no pending input transfer: max(C^L, S) >= C^L
    base = backlog_times(workload)
    best = backlog_bound(instance)
    for d in np.quantile(instance.req_d, [0.1, 0.3, 0.5, 0.7, 0.9]):
        w = instance.replicas / np.maximum(instance.coef_a * d + instance.coef_b, 1e-12)
        need = float(np.sum(np.min(tab.cmp * w[None, :], axis=1)))
        order = np.argsort(base)
        b, ws = base[order], w[order]
        cum_w, cum_wb = np.cumsum(ws), np.cumsum(ws * b)
        # on [b_k, b_{k+1}): sum_j w_j (T - b_j)^+ = T cum_w[k] - cum_wb[k]; the first k where it reaches need
        for k in range(b.size):
            t = (need + cum_wb[k]) / cum_w[k]
            if k + 1 == b.size or t <= b[k + 1]:
                best = max(best, float(t))
                break
    return best
