"""CoRaiS-v0's exact dispatch: the MILP of eqs. (6)-(15) solved by HiGHS (``scipy.optimize.milp``)."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from scipy import sparse
from scipy.optimize import Bounds, LinearConstraint, milp

from envs.corais.dynamics import dispatch_cost
from envs.corais.types import Instance

__all__ = ["SolveResult", "build_milp", "solve_exact"]


@dataclass
class SolveResult:
    """Outcome of one MILP solve: the dispatch (None without an incumbent) and what HiGHS proved."""

    action: np.ndarray | None  # (Z,) int64
    cost: float  # R(action) from envs.corais.dynamics (nan without an incumbent)
    has_incumbent: bool
    optimal: bool  # optimality proven (within mip_rel_gap)
    objective: float  # the MILP objective z (nan without an incumbent)
    mip_gap: float
    seconds: float
    message: str
    bound: float = float("nan")  # HiGHS's proven lower bound on the optimum (dual bound; = objective if optimal)


def build_milp(instance: Instance) -> tuple[np.ndarray, np.ndarray, Bounds, list[LinearConstraint]]:
    """The MILP (c, integrality, bounds, constraints) of min_pi R(pi).

    Variables: p_ij (Z*Q binaries, index i*Q + j), K_j, S_j, O_j (Q each), z. Constraints:
    sum_j p_ij = 1; K_j >= T^{L,cmp}_j + sum_{local i} cmp_ij p_ij; K_j >= S_j;
    z >= K_j + T^{I,cmp}_j + sum_{non-local i} cmp_ij p_ij + O_j; S_j >= trn_ij p_ij; O_j >= res_ij p_ij;
    bounds S_j >= T^{I,trn}_j, O_j >= max(T^{L,res}_j, T^{I,res}_j). Exact because every max is only
    bounded from below and the objective pushes it down.
    """
    tab = instance.tables
    z_n, q = tab.cmp.shape
    n_p = z_n * q
    k0, s0, o0, zi = n_p, n_p + q, n_p + 2 * q, n_p + 3 * q
    n_var = zi + 1
    pid = np.arange(n_p).reshape(z_n, q)
    local = tab.src[:, None] == np.arange(q)[None, :]
    edges = np.arange(q)
    rows, cols, vals, lo, hi = [], [], [], [], []
    r = 0

    def add(row_cols: np.ndarray, row_vals: np.ndarray, row_ids: np.ndarray) -> None:
        rows.append(row_ids)
        cols.append(row_cols)
        vals.append(row_vals)

    # (14) assignment
    add(pid.ravel(), np.ones(n_p), np.repeat(np.arange(z_n), q) + r)
    lo.append(np.ones(z_n))
    hi.append(np.ones(z_n))
    r += z_n
    # K_j - sum_local cmp p >= T^{L,cmp}
    ii, jj = np.nonzero(local)
    add(k0 + edges, np.ones(q), r + edges)
    add(pid[ii, jj], -tab.cmp[ii, jj], r + jj)
    lo.append(tab.workload[:, 0])
    hi.append(np.full(q, np.inf))
    r += q
    # K_j - S_j >= 0
    add(k0 + edges, np.ones(q), r + edges)
    add(s0 + edges, -np.ones(q), r + edges)
    lo.append(np.zeros(q))
    hi.append(np.full(q, np.inf))
    r += q
    # z - K_j - O_j - sum_nonlocal cmp p >= T^{I,cmp}
    ii, jj = np.nonzero(~local)
    add(np.full(q, zi), np.ones(q), r + edges)
    add(k0 + edges, -np.ones(q), r + edges)
    add(o0 + edges, -np.ones(q), r + edges)
    add(pid[ii, jj], -tab.cmp[ii, jj], r + jj)
    lo.append(tab.workload[:, 2])
    hi.append(np.full(q, np.inf))
    r += q
    # S_j - trn_ij p_ij >= 0 and O_j - res_ij p_ij >= 0 (only where the term is positive)
    for base, table in ((s0, tab.trn), (o0, tab.res)):
        ii, jj = np.nonzero(table > 0)
        m = ii.size
        ids = r + np.arange(m)
        add(base + jj, np.ones(m), ids)
        add(pid[ii, jj], -table[ii, jj], ids)
        lo.append(np.zeros(m))
        hi.append(np.full(m, np.inf))
        r += m
    a = sparse.csr_array(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(r, n_var)
    )
    c = np.zeros(n_var)
    c[zi] = 1.0
    integrality = np.zeros(n_var)
    integrality[:n_p] = 1
    lb = np.zeros(n_var)
    ub = np.full(n_var, np.inf)
    ub[:n_p] = 1.0
    lb[s0:o0] = tab.workload[:, 1]
    lb[o0:zi] = np.maximum(tab.workload[:, 3], tab.workload[:, 4])
    return c, integrality, Bounds(lb, ub), [LinearConstraint(a, np.concatenate(lo), np.concatenate(hi))]


def solve_exact(
    instance: Instance,
    *,
    time_limit: float = 10.0,
    mip_rel_gap: float = 1e-4,
    require_incumbent: bool = False,
) -> SolveResult:
    """Solve the dispatch MILP with HiGHS (scipy.optimize.milp) within ``time_limit`` seconds.

    Returns the incumbent (if any) with its cost from the one cost model, whether optimality was
    proven, and the solve time. ``require_incumbent=True`` raises RuntimeError when HiGHS found no
    feasible dispatch in time (instead of returning ``has_incumbent=False``).
    """
    if not (time_limit > 0):
        raise ValueError(f"time_limit={time_limit!r} is invalid: expected a number of seconds > 0")
    start = time.perf_counter()
    c, integrality, bounds, constraints = build_milp(instance)
    res = milp(
        c,
        integrality=integrality,
        bounds=bounds,
        constraints=constraints,
        options={"time_limit": float(time_limit), "mip_rel_gap": float(mip_rel_gap), "presolve": True},
    )
    seconds = time.perf_counter() - start
    z_n, q = instance.tables.cmp.shape
    if res.x is None or res.status not in (0, 1):
        if res.status in (2, 3):  # infeasible/unbounded cannot happen for a valid instance
            raise RuntimeError(f"CoRaiS MILP at scale {instance.scale}: HiGHS status {res.status}: {res.message}")
        if require_incumbent:
            raise RuntimeError(
                f"CoRaiS MILP at scale {instance.scale}: no feasible dispatch within {time_limit} s "
                f"(HiGHS: {res.message})"
            )
        bound = float(getattr(res, "mip_dual_bound", np.nan) or np.nan)
        return SolveResult(None, float("nan"), False, False, float("nan"), float("inf"), seconds, res.message, bound)
    action = np.argmax(res.x[: z_n * q].reshape(z_n, q), axis=1).astype(np.int64)
    cost = float(dispatch_cost(instance, action))
    gap = float(getattr(res, "mip_gap", np.nan) if res.status == 1 else getattr(res, "mip_gap", 0.0))
    bound = getattr(res, "mip_dual_bound", None)
    bound = float(bound) if bound is not None and np.isfinite(bound) else float(res.fun) * (1 - gap)
    return SolveResult(action, cost, True, res.status == 0, float(res.fun), gap, seconds, res.message, bound)
