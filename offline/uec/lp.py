"""RESCUE's P1-LP (eqs. 3a–3c with 2d–2f), assembled as sparse matrices in numpy and solved by HiGHS.

Time is 0-based (slot ``t`` is the paper's ``t + 1``). Variables:

* ``y_jkl(t) ≥ 0``: joint probability that device j arrives at t and is assigned to SSP (k, l). Only the
  *useful* ones are variables: p_j(t) > 0 and R_jkl(t) > 0 (any other y is 0 in some optimum, and
  forcing it to 0 keeps the online rule from drawing worthless SSPs).
* ``x_i(t) ∈ [0, 1]``: share of c_k(t) given to reserved task i (on its server k) in slot t of its window.
* ``z_kl(t) ≥ Σ_j y_jkl(t)`` (``formulation="aggregated"``, the default): the total assignment rate of
  SSP (k, l) at t. The convolution constraint (3b) only depends on Σ_j y, so writing it on z gives the
  same optimum with ~J-fold fewer non-zeros (``formulation="direct"`` writes it on y, for comparison).

Constraints (0-based t, S_l(s) = Pr(d_l ≥ s)):

* (3a)  Σ_{k,l} y_jkl(t) ≤ p_j(t)                                   for every (j, t) with a variable;
* (3b)  Σ_l Σ_{s=1}^{t+1} S_l(s)·z_kl(t−s+1) + Σ_{i on k} x_i(t) ≤ 1   for every (k, t);
* (2d)  Σ_{t in window} c_k(t)·x_i(t) ≥ φ_i                           for every reserved task i;
* (agg) Σ_j y_jkl(t) − z_kl(t) ≤ 0                                   (aggregated formulation only).

Objective: max Σ R_jkl(t)·y_jkl(t). All index arithmetic is vectorised; no Python loop runs over variables.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from scipy import sparse
from scipy.optimize import linprog

from envs.uec.types import Instance

FORMULATIONS: tuple[str, ...] = ("aggregated", "direct")
#: HiGHS methods accepted by ``solve_lp`` (scipy.optimize.linprog names).
METHODS: tuple[str, ...] = ("highs", "highs-ds", "highs-ipm")


class RescueLPError(RuntimeError):
    """P1-LP is infeasible or HiGHS failed; the message names the instance (``Instance.describe()``)."""


@dataclass(frozen=True)
class LPModel:
    """P1-LP in ``linprog`` form (minimise ``c @ v`` s.t. ``A_ub @ v ≤ b_ub``, ``bounds``).

    Attributes:
        c, a_ub, b_ub, bounds: the linprog arrays; ``a_ub`` is CSR.
        y_index: (4, n_y) the (j, k, l, t) of each y variable (columns ``0..n_y-1``).
        x_index: (2, n_x) the (reserved task i, slot t) of each x variable (columns ``x_offset..``).
        x_offset: first column of the x variables.
        formulation: "aggregated" or "direct".
        build_seconds: wall time spent assembling the matrices.
    """

    c: np.ndarray
    a_ub: sparse.csr_array
    b_ub: np.ndarray
    bounds: np.ndarray
    y_index: np.ndarray
    x_index: np.ndarray
    x_offset: int
    formulation: str
    build_seconds: float

    @property
    def num_variables(self) -> int:
        return int(self.c.size)

    @property
    def num_constraints(self) -> int:
        return int(self.b_ub.size)

    @property
    def nnz(self) -> int:
        return int(self.a_ub.nnz)


@dataclass(frozen=True)
class LPSolution:
    """Optimal P1-LP solution: ``y`` (J, K, L, T), ``x`` (n_reserved, T) (0 outside windows), ``value``.

    ``iterations`` is HiGHS's iteration count (interior-point iterations for "highs-ipm", simplex iterations
    otherwise) and ``crossover_iterations`` its crossover's: with ``solve_seconds`` they say what the solve
    time is made of (``python -m benchmarks.offline_stage`` prints seconds per iteration).
    """

    y: np.ndarray
    x: np.ndarray
    value: float
    build_seconds: float
    solve_seconds: float
    model: LPModel
    iterations: int = 0
    crossover_iterations: int = 0


def dominated_profiles(profit: np.ndarray, survival: np.ndarray) -> np.ndarray:
    """(J, K, L, T) True where y_jkl(t) can be fixed to 0 without changing OPT(LP).

    Profile l is dominated at (j, k, t) by a profile l' whose duration is stochastically no longer
    (S_l'(s) ≤ S_l(s) for every s) and whose profit is at least as high: moving any mass of y_jkl(t)
    to y_jkl'(t) keeps every constraint and does not lower the objective. Ties keep the lower index.
    """
    num_profiles = survival.shape[0]
    dominated = np.zeros(profit.shape, dtype=bool)
    for longer in range(num_profiles):
        for shorter in range(num_profiles):
            if shorter == longer or np.any(survival[shorter] > survival[longer] + 1e-12):
                continue
            same_law = np.allclose(survival[shorter], survival[longer], atol=1e-12, rtol=0.0)
            better = profit[:, :, shorter] > profit[:, :, longer]
            tie = profit[:, :, shorter] == profit[:, :, longer]
            if not same_law or shorter < longer:
                better |= tie
            dominated[:, :, longer] |= better
    return dominated


def build_lp(instance: Instance, formulation: str = "aggregated", prune_dominated: bool = True) -> LPModel:
    """Assemble P1-LP for ``instance`` (see the module docstring) as sparse matrices.

    ``prune_dominated`` drops the y variables of :func:`dominated_profiles` (same optimum, fewer columns).
    """
    if formulation not in FORMULATIONS:
        raise ValueError(f"formulation={formulation!r} is invalid: expected one of {list(FORMULATIONS)}")
    start_clock = time.perf_counter()
    profit = instance.expected_profit  # (J, K, L, T)
    arrival = instance.arrival_prob  # (T, J)
    J, K, L, T = profit.shape
    survival = instance.duration_survival  # (L, D): S_l(s) for s = 1..D
    D = survival.shape[1]

    # --- variables --------------------------------------------------------------------------------
    useful = (profit > 0) & (arrival.T[:, None, None, :] > 0)
    if prune_dominated:
        useful &= ~dominated_profiles(profit, survival)
    yj, yk, yl, yt = np.nonzero(useful)
    n_y = yj.size
    res = instance.reserved
    window_len = (res.end - res.start + 1).astype(np.int64)
    xi = np.repeat(np.arange(len(res)), window_len)
    xt = res.start[xi] + (np.arange(xi.size) - np.repeat(np.cumsum(window_len) - window_len, window_len))
    n_x = xi.size
    if formulation == "aggregated":
        z_offset = n_y
        x_offset = n_y + K * L * T
    else:
        z_offset = -1
        x_offset = n_y
    n_var = x_offset + n_x

    rows, cols, vals, rhs = [], [], [], []
    row = 0

    # --- (3a) per (j, t): Σ_{k,l} y ≤ p_j(t) ---------------------------------------------------------
    jt = yj * T + yt
    jt_unique, jt_row = np.unique(jt, return_inverse=True)
    rows.append(row + jt_row)
    cols.append(np.arange(n_y))
    vals.append(np.ones(n_y))
    rhs.append(arrival[jt_unique % T, jt_unique // T])
    row += jt_unique.size

    # --- (3b) per (k, t): occupancy convolution + reserved shares ≤ 1 ------------------------------
    s = np.arange(1, D + 1)
    if formulation == "aggregated":
        # column of z_kl(t'): z_offset + (k·L + l)·T + t'; row of (k, t): row + k·T + t with t = t' + s - 1
        kk, ll, tp, ss = np.meshgrid(np.arange(K), np.arange(L), np.arange(T), s, indexing="ij")
        coef = survival[ll, ss - 1]
        keep = (coef > 0) & (tp + ss - 1 < T)
        kk, ll, tp, ss, coef = kk[keep], ll[keep], tp[keep], ss[keep], coef[keep]
        rows.append(row + kk * T + tp + ss - 1)
        cols.append(z_offset + (kk * L + ll) * T + tp)
        vals.append(coef)
    else:
        coef = survival[yl]  # (n_y, D)
        keep = (coef > 0) & (yt[:, None] + s[None, :] - 1 < T)
        var, si = np.nonzero(keep)
        rows.append(row + yk[var] * T + yt[var] + si)
        cols.append(var)
        vals.append(coef[var, si])
    rows.append(row + res.server[xi] * T + xt)
    cols.append(x_offset + np.arange(n_x))
    vals.append(np.ones(n_x))
    rhs.append(np.ones(K * T))
    row += K * T

    # --- (2d) per reserved task: -Σ_t c_k(t) x_i(t) ≤ -φ_i ------------------------------------------
    rows.append(row + xi)
    cols.append(x_offset + np.arange(n_x))
    vals.append(-instance.capacity[res.server[xi], xt])
    rhs.append(-res.demand.astype(float))
    row += len(res)

    # --- aggregation per (k, l, t): Σ_j y_jkl(t) - z_kl(t) ≤ 0 ----------------------------------------
    if formulation == "aggregated":
        klt = (yk * L + yl) * T + yt
        rows.append(row + klt)
        cols.append(np.arange(n_y))
        vals.append(np.ones(n_y))
        rows.append(row + np.arange(K * L * T))
        cols.append(z_offset + np.arange(K * L * T))
        vals.append(-np.ones(K * L * T))
        rhs.append(np.zeros(K * L * T))
        row += K * L * T

    a_ub = sparse.csr_array(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(row, n_var)
    )
    c = np.zeros(n_var)
    c[:n_y] = -profit[yj, yk, yl, yt]
    bounds = np.zeros((n_var, 2))
    bounds[:n_y, 1] = arrival[yt, yj]
    bounds[n_y:x_offset, 1] = 1.0
    bounds[x_offset:, 1] = 1.0
    return LPModel(
        c=c,
        a_ub=a_ub,
        b_ub=np.concatenate(rhs),
        bounds=bounds,
        y_index=np.stack([yj, yk, yl, yt]),
        x_index=np.stack([xi, xt]),
        x_offset=x_offset,
        formulation=formulation,
        build_seconds=time.perf_counter() - start_clock,
    )


def solve_lp(
    instance: Instance, formulation: str = "aggregated", method: str = "highs-ipm", prune_dominated: bool = True
) -> LPSolution:
    """Build and solve P1-LP with HiGHS; raise :class:`RescueLPError` (naming the instance) unless optimal.

    ``method``: "highs-ipm" (default; interior point + crossover, 3.5x faster than dual simplex on the default
    preset, see ``python -m benchmarks.offline_stage compare=true``), "highs-ds" or "highs" (HiGHS chooses).
    At the largest scale (K=7, J=18, L=8, T=200) the solve is ~6.3 s of CPU on a quiet machine, all of it in
    HiGHS's interior point (IPX: 42 iterations on 16,218 rows, ~0.15 s each; crossover ~0.2 s; build and value
    functions ~0.02 s). Measured and not faster: calling HiGHS directly, no crossover, no presolve, a looser
    IPM tolerance, equality aggregation rows, dropping the implied upper bounds, rescaling y, column generation
    over y (cold or warm-started) (issue 15); IPX dualized (4x slower), HiGHS 1.12's PDLP (> 90 s), "hipo"
    (not in scipy's build: falls back to simplex, 18 s), column generation re-solving by IPM (6 rounds, 20 s;
    a restricted LP with half the columns still takes ~3 s: the rows bound it), writing the (k, l, t) groups
    with few devices directly instead of through z (fewer rows, more non-zeros: slower, or IPX fails) (issue 38).
    """
    if method not in METHODS:
        raise ValueError(f"method={method!r} is invalid: expected one of {list(METHODS)}")
    model = build_lp(instance, formulation, prune_dominated)
    start_clock = time.perf_counter()
    try:
        result = linprog(model.c, A_ub=model.a_ub, b_ub=model.b_ub, bounds=model.bounds, method=method)
    except Exception as error:  # HiGHS/scipy raising is a failed solve too
        raise RescueLPError(f"P1-LP solve failed ({type(error).__name__}: {error}) on {instance.describe()}") from error
    solve_seconds = time.perf_counter() - start_clock
    if result.status != 0 or result.x is None:
        kind = {2: "infeasible", 3: "unbounded"}.get(result.status, "not solved to optimality")
        raise RescueLPError(
            f"P1-LP is {kind} (HiGHS status {result.status}: {result.message}) on {instance.describe()}; "
            f"{len(instance.reserved)} reserved tasks with total demand {instance.reserved.demand.sum():.4g} "
            f"on total capacity {instance.capacity.sum():.4g}"
        )
    J, K, L, T = instance.expected_profit.shape
    n_y = model.y_index.shape[1]
    y = np.zeros((J, K, L, T))
    y[tuple(model.y_index)] = np.clip(result.x[:n_y], 0.0, None)
    x = np.zeros((len(instance.reserved), T))
    x[tuple(model.x_index)] = np.clip(result.x[model.x_offset :], 0.0, 1.0)
    return LPSolution(
        y=y,
        x=x,
        value=float(-result.fun),
        build_seconds=model.build_seconds,
        solve_seconds=solve_seconds,
        model=model,
        iterations=int(result.get("nit") or 0),
        crossover_iterations=int(result.get("crossover_nit") or 0),
    )
