"""RESCUE's offline stage: P1-LP, then the activation/baseline value functions (Alg. 2, eqs. 4–6).

``rescue_solution(instance)`` is the one entry point (the env's ``lp_features``, the policies, the
training code and evaluate.py call it); it solves the LP once per instance and caches the result for as
long as the instance lives (``Instance`` is a frozen dataclass with ``eq=False``, hashable by identity).

Time is 0-based: ``activation[..., t]`` is the paper's A_jkl(t + 1) and ``baseline[:, t]`` its B_k(t + 1);
``baseline[:, T] = 0`` is the paper's B_k(T + 1) = 0.
"""

from __future__ import annotations

import threading
import time
import weakref
from dataclasses import dataclass

import numpy as np

from envs.uec.types import Instance
from offline.uec.lp import LPSolution, solve_lp


@dataclass(frozen=True, eq=False)
class RescueSolution:
    """RESCUE's offline stage for one instance.

    Attributes:
        y: (J, K, L, T) y*_jkl(t), the LP's joint probability that j arrives at t and is sent to (k, l).
        x: (n_reserved, T) x*_i(t), the LP's share of c_k(t) given to reserved task i (0 outside its window;
            its server is ``instance.reserved.server[i]``).
        activation: (J, K, L, T) A_jkl(t) = R_jkl(t) + Σ_{d ≥ 1} Pr(d_l = d)·B_k(t + d)   (eq. 4).
        baseline: (K, T + 1) B_k(t) = B_k(t+1) + Σ_{j,l} y*_jkl(t)·max(A_jkl(t) − B_k(t+1), 0)   (eq. 5);
            ``baseline[:, T] = 0``.
        lp_bound: OPT(P1-LP), an upper bound on the expected offline optimum (Lemma 1).
        value_bound: Σ_k B_k(0) (the paper's Σ_k B_k(1)): RESCUE's expected profit when no reserved task
            ever masks its choice (Theorem 1: ≥ ½·OPT(LP)).
        lp_build_seconds, lp_solve_seconds, value_seconds: wall times of the three offline steps.
        lp_variables, lp_constraints, lp_nonzeros: size of the LP that was solved.
    """

    y: np.ndarray
    x: np.ndarray
    activation: np.ndarray
    baseline: np.ndarray
    lp_bound: float
    value_bound: float
    lp_build_seconds: float
    lp_solve_seconds: float
    value_seconds: float
    lp_variables: int
    lp_constraints: int
    lp_nonzeros: int

    @property
    def offline_seconds(self) -> float:
        """Total offline time (LP build + LP solve + value functions)."""
        return self.lp_build_seconds + self.lp_solve_seconds + self.value_seconds

    @property
    def competitive_bound(self) -> float:
        """Σ_k B_k(1) / OPT(LP), which Theorem 1 says is ≥ ½ (1.0 when the LP is 0)."""
        return self.value_bound / self.lp_bound if self.lp_bound > 0 else 1.0


def value_functions(instance: Instance, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Backward induction of eqs. (4)–(6): (activation (J, K, L, T), baseline (K, T + 1)).

    One vectorised step per slot over all (j, k, l); B_k(T) = 0 (0-based) closes the recursion and
    B_k(t + d) = 0 for t + d ≥ T, so eq. (6) is the first step of the loop.
    """
    profit = instance.expected_profit  # (J, K, L, T)
    J, K, L, T = profit.shape
    pmf = instance.duration_pmf  # (L, D): Pr(d_l = d), d = 1..D
    D = pmf.shape[1]
    profit_t = np.ascontiguousarray(profit.transpose(3, 0, 1, 2))  # (T, J, K, L)
    y_t = np.ascontiguousarray(y.transpose(3, 0, 1, 2))
    activation_t = np.empty_like(profit_t)
    padded = np.zeros((K, T + 1 + D))  # padded[:, t] = B_k(t), zero from T on
    for t in range(T - 1, -1, -1):
        future = padded[:, t + 1 : t + 1 + D] @ pmf.T  # (K, L): Σ_d Pr(d_l = d)·B_k(t + d)
        activation_t[t] = profit_t[t] + future[None]
        wait = padded[:, t + 1]
        gain = np.maximum(activation_t[t] - wait[None, :, None], 0.0)
        padded[:, t] = wait + np.einsum("jkl,jkl->k", y_t[t], gain)
    return np.ascontiguousarray(activation_t.transpose(1, 2, 3, 0)), padded[:, : T + 1].copy()


def compute_rescue_solution(instance: Instance, formulation: str = "aggregated", method: str = "highs-ipm") -> RescueSolution:
    """Solve P1-LP and the value functions for ``instance`` (uncached; see :func:`rescue_solution`)."""
    lp: LPSolution = solve_lp(instance, formulation=formulation, method=method)
    start = time.perf_counter()
    activation, baseline = value_functions(instance, lp.y)
    value_seconds = time.perf_counter() - start
    for array in (lp.y, lp.x, activation, baseline):
        array.setflags(write=False)
    return RescueSolution(
        y=lp.y,
        x=lp.x,
        activation=activation,
        baseline=baseline,
        lp_bound=lp.value,
        value_bound=float(baseline[:, 0].sum()),
        lp_build_seconds=lp.build_seconds,
        lp_solve_seconds=lp.solve_seconds,
        value_seconds=value_seconds,
        lp_variables=lp.model.num_variables,
        lp_constraints=lp.model.num_constraints,
        lp_nonzeros=lp.model.nnz,
    )


_CACHE: weakref.WeakKeyDictionary[Instance, RescueSolution] = weakref.WeakKeyDictionary()
_CACHE_LOCK = threading.Lock()


def rescue_solution(instance: Instance) -> RescueSolution:
    """RESCUE's offline stage for ``instance``, solved once and cached while the instance lives.

    Raises :class:`offline.uec.lp.RescueLPError` (naming the instance) if the LP is infeasible or fails.
    """
    if not isinstance(instance, Instance):
        raise ValueError(f"instance must be an envs.uec.types.Instance, got {type(instance).__name__}")
    with _CACHE_LOCK:
        cached = _CACHE.get(instance)
    if cached is not None:
        return cached
    solution = compute_rescue_solution(instance)
    with _CACHE_LOCK:
        return _CACHE.setdefault(instance, solution)
