"""Dual prices of RESCUE's P1-LP capacity constraints (3b), for our bid-price policy — OURS, not the paper's.

P1-LP (``offline.uec.lp``) has one capacity row per server k and slot t:
Σ_l Σ_s S_l(s)·z_kl(t−s+1) + Σ_i x_i(t) ≤ 1 ("server k is busy at t with probability at most 1"). Its dual
price μ_k(t) ≥ 0 is what one more unit of that probability would add to OPT(LP): zero where the expected load
leaves k idle at t, positive where the LP has to turn arrivals away. By LP duality an assignment of profile l
started at t on k is worth taking in the LP only if R_jkl(t) ≥ Σ_s S_l(s)·μ_k(t+s−1) (its reduced cost), which
is the price :class:`offline.uec.heuristics.LPBidPricePolicy` charges.

``capacity_duals(instance)`` re-solves P1-LP with HiGHS (``offline.uec.values`` keeps the primal solution only)
and caches the prices by the instance's content (a digest of every array the LP reads), so the envs that
``offline.runner`` rebuilds for the same instance seed (tuning trials, ladder sets) solve it once per process.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict

import numpy as np
from scipy.optimize import linprog

from envs.uec.types import Instance
from offline.uec.lp import RescueLPError, build_lp

__all__ = ["capacity_duals", "solve_capacity_duals", "ssp_bid_prices"]


def solve_capacity_duals(instance: Instance) -> np.ndarray:
    """(K, T) μ_k(t) ≥ 0: HiGHS's dual values of P1-LP's capacity rows (3b) (uncached)."""
    model = build_lp(instance)
    result = linprog(model.c, A_ub=model.a_ub, b_ub=model.b_ub, bounds=model.bounds, method="highs-ipm")
    if result.status != 0 or result.x is None:
        raise RescueLPError(f"P1-LP not solved (HiGHS status {result.status}: {result.message}) on "
                            f"{instance.describe()}")
    K, T = instance.num_servers, instance.horizon
    yj, yt = model.y_index[0], model.y_index[3]
    first = np.unique(yj * T + yt).size  # rows of (3a) come first, one per (j, t) with a variable
    # linprog minimises −profit; the marginal of a ≤ row is ≤ 0, so −marginal is the profit per unit of capacity
    marginals = -np.asarray(result.ineqlin.marginals[first : first + K * T])
    return np.maximum(marginals, 0.0).reshape(K, T)


#: digest of the LP's inputs -> μ (K, T); least recently used first, at most ``_CACHE_SIZE`` entries
_CACHE: OrderedDict[str, np.ndarray] = OrderedDict()
_CACHE_SIZE = 64
_LOCK = threading.Lock()


def _digest(instance: Instance) -> str:
    """A digest of everything P1-LP is built from (two instances with the same digest have the same LP)."""
    res = instance.reserved
    h = hashlib.blake2b(digest_size=16)
    for array in (instance.expected_profit, instance.arrival_prob, instance.capacity, instance.duration_pmf,
                  res.server, res.start, res.end, res.demand):
        a = np.ascontiguousarray(array)
        h.update(str((a.dtype.str, a.shape)).encode())
        h.update(a.tobytes())
    return h.hexdigest()


def capacity_duals(instance: Instance) -> np.ndarray:
    """(K, T) μ_k(t) of :func:`solve_capacity_duals`, solved once per distinct instance and cached (read-only)."""
    key = _digest(instance)
    with _LOCK:
        cached = _CACHE.get(key)
        if cached is not None:
            _CACHE.move_to_end(key)
            return cached
    duals = solve_capacity_duals(instance)
    duals.setflags(write=False)
    with _LOCK:
        _CACHE[key] = duals
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return duals


def ssp_bid_prices(instance: Instance, duals: np.ndarray) -> np.ndarray:
    """(K, L, T) Σ_{s ≥ 1} S_l(s)·μ_k(t+s−1) (slots past the horizon cost 0): the capacity an assignment of
    profile l started at t on k is expected to hold, priced by ``duals`` (K, T)."""
    K, T = duals.shape
    survival = instance.duration_survival  # (L, D)
    D = survival.shape[1]
    padded = np.zeros((K, T + D))
    padded[:, :T] = duals
    windows = np.lib.stride_tricks.sliding_window_view(padded, D, axis=1)[:, :T]  # (K, T, D): μ_k(t..t+D−1)
    return np.einsum("ktd,ld->klt", windows, survival, optimize=True)
