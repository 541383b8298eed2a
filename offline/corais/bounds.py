"""Rung 5 of the CoRaiS ladder: a proven lower bound on each instance's optimum and the best dispatch known.

``instance_bounds(instance, milp_time_limit=...)`` returns

- ``lower_bound`` (proven): max of the backlog-only bound (``envs.corais.dynamics.backlog_bound``), the
  fluid bound (``offline.corais.greedy.fluid_bound``) and HiGHS's dual bound of the time-limited MILP
  (``offline.corais.milp``). Each is a lower bound on min_pi R(pi): the backlog bound because every term of
  T_j only grows when requests are added; the fluid bound by weak LP duality (its docstring); the dual
  bound because branch and bound only reports a bound that every unexplored node's LP relaxation respects,
  and the MILP is an exact model of min_pi R(pi) (``build_milp``'s docstring), up to HiGHS's feasibility
  tolerances (~1e-6 relative; the tests allow that much). So no dispatch, of any policy, costs less.
- ``best_known`` (a reference, not a bound): the least cost of any dispatch found for the instance: the
  MILP's incumbent, every result our search (``offline.corais.search``) recorded in this process
  (:func:`record_incumbent`), and, when nothing was recorded, a seeded iteration-budget search. It is an
  upper bound on the optimum, so ``best_known / lower_bound - 1`` is the proven gap of the best answer.

MILP solves are cached per (instance, time limit) in this process (:func:`solve_milp_cached`), so the
ladder's ``milp_10s`` row and the bound of the same instance share one solve.
"""

from __future__ import annotations

import hashlib
import math
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from envs.corais.dynamics import backlog_bound, dispatch_cost
from envs.corais.types import Instance
from offline.corais.greedy import fluid_bound
from offline.corais.milp import SolveResult, solve_exact
from offline.corais.search import iterated_local_search

__all__ = ["BEST_KNOWN_ITERATIONS", "InstanceBounds", "brute_force", "instance_bounds", "instance_key", "record_incumbent",
           "recorded_incumbent", "solve_milp_cached"]

#: Kicks of the fallback search of ``best_known`` when no search result was recorded for the instance.
BEST_KNOWN_ITERATIONS = 100
_CACHE_SIZE = 512
_MILP: OrderedDict[tuple[str, float, float], SolveResult] = OrderedDict()
_INCUMBENTS: OrderedDict[str, float] = OrderedDict()


def instance_key(instance: Instance) -> str:
    """A digest of the instance's cost tables (equal tables = equal costs for every dispatch)."""
    tab = instance.tables
    digest = hashlib.sha1()
    for array in (tab.cmp, tab.trn, tab.res, tab.src, tab.workload):
        digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()


def _remember(cache: OrderedDict, key: object, value: object) -> None:
    cache[key] = value
    cache.move_to_end(key)
    while len(cache) > _CACHE_SIZE:
        cache.popitem(last=False)


def solve_milp_cached(instance: Instance, time_limit: float, mip_rel_gap: float = 1e-4) -> SolveResult:
    """``offline.corais.milp.solve_exact`` once per (instance, time limit, gap) in this process."""
    key = (instance_key(instance), float(time_limit), float(mip_rel_gap))
    if key not in _MILP:
        _remember(_MILP, key, solve_exact(instance, time_limit=time_limit, mip_rel_gap=mip_rel_gap))
        if _MILP[key].has_incumbent:
            record_incumbent(instance, _MILP[key].cost)
    return _MILP[key]


def record_incumbent(instance: Instance, cost: float) -> None:
    """Remember a dispatch cost found for ``instance`` (the least one is kept)."""
    key = instance_key(instance)
    _remember(_INCUMBENTS, key, min(float(cost), _INCUMBENTS.get(key, math.inf)))


def recorded_incumbent(instance: Instance) -> float:
    """The least cost recorded for ``instance`` in this process (inf: none)."""
    return _INCUMBENTS.get(instance_key(instance), math.inf)


@dataclass(frozen=True)
class InstanceBounds:
    """The proven lower bound (and its parts) and the best dispatch cost known for one instance."""

    lower_bound: float
    best_known: float
    backlog_bound: float
    fluid_bound: float
    milp_dual_bound: float  # nan: no MILP solved
    milp_cost: float  # the MILP incumbent's cost (nan: none)
    milp_optimal: bool

    @property
    def proven_gap(self) -> float:
        """best_known / lower_bound - 1: how far the best answer known can be from the optimum."""
        return self.best_known / self.lower_bound - 1 if self.lower_bound > 0 else math.nan


def instance_bounds(instance: Instance, *, milp_time_limit: float | None = 10.0, seed: int = 0) -> InstanceBounds:
    """The bounds of the module docstring; ``milp_time_limit=None`` leaves the MILP out (large scales)."""
    backlog = backlog_bound(instance)
    fluid = fluid_bound(instance)
    dual, milp_cost, optimal = math.nan, math.nan, False
    if milp_time_limit is not None:
        solve = solve_milp_cached(instance, milp_time_limit)
        dual = solve.bound if solve.bound is not None and np.isfinite(solve.bound) else math.nan
        if solve.has_incumbent:
            milp_cost, optimal = solve.cost, bool(solve.optimal)
    lower = max(backlog, fluid, dual if np.isfinite(dual) else -math.inf)
    best = recorded_incumbent(instance)
    if not np.isfinite(best):
        found = iterated_local_search(instance, time_limit=None, max_iterations=BEST_KNOWN_ITERATIONS, seed=seed)
        record_incumbent(instance, found.cost)
        best = found.cost
    if np.isfinite(milp_cost):
        best = min(best, milp_cost)
    best = float(best)
    return InstanceBounds(lower, best, backlog, fluid, dual, milp_cost, optimal)


def brute_force(instance: Instance) -> tuple[np.ndarray, float]:
    """The optimal dispatch by enumerating all Q^Z dispatches (tiny instances only: Q^Z <= 2e6)."""
    z, q = instance.tables.cmp.shape
    if q**z > 2_000_000:
        raise ValueError(f"Q^Z = {q}^{z} dispatches is too many to enumerate (limit 2e6)")
    grid = np.indices((q,) * z).reshape(z, -1).T
    costs = dispatch_cost(instance, grid)
    best = int(np.argmin(costs))
    return grid[best], float(costs[best])
