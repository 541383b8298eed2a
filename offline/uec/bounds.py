"""Clairvoyant per-episode bounds of UEC-v0 (rung 5 of the reference ladder): the hindsight optimum.

UEC-v0 fixes an episode's randomness at reset: the arrival slots, their devices and one uniform per arrival
from which ``step`` reads the task's duration under whichever profile it is given
(``envs.common.clairvoyance.episode_draws``). Actions never draw random numbers, so an episode's profit is a deterministic
function of the action sequence, and the best profit any action sequence can earn on it is a finite
optimisation over the realised draws, solved here as a MILP (HiGHS through ``scipy.optimize.milp``).

Variables: x_v ∈ {0, 1} per (arrival i, server k, realised duration d) with d = d_il for some profile l and
positive realised profit (``dynamics.realised_profit``; it depends on (j, k, t, d) only, so profiles with
the same realised duration share one variable). Constraints:

* each arrival is assigned at most once:            Σ_{k,d} x_ikd ≤ 1;
* a server runs one retraining task at a time: for every arrival slot s, Σ_{v on k, t_v ≤ s < t_v + d_v} x_v ≤ 1;
* the reserved tasks stay satisfiable: for every Hall pair p of server k (``dynamics.HallPairs``),
  Σ_v reduction_p(v)·x_v ≤ slack_p, with ``dynamics.block_slack_reduction`` the capacity the block removes.

**Why it bounds every policy, per episode (``reserved_priority="preempt"``, the default).** Take any action
sequence. Its accepted tasks that were not pre-empted earn their realised profit and form a feasible point:
each arrival is decided once, a server is given only when idle, and a task is not pre-empted exactly when
its block fits every pair's remaining slack, so the pair slacks never go negative (slack only decreases).
Pre-empted tasks earn 0, and dropping them keeps the point feasible (all constraints are packings with
non-negative coefficients). So every policy's profit ≤ the MILP optimum. Conversely every feasible point is
played by accepting its tasks (each server idle, each block within its limit, no pre-emption), so the MILP is
the exact hindsight optimum; the tests check it equals brute force over all action sequences on tiny
instances. Under ``reserved_priority="mask"`` the env refuses more (the profile's longest duration must fit),
so the MILP is still a valid upper bound but no longer exact. If HiGHS stops at its time limit, the MILP's
dual bound (≥ the optimum) is returned, which is still valid.

**What it is not.** It knows every future arrival *and* every task's duration before choosing, so it is above
what even an arrival-clairvoyant scheduler can earn; it is *not* bounded by RESCUE's OPT(P1-LP). OPT(LP)
(Lemma 1) bounds the *expected* profit E_I[OPT(I)] of the scheduler that knows the arrivals but learns each
duration only when the task starts, hence the expected profit of every non-anticipative policy; it is one
number per instance, so a single episode may exceed it. RESCUE's "empirical competitive ratio" divides mean
realised profit by OPT(LP) (its Definition 1 divides by E_I[OPT(I)], which OPT(LP) upper-bounds).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

import gymnasium as gym
import numpy as np
from scipy import sparse
from scipy.optimize import Bounds, LinearConstraint, milp

from envs.common.clairvoyance import episode_draws
from envs.uec import dynamics
from envs.uec.env import UECEnv
from envs.uec.types import Instance

__all__ = ["BOUND_NAMES", "HindsightModel", "episode_bounds", "hindsight_model", "hindsight_optimum"]

#: Names of :func:`episode_bounds` (rows of the ladder): the LP relaxation of the hindsight MILP (a proven
#: per-episode bound) and RESCUE's OPT(P1-LP) (a bound on expected profit only, so a reference per episode).
BOUND_NAMES: tuple[str, ...] = ("clairvoyant_hindsight_lp_bound",)
#: Slack added to each reserved-pair constraint (tera-MAC): the env's own tolerance plus float round-off, so
#: the relaxation errs on the permissive side (a bound must never cut a schedule the env allows).
PAIR_TOLERANCE = dynamics.BLOCK_TOL + 1e-7
#: HiGHS time limit per episode (s); past it the dual bound is returned.
TIME_LIMIT_S = 20.0


class HindsightModel:
    """The hindsight MILP of one episode (see the module docstring), as arrays for ``scipy.optimize.milp``."""

    def __init__(self, profit: np.ndarray, arrival: np.ndarray, server: np.ndarray, start: np.ndarray,
                 duration: np.ndarray, constraints: sparse.csr_array, upper: np.ndarray) -> None:
        self.profit, self.arrival, self.server = profit, arrival, server
        self.start, self.duration = start, duration
        self.constraints, self.upper = constraints, upper

    @property
    def num_variables(self) -> int:
        return int(self.profit.size)

    def solve(self, relax: bool = False, time_limit: float = TIME_LIMIT_S) -> float:
        """The optimum (``relax``: of the LP relaxation, a weaker but still valid bound); the dual bound if
        HiGHS hits ``time_limit``."""
        n = self.num_variables
        return solve_packing(self.profit, self.constraints, self.upper, np.full(n, not relax), np.zeros(n), np.ones(n),
                             time_limit=time_limit, what="hindsight")


def solve_packing(objective: np.ndarray, constraints: sparse.csr_array, upper: np.ndarray, integral: np.ndarray,
                  lower_bounds: np.ndarray, upper_bounds: np.ndarray, *, time_limit: float, what: str) -> float:
    """max objective·x subject to constraints·x <= upper and the bounds (``integral`` variables integer) with
    HiGHS; the MILP's dual bound where HiGHS stops at its time limit with one (still a valid upper bound). A
    failed solve raises RuntimeError naming ``what``."""
    n = int(objective.size)
    if n == 0:
        return 0.0
    kind = "MILP" if integral.any() else "LP"
    result = milp(-objective, constraints=LinearConstraint(constraints, -np.inf, upper),
                  integrality=integral.astype(float), bounds=Bounds(lower_bounds, upper_bounds),
                  options={"time_limit": time_limit, "disp": False})
    if result.status not in (0, 1):
        raise RuntimeError(f"{what} {kind} failed: {result.message}")
    dual = getattr(result, "mip_dual_bound", None)
    if integral.any() and dual is not None and np.isfinite(dual):
        return float(max(-dual, -result.fun))  # the dual bound: valid even when HiGHS stops at a gap
    if result.status == 0:
        return float(-result.fun)
    raise RuntimeError(f"{what} {kind} stopped at its time limit without a dual bound: {result.message}")


def packing_constraints(instance: Instance, slots: np.ndarray, arrival: np.ndarray, server: np.ndarray,
                        start: np.ndarray, duration: np.ndarray) -> tuple[sparse.csr_array, np.ndarray]:
    """The hindsight model's constraints over assignment variables v = (arrival, server, start, duration):
    each arrival at most once, one task per server at every arrival slot (the interval graph's cliques), and
    the reserved tasks kept satisfiable (each server's Hall pairs, with :data:`PAIR_TOLERANCE`)."""
    K, n = instance.num_servers, int(arrival.size)
    cols = np.arange(n)
    blocks: list[sparse.csr_array] = [sparse.csr_array((np.ones(n), (arrival, cols)), shape=(slots.size, n))]
    upper: list[np.ndarray] = [np.ones(slots.size)]
    covers = (start[None, :] <= slots[:, None]) & (slots[:, None] < (start + duration)[None, :])  # (N, n)
    for k in range(K):
        blocks.append(sparse.csr_array((covers & (server == k)[None, :]).astype(float)))
        upper.append(np.ones(slots.size))
    cum = instance.cumulative_capacity
    for k, pairs in enumerate(instance.feasibility_pairs):
        if pairs.start.size == 0:
            continue
        matrix = np.zeros((pairs.start.size, n))
        for v in np.flatnonzero(server == k):
            matrix[:, v] = dynamics.block_slack_reduction(pairs, cum[k], int(start[v]), int(duration[v]))
        blocks.append(sparse.csr_array(matrix))
        upper.append(pairs.slack + PAIR_TOLERANCE)
    return sparse.vstack(blocks, format="csr"), np.concatenate(upper)


def hindsight_model(instance: Instance, slots: np.ndarray, devices: np.ndarray, durations: np.ndarray) -> HindsightModel:
    """Build the hindsight MILP of an episode from its realised draws (``envs.common.clairvoyance.episode_draws``)."""
    K = instance.num_servers
    rows_profit, rows_arrival, rows_server, rows_start, rows_duration = [], [], [], [], []
    for i, (t, j) in enumerate(zip(slots.tolist(), devices.tolist())):
        for k in range(K):
            for d in sorted(set(durations[i].tolist())):
                value = dynamics.realised_profit(instance, j, k, t, d)
                if value > 0:
                    rows_profit.append(value)
                    rows_arrival.append(i)
                    rows_server.append(k)
                    rows_start.append(t)
                    rows_duration.append(d)
    profit = np.array(rows_profit, dtype=float)
    arrival = np.array(rows_arrival, dtype=np.int64)
    server = np.array(rows_server, dtype=np.int64)
    start = np.array(rows_start, dtype=np.int64)
    duration = np.array(rows_duration, dtype=np.int64)
    constraints, upper = packing_constraints(instance, slots, arrival, server, start, duration)
    return HindsightModel(profit, arrival, server, start, duration, constraints, upper)


def hindsight_optimum(env: gym.Env, relax: bool = False) -> float:
    """The hindsight optimum of the episode ``env`` was just reset to (a UEC-v0 env, any wrappers)."""
    base = env.unwrapped
    if not isinstance(base, UECEnv):
        raise ValueError(f"hindsight_optimum needs a UEC-v0 env, got {type(base).__name__}")
    return hindsight_model(base.instance, *episode_draws(base)).solve(relax=relax)


_ENVS: OrderedDict[tuple[str, int], gym.Env] = OrderedDict()
_ENVS_LOCK = threading.Lock()


def _episode_env(env_kwargs: dict[str, Any], instance_seed: int) -> gym.Env:
    """A UEC-v0 env on instance ``instance_seed`` (a few kept, so RESCUE's cached LP is solved once)."""
    kwargs = {**env_kwargs, "instance_seed": instance_seed, "resample_instance": False}
    key = (repr(sorted(kwargs.items())), instance_seed)
    with _ENVS_LOCK:
        env = _ENVS.pop(key, None)
        if env is None:
            env = gym.make("UEC-v0", **kwargs)
        _ENVS[key] = env
        while len(_ENVS) > 4:
            _ENVS.popitem(last=False)
    return env


def episode_bounds(env_kwargs: dict[str, Any], instance_seed: int, reset_seed: int) -> dict[str, float]:
    """``SPEC.bounds`` of UEC-v0: the LP relaxation of the episode's hindsight MILP (≥ the hindsight optimum,
    so a per-episode bound on every policy; the exact MILP takes 1-50 s per episode at the default sizes,
    its relaxation ~0.05 s and is 1-2 % above it). OPT(P1-LP) of the instance (a bound on the *expected* profit
    of non-anticipative policies only) comes from the hook's own ``lp_bound`` column (``SPEC.bound_columns``)."""
    env = _episode_env(env_kwargs, instance_seed)
    env.reset(seed=reset_seed)
    return {"clairvoyant_hindsight_lp_bound": hindsight_optimum(env, relax=True)}
