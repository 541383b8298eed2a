"""Online (non-anticipative) reference policies for UEC-v0 — OURS, not the RESCUE paper's (issue 35).

They see what every online policy may see (``offline.protocol``): the instance (its distributions), the present
state (``UECEnv.present_state()``: busy-until per server, the reserved tasks' interval slack, the blocks so far)
and the past. Futures are sampled from the instance's known distributions with the policy's own rng, seeded by
``reset(env, seed)`` on a stream of its own (never the env's: ``default_rng(seed)`` would replay the env's draws).

| name                   | rule                                                                                      |
|------------------------|-------------------------------------------------------------------------------------------|
| ``lp_resolve``           | ``lp_bid_price`` with its bid prices re-solved every ``every`` slots: P1-LP over the next   |
|                        | ``window`` slots from the present state (servers held until busy-until, reserved demand left) |
| ``uec_rollout``          | rollout (Bertsekas) over ``futures`` sampled futures, base policy ``lp_bid_price``: reject, the |
|                        | base's action and its ``width`` best safe SSPs are each followed by the base policy on the  |
|                        | same sampled futures (common random numbers); the best mean profit is taken               |
| ``uec_rollout_preempt``  | the same, also trying the ``width`` best SSPs that reserved work may pre-empt (any idle     |
|                        | server under ``reserved_priority="preempt"``; a cut task earns nothing), simulated faithfully |

The simulator (:class:`Simulator`, numba) reproduces UECEnv's dynamics exactly: realised profit (eq. 1 with the
budget), blocks, the reserved tasks' interval slack and the longest feasible block, pre-emption at the block
limit (tests/uec/test_uec_online.py checks it against the env on realised draws). Measured numbers: docs/envs/uec.md
("Online references"); ``python -m benchmarks.uec_online`` reproduces them.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import gymnasium as gym
import numba
import numpy as np
from scipy import sparse
from scipy.optimize import linprog

from envs.uec.kernels import UNBOUNDED, pair_reach, pair_reduction
from envs.uec.types import Instance
from offline.ladder_spec import tuned_params
from offline.registry import register_policy
from offline.uec.baselines import safe_mask
from offline.uec.duals import ssp_bid_prices
from offline.uec.heuristics import LP_BID_DEFAULTS, LPBidPricePolicy, _by_time
from offline.uec.lp import dominated_profiles
from offline.uec.policies import ENV_ID, UECPolicy

__all__ = [
    "RESOLVE_DEFAULTS",
    "ROLLOUT_DEFAULTS",
    "LPResolvePolicy",
    "RolloutPolicy",
    "Simulator",
    "resolved_duals",
]

_PACKAGE = Path(__file__).parent
#: Action code of the simulator: "the base policy decides" (SSP indices are >= 0, reject is -1).
BASE = -2
#: Entropy added to the reset seed so the policy's stream never equals the env's (which uses the seed alone).
_STREAM = 35_001
#: Defaults of the rollouts (tuned on offline.partition.tuning_set, see docs/envs/uec.md "Online references").
ROLLOUT_DEFAULTS: dict[str, Any] = {"futures": 512, "width": 16, "horizon": None}
#: Defaults of lp_resolve: re-solve every ``every`` slots.
RESOLVE_DEFAULTS: dict[str, Any] = {"every": 10, "window": 60}


def _policy_rng(seed: int | None) -> np.random.Generator:
    """The policy's own stream: independent of the env's ``np_random`` even when both get the same seed."""
    return np.random.default_rng(None if seed is None else np.random.SeedSequence([int(seed), _STREAM]))


# --- the compiled simulator --------------------------------------------------------------------

@numba.njit(cache=True)
def _limit(cum: np.ndarray, start: np.ndarray, end: np.ndarray, slack: np.ndarray, t: int) -> int:
    """Longest feasible block from ``t`` on one server (``dynamics.max_feasible_block`` on its current slack)."""
    reach = UNBOUNDED
    for p in range(start.shape[0]):
        reach = min(reach, pair_reach(cum, start[p], end[p], slack[p], t))
    return UNBOUNDED if reach == UNBOUNDED else reach - 1 - t


@numba.njit(cache=True)
def _play(t_start: int, forced: np.ndarray, devices: np.ndarray, durations: np.ndarray, busy: np.ndarray,
          slack: np.ndarray, mask_rule: bool, num_profiles: int, cum: np.ndarray, pair_start: np.ndarray,
          pair_end: np.ndarray, net: np.ndarray, max_duration: np.ndarray, budget: np.ndarray, wgap: np.ndarray,
          perf_scale: np.ndarray, perf_rate: np.ndarray) -> float:
    """Profit of slots ``t_start + h`` (h < len(devices)) from the state (``busy``, ``slack``, changed in place):
    arrival of device ``devices[h]`` (-1: none) decided by ``forced[h]`` (SSP index, -1 reject, ``BASE``: the
    bid-price rule on ``net``), running ``durations[h, l]`` slots under profile l, cut at the block limit."""
    total = 0.0
    n_servers = busy.shape[0]
    for h in range(devices.shape[0]):
        j = devices[h]
        if j < 0:
            continue
        s = t_start + h
        action = forced[h]
        limit = -1
        if action == BASE:  # the base policy: the safe SSP with the highest positive net score, lowest index
            action, best = -1, 0.0
            for k in range(n_servers):
                if busy[k] > s:
                    continue
                lim = -1
                for m in range(num_profiles):
                    score = net[s, j, k * num_profiles + m]
                    if score > best:
                        if lim < 0:
                            lim = _limit(cum[k], pair_start[k], pair_end[k], slack[k], s)
                        if lim >= max_duration[m]:
                            best, action, limit = score, k * num_profiles + m, lim
        if action < 0:
            continue
        k, m = action // num_profiles, action % num_profiles
        if busy[k] > s:
            continue  # infeasible: the env carries it out as a reject
        if limit < 0:
            limit = _limit(cum[k], pair_start[k], pair_end[k], slack[k], s)
        if mask_rule and limit < max_duration[m]:
            continue  # unsafe under reserved_priority="mask": a reject
        d = durations[h, m]
        paid = True
        if d > limit:  # reserved work reclaims the server: the task is cut and earns nothing
            d, paid = limit, False
        free_from = s + d
        for p in range(pair_start.shape[1]):
            slack[k, p] -= pair_reduction(cum[k], pair_start[k, p], pair_end[k, p], s, free_from)
        busy[k] = free_from
        if paid and d <= budget[j, k]:
            work = cum[k, free_from] - cum[k, s]
            total += wgap[j, s] * (perf_scale[j] * math.log1p(perf_rate[j] * work))
    return total


@numba.njit(cache=True)
def _rollout(candidates: np.ndarray, t0: int, devices: np.ndarray, durations: np.ndarray, busy0: np.ndarray,
             slack0: np.ndarray, mask_rule: bool, num_profiles: int, cum: np.ndarray, pair_start: np.ndarray,
             pair_end: np.ndarray, net: np.ndarray, max_duration: np.ndarray, budget: np.ndarray, wgap: np.ndarray,
             perf_scale: np.ndarray, perf_rate: np.ndarray) -> np.ndarray:
    """(C, N) profit of each candidate first action followed by the base policy, on each of N futures
    (``devices`` (N, H), ``durations`` (N, H, L); slot 0 is the pending arrival, the same in every future)."""
    n_cand, n_fut, horizon = candidates.shape[0], devices.shape[0], devices.shape[1]
    out = np.empty((n_cand, n_fut))
    forced = np.full(horizon, BASE, np.int64)
    busy = busy0.copy()
    slack = slack0.copy()
    for c in range(n_cand):
        forced[0] = candidates[c]
        for n in range(n_fut):
            busy[:] = busy0
            slack[:, :] = slack0
            out[c, n] = _play(t0, forced, devices[n], durations[n], busy, slack, mask_rule, num_profiles, cum,
                              pair_start, pair_end, net, max_duration, budget, wgap, perf_scale, perf_rate)
    return out


class Simulator:
    """UEC-v0's dynamics from a present state, for sampled (or, in tests, realised) futures; base policy
    ``lp_bid_price`` with bid prices ``price`` (K, L, T) (its tuned ones by default)."""

    def __init__(self, instance: Instance, price: np.ndarray, mask_rule: bool = False) -> None:
        K, L, T = instance.num_servers, instance.num_profiles, instance.horizon
        profit = instance.expected_profit
        self.instance, self.mask_rule = instance, bool(mask_rule)
        self.num_profiles, self.horizon = L, T
        self.net = _by_time(np.where(profit > 0, profit - price[None], -1.0))  # (T, J, K·L), as lp_bid_price
        pairs = instance.feasibility_pairs
        P = max(1, max(p.start.size for p in pairs))
        self.pair_start = np.zeros((K, P), np.int64)
        self.pair_end = np.zeros((K, P), np.int64)
        self._pad = np.full((K, P), np.inf)  # padding pairs never bind (pair_reach: infinite slack)
        for k, p in enumerate(pairs):
            self.pair_start[k, : p.start.size], self.pair_end[k, : p.end.size] = p.start, p.end
        self.cum = np.ascontiguousarray(instance.cumulative_capacity, np.float64)
        self.max_duration = np.asarray(instance.max_duration, np.int64)
        self.budget = np.asarray(instance.budget, np.int64)
        self.wgap = np.ascontiguousarray(instance.weight[:, None] * instance.accuracy_gap)
        self.perf_scale = np.asarray(instance.perf_scale, np.float64)
        self.perf_rate = np.asarray(instance.perf_rate, np.float64)
        self.duration_cdf = np.cumsum(instance.duration_pmf, axis=1)
        self.duration_cdf[:, -1] = 1.0
        self.arrival_cdf = np.cumsum(instance.arrival_prob, axis=1)
        del T

    def slack(self, pair_slack: list[np.ndarray]) -> np.ndarray:
        """(K, P) the env's per-server pair slack, padded with pairs that never bind."""
        out = self._pad.copy()
        for k, s in enumerate(pair_slack):
            out[k, : s.size] = s
        return out

    def durations(self, uniforms: np.ndarray) -> np.ndarray:
        """(..., L) the duration each profile runs for the uniforms (the env's ``searchsorted`` draw)."""
        return np.stack([cdf.searchsorted(uniforms, side="right") + 1 for cdf in self.duration_cdf], axis=-1)

    def sample(self, rng: np.random.Generator, t0: int, device: int, futures: int, length: int
               ) -> tuple[np.ndarray, np.ndarray]:
        """``futures`` futures of ``length`` slots from the pending arrival (``device`` at ``t0``): devices
        (N, length) (-1: no arrival) and durations (N, length, L), from the instance's distributions."""
        u = rng.random((futures, length - 1))
        cdf = self.arrival_cdf[t0 + 1 : t0 + length]  # (length - 1, J)
        drawn = (u[:, :, None] >= cdf[None]).sum(axis=2)
        devices = np.empty((futures, length), np.int64)
        devices[:, 0] = device
        devices[:, 1:] = np.where(drawn < cdf.shape[1], drawn, -1)
        return devices, self.durations(rng.random((futures, length)))

    def rollout(self, candidates: np.ndarray, t0: int, busy: np.ndarray, slack: np.ndarray, devices: np.ndarray,
                durations: np.ndarray) -> np.ndarray:
        """(C, N) profit of each candidate (SSP index or -1) then the base policy, on each future."""
        return _rollout(np.asarray(candidates, np.int64), int(t0), devices, durations,
                        np.asarray(busy, np.int64), slack, self.mask_rule, self.num_profiles, self.cum,
                        self.pair_start, self.pair_end, self.net, self.max_duration, self.budget, self.wgap,
                        self.perf_scale, self.perf_rate)

    def play(self, t_start: int, busy: np.ndarray, slack: np.ndarray, devices: np.ndarray, durations: np.ndarray,
             forced: np.ndarray | None = None) -> float:
        """Profit of one future (devices (H,), durations (H, L)) from the state, decided by ``forced`` (H,)
        (SSP index, -1 reject, ``BASE``; all ``BASE`` by default). ``busy`` and ``slack`` are not changed."""
        forced = np.full(devices.shape[0], BASE, np.int64) if forced is None else np.asarray(forced, np.int64)
        return float(_play(int(t_start), forced, np.asarray(devices, np.int64), np.asarray(durations, np.int64),
                           np.array(busy, np.int64), np.array(slack, np.float64), self.mask_rule,
                           self.num_profiles, self.cum, self.pair_start, self.pair_end, self.net,
                           self.max_duration, self.budget, self.wgap, self.perf_scale, self.perf_rate))


def _check_int(name: str, value: Any, low: int, allow_none: bool = False) -> int | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        allowed = f"an integer >= {low}" + (" or None" if allow_none else "")
        raise ValueError(f"{name}={value!r} is invalid: expected {allowed}")
    return int(value)


def _lp_price(instance: Instance, scale: float | None) -> tuple[float, np.ndarray]:
    """lp_bid_price's scale θ (tuned.yaml unless given) and its prices θ·Σ_s S_l(s)·μ_k(t+s−1) (K, L, T)."""
    theta = tuned_params(_PACKAGE, "lp_bid_price", LP_BID_DEFAULTS)["scale"] if scale is None else scale
    return float(theta), LPBidPricePolicy(theta).cost(instance)


class _OnlinePolicy(UECPolicy):
    """Base of the online references: keeps the policy's view (for ``present_state()``), seeds its own stream."""

    def __init__(self, scale: float | None) -> None:
        super().__init__()
        if scale is not None and (isinstance(scale, bool) or not np.isfinite(scale) or scale < 0):
            raise ValueError(f"scale={scale!r} is invalid: expected a finite number >= 0 (lp_bid_price's θ) or None")
        self.scale = scale
        self._view: Any = None

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        super().reset(env, seed)
        self._rng = _policy_rng(seed)
        self._view = env.unwrapped
        self._mask_rule = getattr(self._view, "reserved_priority", "preempt") == "mask"


class RolloutPolicy(_OnlinePolicy):
    """Rollout over sampled futures with base policy lp_bid_price (reads the instance and ``present_state()``).

    Candidates: reject, the base's action and the ``width`` safe SSPs with the best net score R − price (with
    ``preempt``, also the ``width`` best SSPs the mask allows but reserved work may pre-empt). Each is followed by
    the base policy on the same ``futures`` sampled futures of ``horizon`` slots (None: to the end); the highest
    mean profit wins, ties to the base's action (listed first)."""

    name = "uec_rollout"

    def __init__(self, futures: int = 512, width: int = 16, horizon: int | None = None, preempt: bool = False,
                 scale: float | None = None) -> None:
        super().__init__(scale)
        self.futures = _check_int("futures", futures, 1)
        self.width = _check_int("width", width, 0)
        self.horizon = _check_int("horizon", horizon, 1, allow_none=True)
        if not isinstance(preempt, bool):
            raise ValueError(f"preempt={preempt!r} is invalid: expected True or False")
        self.preempt = preempt
        if preempt:
            self.name = "uec_rollout_preempt"

    def _prepare(self, instance: Instance) -> None:
        _, price = _lp_price(instance, self.scale)
        self._sims = {rule: Simulator(instance, price, rule) for rule in (False, True)}

    def candidates(self, info: dict[str, Any]) -> np.ndarray:
        """SSP indices (-1 = reject) the rollout compares at this decision, the base's action first."""
        sim = self._sims[False]
        t, j = info["time"], info["device"]
        net = sim.net[t, j]
        safe = safe_mask(info)[1:] > 0
        allowed = np.asarray(info["action_mask"])[1:] > 0
        useful = net > -1.0  # R_jkl(t) > 0 (lp_bid_price writes -1 elsewhere)
        scores = np.where(safe, net, -1.0)
        best = int(np.argmax(scores))
        base = best if scores[best] > 0 else -1
        order = np.argsort(-np.where(safe & useful, net, -np.inf), kind="stable")
        chosen = [base, -1] + [int(a) for a in order[: self.width] if safe[a] and useful[a]]
        if self.preempt and not self._mask_rule:
            risky = allowed & ~safe & useful
            chosen += [int(a) for a in np.argsort(-np.where(risky, net, -np.inf), kind="stable")[: self.width]
                       if risky[a]]
        return np.array(list(dict.fromkeys(chosen)), np.int64)

    def candidate_values(self, info: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        """(actions (C,), values (C,)): the env actions compared at this decision (0 = reject, the base's first)
        and each one's mean profit to the end over the sampled futures (NaN when there is a single candidate,
        which is then not simulated). :meth:`act` takes the first maximum; learners imitate both
        (``agents.uec.dagger``)."""
        candidates = self.candidates(info)
        if candidates.size == 1:
            return candidates + 1, np.full(1, np.nan)
        sim = self._sims[self._mask_rule]
        state = self._view.present_state()
        t = state["time"]
        length = sim.horizon - t if self.horizon is None else min(sim.horizon - t, 1 + self.horizon)
        devices, durations = sim.sample(self._rng, t, info["device"], self.futures, length)
        values = sim.rollout(candidates, t, state["busy_until"], sim.slack(state["pair_slack"]), devices, durations)
        return candidates + 1, values.mean(axis=1)

    def act(self, obs: Any, info: dict[str, Any]) -> int:
        actions, values = self.candidate_values(info)
        return int(actions[0]) if actions.size == 1 else int(actions[int(np.argmax(values))])


# --- lp_resolve: P1-LP re-solved from the present state -----------------------------------------------

def _served_before(instance: Instance, blocks: list[tuple[int, int, int]], t: int) -> np.ndarray:
    """(n_reserved,) demand EDF has served to each reserved task before slot ``t``, given the retraining blocks."""
    res = instance.reserved
    served = np.zeros(len(res))
    for k in np.unique(res.server):
        available = instance.capacity[k, :t].copy()
        for server, start, duration in blocks:
            if server == k:
                available[start : min(start + duration, t)] = 0.0
        idx = np.flatnonzero(res.server == k)
        left = res.demand[idx].astype(float).copy()
        for s in range(min(t, int(res.end[idx].max()) + 1)):
            cap = available[s]
            live = idx[(res.start[idx] <= s) & (res.end[idx] >= s)]
            for i in live[np.lexsort((res.start[live], res.end[live]))]:  # earliest deadline first
                if cap <= 0:
                    break
                pos = int(np.searchsorted(idx, i))
                give = min(cap, left[pos])
                left[pos] -= give
                cap -= give
        served[idx] = res.demand[idx] - left
    return served


def resolved_duals(instance: Instance, t: int, busy_until: np.ndarray, served: np.ndarray, exclude_now: bool = False,
                   window: int | None = None) -> np.ndarray:
    """(K, T) capacity duals μ_k(t') of P1-LP re-solved over the slots t ≤ t' < t + ``window`` (None: to the end;
    μ is 0 outside).

    The remaining problem: arrivals from ``t`` on (with ``exclude_now``, none at ``t``: the pending arrival is the
    one being priced, and putting it in the LP would make its own reduced cost zero),
    server k held by its running task until ``busy_until[k]`` (capacity rows 0 there), reserved task i still
    needing φ_i − ``served[i]``, less what its window offers after the LP's last slot. Same formulation as
    ``offline.uec.lp`` (aggregated z, dominated profiles dropped), built on the slice."""
    T = instance.horizon
    stop = T if window is None else min(T, t + window)
    profit = instance.expected_profit[..., t:stop]  # (J, K, L, T')
    J, K, L, Tr = profit.shape
    arrival = instance.arrival_prob[t:stop].copy()  # (T', J)
    if exclude_now:
        arrival[0] = 0.0
    survival = instance.duration_survival
    D = survival.shape[1]
    useful = (profit > 0) & (arrival.T[:, None, None, :] > 0) & ~dominated_profiles(profit, survival)
    yj, yk, yl, yt = np.nonzero(useful)
    n_y = yj.size
    res = instance.reserved
    cum = instance.cumulative_capacity
    # what must be served inside the LP's slots: the need left, less the capacity of the window after them
    later = np.maximum(cum[res.server, res.end + 1] - cum[res.server, np.minimum(np.maximum(res.start, stop), res.end + 1)],
                       0.0)
    need = np.maximum(res.demand - served - later, 0.0)
    ends = np.minimum(res.end, stop - 1)
    starts = np.maximum(res.start, t)
    ids = np.flatnonzero((need > 1e-9) & (ends >= starts))
    window_len = (ends[ids] - starts[ids] + 1).astype(np.int64)
    xi = np.repeat(ids, window_len)
    xt = starts[xi] - t + (np.arange(xi.size) - np.repeat(np.cumsum(window_len) - window_len, window_len))
    n_x = xi.size
    z_off, x_off = n_y, n_y + K * L * Tr
    rows, cols, vals, rhs = [], [], [], []
    jt_unique, jt_row = np.unique(yj * Tr + yt, return_inverse=True)
    rows.append(jt_row)
    cols.append(np.arange(n_y))
    vals.append(np.ones(n_y))
    rhs.append(arrival[jt_unique % Tr, jt_unique // Tr])
    row = jt_unique.size
    kk, ll, tp, ss = np.meshgrid(np.arange(K), np.arange(L), np.arange(Tr), np.arange(1, D + 1), indexing="ij")
    coef = survival[ll, ss - 1]
    keep = (coef > 0) & (tp + ss - 1 < Tr)
    kk, ll, tp, ss, coef = kk[keep], ll[keep], tp[keep], ss[keep], coef[keep]
    rows += [row + kk * Tr + tp + ss - 1, row + res.server[xi] * Tr + xt]
    cols += [z_off + (kk * L + ll) * Tr + tp, x_off + np.arange(n_x)]
    vals += [coef, np.ones(n_x)]
    free = (np.arange(t, stop)[None, :] >= np.asarray(busy_until)[:, None]).astype(float)  # (K, T')
    rhs.append(free.reshape(-1))
    cap_row = row
    row += K * Tr
    # a reserved task's remaining need, capped by what its window can still give (keeps the LP feasible)
    room = np.array([instance.capacity[res.server[i], starts[i] : ends[i] + 1][free[res.server[i], starts[i] - t:
                     ends[i] + 1 - t] > 0].sum() for i in ids])
    rows.append(row + np.searchsorted(ids, xi))
    cols.append(x_off + np.arange(n_x))
    vals.append(-instance.capacity[res.server[xi], xt + t])
    rhs.append(-np.minimum(need[ids], room))
    row += ids.size
    rows += [row + (yk * L + yl) * Tr + yt, row + np.arange(K * L * Tr)]
    cols += [np.arange(n_y), z_off + np.arange(K * L * Tr)]
    vals += [np.ones(n_y), -np.ones(K * L * Tr)]
    rhs.append(np.zeros(K * L * Tr))
    row += K * L * Tr
    a_ub = sparse.csr_array((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                            shape=(row, x_off + n_x))
    c = np.zeros(x_off + n_x)
    c[:n_y] = -profit[yj, yk, yl, yt]
    bounds = np.zeros((x_off + n_x, 2))
    bounds[:n_y, 1] = arrival[yt, yj]
    bounds[n_y:, 1] = 1.0
    result = linprog(c, A_ub=a_ub, b_ub=np.concatenate(rhs), bounds=bounds, method="highs-ipm")
    duals = np.zeros((K, T))
    if result.status == 0 and result.x is not None:
        duals[:, t:stop] = np.maximum(-np.asarray(result.ineqlin.marginals[cap_row : cap_row + K * Tr]), 0.0).reshape(K, Tr)
    return duals


class LPResolvePolicy(_OnlinePolicy):
    """lp_bid_price with bid prices from P1-LP re-solved over the remaining horizon every ``every`` slots, from
    the present state (``present_state()``: busy-until, blocks so far; the reserved demand EDF has left), over the
    next ``window`` slots (None: to the end; the LP's cost grows with it, ~1.8 s for all 200 slots). Decides
    as lp_bid_price: the safe SSP maximising R_jkl(t) − θ·Σ_s S_l(s)·μ_k(t+s−1), accepted if positive."""

    name = "lp_resolve"

    def __init__(self, every: int = 10, window: int | None = 60, scale: float | None = None) -> None:
        super().__init__(scale)
        self.every = _check_int("every", every, 1)
        self.window = _check_int("window", window, 1, allow_none=True)

    def _prepare(self, instance: Instance) -> None:
        self._theta, _ = _lp_price(instance, self.scale)

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        super().reset(env, seed)
        self._solved_at: int | None = None
        self._net: np.ndarray | None = None

    def act(self, obs: Any, info: dict[str, Any]) -> int:
        t, j = int(info["time"]), int(info["device"])
        inst = self._instance
        if self._solved_at is None or t >= self._solved_at + self.every:
            state = self._view.present_state()
            served = _served_before(inst, state["blocks"], t)
            duals = resolved_duals(inst, t, state["busy_until"], served, True, self.window)
            price = self._theta * ssp_bid_prices(inst, duals)  # (K, L, T)
            profit = inst.expected_profit
            self._net = _by_time(np.where(profit > 0, profit - price[None], -1.0))
            self._solved_at = t
        scores = np.where(safe_mask(info)[1:] > 0, self._net[t, j], -1.0)
        best = int(np.argmax(scores))
        return 1 + best if scores[best] > 0 else 0


@register_policy(ENV_ID, "uec_rollout")
def make_uec_rollout(env: gym.Env, futures: int = ROLLOUT_DEFAULTS["futures"], width: int = ROLLOUT_DEFAULTS["width"],
                     horizon: int | None = ROLLOUT_DEFAULTS["horizon"], scale: float | None = None) -> RolloutPolicy:
    """Ours: rollout over sampled futures (common random numbers), base lp_bid_price, safe SSPs only."""
    return RolloutPolicy(futures, width, horizon, preempt=False, scale=scale)


@register_policy(ENV_ID, "uec_rollout_preempt")
def make_uec_rollout_preempt(env: gym.Env, futures: int = ROLLOUT_DEFAULTS["futures"],
                             width: int = ROLLOUT_DEFAULTS["width"], horizon: int | None = ROLLOUT_DEFAULTS["horizon"],
                             scale: float | None = None) -> RolloutPolicy:
    """Ours: the rollout that may also choose SSPs reserved work can pre-empt (simulated faithfully)."""
    return RolloutPolicy(futures, width, horizon, preempt=True, scale=scale)


@register_policy(ENV_ID, "lp_resolve")
def make_lp_resolve(env: gym.Env, every: int = RESOLVE_DEFAULTS["every"], window: int | None = RESOLVE_DEFAULTS["window"],
                    scale: float | None = None) -> LPResolvePolicy:
    """Ours: lp_bid_price on P1-LP re-solved from the present state every ``every`` slots over ``window`` slots."""
    return LPResolvePolicy(every, window, scale)
