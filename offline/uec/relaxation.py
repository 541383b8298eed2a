"""A bound on the best *online* (non-anticipative) UEC-v0 policy by information relaxation — OURS.

The hindsight MILP of ``offline.uec.bounds`` knows every arrival and every duration before choosing, so it sits
far above what any online policy can earn. Information relaxation (Brown, Smith & Sun 2010) charges the
clairvoyant a penalty z for using the future: if every decision's penalty has conditional mean zero given what
an online policy knows when it decides and the action it takes, then for every non-anticipative policy
E[profit] = E[Σ (profit − z)] ≤ E[max over action sequences in hindsight of Σ (profit − z)]. The bound holds
**in expectation only**: the mean of the per-episode values over episodes bounds every online policy's mean
profit, but a single episode's value may lie below what a policy earned on it (unlike the hindsight bound).

**The penalty.** At decision i (task j at slot t, server k, profile l) the only randomness the action exposes is
the task's duration d ~ D_l (one uniform per arrival, independent of the past). Let λ be server k's current
longest feasible block (known to the policy: it depends on past decisions and past durations only). The env
credits r(d)·[d ≤ λ] (``dynamics.realised_profit``; a task longer than λ is pre-empted and earns 0). For any
function g(d) of the duration (below), take h(d) = g(d) for d ≤ λ and h(d) = −C for d > λ, with
C = E[r − g | d ≤ λ], and z = f(d) − E[f] with f = r·[d ≤ λ] − h. Then E[z | past, action] = 0 and the
penalised credit of the decision is

* 0 if the task is pre-empted (d > λ) — so such tasks can be dropped from a policy's schedule, as in the
  hindsight bound's argument;
* c(d) = g(d) + E[r − g | d' ≤ λ] otherwise, where only λ ≥ d is possible; the model takes the largest value
  over the λ the server can have: from the limit left after the most capacity earlier blocks could have taken
  (:func:`lowest_block_limits`) to its limit with no retraining, and at least d (λ ≥ the longest duration: the
  plain mean E[r − g]; ``reserved_priority="mask"`` allows only those λ).

A reject earns and is charged 0. With g(d) = β·r(d) − θ·V_k(t + d), V_k(s) an approximate value of server k
being free from slot s (0 from T on), c(d) = R_jkl(t) + θ·(E[V_k(t + d')] − V_k(t + d)) when the action is safe
and β = 0: the expected profit, less θ times what the realised duration is worth against its mean (a short task
frees the server early; the clairvoyant pays for knowing it). β = 1, θ = 0 gives c = r(d): the plain hindsight
MILP (``offline.uec.bounds.hindsight_model``), exactly.

Every policy's accepted, non-pre-empted tasks form a feasible point of the hindsight MILP's constraints (one
task per server at a time, reserved tasks' Hall slacks; ``offline.uec.bounds``), with credit ≥ its penalised
credit, so E[penalised MILP] ≥ E[profit] for every non-anticipative policy; the LP relaxation is above the MILP,
hence also valid (and ~0.1 s per episode at the default sizes). The tests check the bound against the exact
non-anticipative optimum (dynamic programming) on tiny instances.

Value functions V (``values=``): ``"duals"``: V_k(s) = Σ_{τ ≥ s} μ_k(τ), the tail sum of P1-LP's capacity duals
(``offline.uec.duals``; then E[V(t) − V(t + d)] is exactly ``lp_bid_price``'s price); ``"rescue"``: RESCUE's
B_k(s) (``offline.uec.values``).

**Arrival noise** (``arrival_scale`` θ_a): in every slot s after the first arrival, each server k that no
non-pre-empted task holds (known before the slot's arrival) is charged ψ_k(s) = θ_a·(q_k(s, ω_s) − E[q_k(s, ·)]),
q_k(s, j) = max_l (R_jkl(s) − price_kl(s))⁺ the net surplus a free k could take from an arrival of j
(:func:`arrival_surplus`), 0 for no arrival. Its conditional mean is 0 before the slot's arrival, so it is
valid for every θ_a; in the linear model it is a constant −Σ ψ plus, for each task, the ψ of the slots it holds
the server. Pre-empted tasks do not count as holding, so they can still be dropped.

Measured (docs/envs/uec.md, "A bound on online policies"): on training instance 0 the default penalty takes about
2 % off the hindsight LP bound. Most of the hindsight's edge is knowing the arrivals, which these penalties
barely charge.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from scipy import sparse

from envs.common.clairvoyance import episode_draws
from envs.uec import dynamics
from envs.uec.env import RESERVED_PRIORITIES, UECEnv
from envs.uec.types import Instance
from offline.uec.bounds import TIME_LIMIT_S, _episode_env, packing_constraints, solve_packing
from offline.uec.duals import capacity_duals
from offline.uec.values import rescue_solution

__all__ = [
    "DEFAULT_ARRIVAL_SCALE",
    "DEFAULT_SCALE",
    "DEFAULT_VALUES",
    "DESCRIPTION",
    "RELAXATION_BOUND_NAMES",
    "VALUE_SOURCES",
    "PenalisedModel",
    "arrival_surplus",
    "episode_relaxation_bounds",
    "lowest_block_limits",
    "penalised_coefficients",
    "penalised_model",
    "penalised_optimum",
    "value_to_go",
]

#: The approximate value functions the penalty can use (module docstring).
VALUE_SOURCES: tuple[str, ...] = ("duals", "rescue")
#: Defaults of :func:`episode_relaxation_bounds`, chosen on the tuning instances (900.., seed 77) only.
DEFAULT_VALUES = "duals"
DEFAULT_SCALE = 0.5
DEFAULT_ARRIVAL_SCALE = 0.1
#: Rows :func:`episode_relaxation_bounds` returns (a ladder ``bound`` proven in expectation, not per episode).
RELAXATION_BOUND_NAMES: tuple[str, ...] = ("online_relaxation_lp_bound",)
#: Margin (tera-MAC) under the worst pair slack in :func:`lowest_block_limits` (the env lets a block use its
#: slack plus ``dynamics.BLOCK_TOL``, so slacks may end a few BLOCK_TOL below 0).
_SLACK_MARGIN = 1e-6
#: Description for the ladder (``SPEC.descriptions``).
DESCRIPTION = ("bound on every online (non-anticipative) policy, proven in expectation only: LP relaxation of the "
               "hindsight MILP with zero-mean information-relaxation penalties (expected profit instead of "
               "realised; 0.5 x the value of the realised duration against its mean, from P1-LP's duals; 0.1 x "
               "the surplus of each slot's arrival against its mean, per free server); its MEAN over episodes "
               "bounds every online policy's mean, a single episode may lie below a policy's profit")


def _check(values: str, scale: float, reserved_priority: str) -> None:
    if values not in VALUE_SOURCES:
        raise ValueError(f"values={values!r} is invalid: expected one of {VALUE_SOURCES}")
    if not np.isfinite(scale) or scale < 0:
        raise ValueError(f"scale={scale!r} is invalid: expected a finite number >= 0")
    if reserved_priority not in RESERVED_PRIORITIES:
        raise ValueError(f"reserved_priority={reserved_priority!r} is invalid: expected one of {RESERVED_PRIORITIES}")


def value_to_go(instance: Instance, values: str = DEFAULT_VALUES) -> np.ndarray:
    """(K, T + D + 1) V_k(s): the approximate value of server k being free from slot s (0 for s ≥ T)."""
    _check(values, 0.0, RESERVED_PRIORITIES[0])
    K, T, D = instance.num_servers, instance.horizon, instance.duration_pmf.shape[1]
    out = np.zeros((K, T + D + 1))
    if values == "duals":
        mu = capacity_duals(instance)  # (K, T)
        out[:, :T] = np.cumsum(mu[:, ::-1], axis=1)[:, ::-1]
    else:
        out[:, : T + 1] = rescue_solution(instance).baseline
    return out


def lowest_block_limits(instance: Instance, slots: np.ndarray) -> np.ndarray:
    """(N, K) a lower bound on server k's block limit at each arrival slot, whatever was decided before: blocks
    before slot t lie in [t_0, t) (t_0 the first arrival), so they remove at most the capacity of
    [max(a, t_0), min(b + 1, t)) from a pair [a, b], and the slack never falls below 0 (less the env's
    tolerance, covered by a margin)."""
    slots = np.asarray(slots, np.int64)
    K = instance.num_servers
    out = np.full((slots.size, K), dynamics.UNBOUNDED, np.int64)
    if slots.size == 0:
        return out
    first = int(slots.min())
    cum = instance.cumulative_capacity
    for k, pairs in enumerate(instance.feasibility_pairs):
        if pairs.start.size == 0:
            continue
        lo = np.maximum(pairs.start, first)  # (P,)
        for n, t in enumerate(slots.tolist()):
            hi = np.maximum(np.minimum(pairs.end + 1, t), lo)
            worst = np.maximum(pairs.slack - (cum[k, hi] - cum[k, lo]), 0.0) - _SLACK_MARGIN
            out[n, k] = dynamics.max_feasible_block(pairs, worst, cum[k], np.array([t]))[0]
    return out


def penalised_coefficients(instance: Instance, slots: np.ndarray, devices: np.ndarray, durations: np.ndarray, *,
                           scale: float = DEFAULT_SCALE, values: str = DEFAULT_VALUES, reward_penalty: bool = True,
                           reserved_priority: str = "preempt") -> np.ndarray:
    """(N, K, L) the penalised credit c of assigning arrival i to (k, l), given its realised duration
    ``durations[i, l]`` (module docstring); ``reward_penalty``: β = 0 (expected profit), else β = 1."""
    _check(values, scale, reserved_priority)
    slots, devices = np.asarray(slots, np.int64), np.asarray(devices, np.int64)
    durations = np.asarray(durations, np.int64)
    K, L = instance.num_servers, instance.num_profiles
    pmf = instance.duration_pmf  # (L, D)
    D = pmf.shape[1]
    grid = np.arange(1, D + 1)
    cum = instance.cumulative_capacity  # (K, T + D + 1)
    ends = slots[:, None] + grid[None, :]  # (N, D)
    work = cum[:, ends] - cum[:, slots][:, :, None]  # (K, N, D)
    gain = dynamics.resource_to_performance(work, instance.perf_scale[devices][None, :, None],
                                            instance.perf_rate[devices][None, :, None])
    within = grid[None, None, :] <= instance.budget[devices].T[:, :, None]  # (K, N, D)
    scale_j = instance.weight[devices] * instance.accuracy_gap[devices, slots]  # (N,)
    profit = np.where(within, gain, 0.0) * scale_j[None, :, None]  # (K, N, D): r(d)
    profit = profit.transpose(1, 0, 2)  # (N, K, D)
    future = np.zeros_like(profit)
    if scale > 0:
        future = value_to_go(instance, values)[:, ends].transpose(1, 0, 2)  # (N, K, D): V_k(t + d)
    beta = 0.0 if reward_penalty else 1.0
    g = beta * profit - scale * future  # (N, K, D)
    h = profit - g  # r − g
    mass = np.cumsum(pmf, axis=1)  # (L, D): P(d ≤ λ)
    partial = np.cumsum(pmf[None, None, :, :] * h[:, :, None, :], axis=3)  # (N, K, L, D)
    with np.errstate(invalid="ignore", divide="ignore"):
        conditional = np.where(mass > 0, partial / np.where(mass > 0, mass, 1.0), -np.inf)  # E[r − g | d ≤ λ]
    longest = instance.max_duration  # (L,)
    lam = grid[None, None, None, :]
    d = durations[:, None, :, None]  # (N, 1, L, 1)
    if reserved_priority == "mask":
        low = np.broadcast_to(longest[None, None, :, None], (1, 1, L, 1))
        high = low
    else:
        limit = instance.free_block_limits[slots]  # (N, K): the largest block limit the server can have
        floor = np.minimum(lowest_block_limits(instance, slots), longest.max())  # (N, K): the smallest
        low = np.maximum(d, np.minimum(floor[:, :, None, None], longest[None, None, :, None]))
        high = np.maximum(np.minimum(longest[None, None, :, None], limit[:, :, None, None]), low)
    allowed = (lam >= low) & (lam <= high)
    best = np.where(allowed, conditional, -np.inf).max(axis=3)  # (N, K, L)
    g_real = np.take_along_axis(g, np.broadcast_to(durations[:, None, :] - 1, (slots.size, K, L)), axis=2)
    return g_real + best


def arrival_surplus(instance: Instance, scale: float = DEFAULT_SCALE, values: str = DEFAULT_VALUES) -> np.ndarray:
    """(K, T, J + 1) q_k(s, j) = max_l (R_jkl(s) − θ·E[V_k(s) − V_k(s + d_l)])⁺: what an arrival of j at s is
    worth net of its price to a free server k; the last entry (no arrival) is 0."""
    _check(values, scale, RESERVED_PRIORITIES[0])
    K, T, J = instance.num_servers, instance.horizon, instance.num_devices
    pmf = instance.duration_pmf
    D = pmf.shape[1]
    price = np.zeros((K, instance.num_profiles, T))
    if scale > 0:
        v = value_to_go(instance, values)
        ahead = v[:, np.arange(T)[:, None] + np.arange(1, D + 1)[None, :]]  # (K, T, D): V_k(s + d)
        price = scale * np.einsum("ktd,ld->klt", v[:, :T, None] - ahead, pmf)
    net = np.maximum(instance.expected_profit - price[None], 0.0).max(axis=2)  # (J, K, T)
    out = np.zeros((K, T, J + 1))
    out[:, :, :J] = net.transpose(1, 2, 0)
    return out


def arrival_penalty(instance: Instance, slots: np.ndarray, devices: np.ndarray, *, arrival_scale: float,
                    scale: float = DEFAULT_SCALE, values: str = DEFAULT_VALUES) -> np.ndarray:
    """(K, T) ψ_k(s) = θ_a·(q_k(s, ω_s) − E[q_k(s, ·)]) on the episode's realised arrivals ω (q of
    :func:`arrival_surplus`); 0 up to the first arrival (before it the redraw of empty episodes biases the
    arrivals' law, and nothing has been decided)."""
    if not np.isfinite(arrival_scale) or arrival_scale < 0:
        raise ValueError(f"arrival_scale={arrival_scale!r} is invalid: expected a finite number >= 0")
    K, T, J = instance.num_servers, instance.horizon, instance.num_devices
    psi = np.zeros((K, T))
    if arrival_scale == 0 or np.size(slots) == 0:
        return psi
    q = arrival_surplus(instance, scale, values)  # (K, T, J + 1)
    prob = np.zeros((T, J + 1))
    prob[:, :J] = instance.arrival_prob
    prob[:, J] = 1.0 - instance.arrival_prob.sum(axis=1)
    mean = np.einsum("ktj,tj->kt", q, prob)
    outcome = np.full(T, J, np.int64)
    outcome[np.asarray(slots, np.int64)] = devices
    first = int(np.min(slots))
    psi[:, first + 1:] = arrival_scale * (q[:, np.arange(T), outcome] - mean)[:, first + 1:]
    return psi


class PenalisedModel:
    """The penalised hindsight model of one episode for ``scipy.optimize.milp``: assignment variables x_v ∈ {0, 1}
    (the first ``num_assignments``; any later ones are continuous) with ``objective`` and packing ``constraints``;
    its value is the optimum plus ``offset`` (the arrival penalty's constant). ``arrival``, ``server``, ``start`` and
    ``duration`` describe each assignment variable."""

    def __init__(self, objective: np.ndarray, constraints: sparse.csr_array, upper: np.ndarray,
                 lower_bounds: np.ndarray, upper_bounds: np.ndarray, num_assignments: int, offset: float = 0.0) -> None:
        self.objective, self.constraints, self.upper, self.offset = objective, constraints, upper, offset
        self.lower_bounds, self.upper_bounds = lower_bounds, upper_bounds
        self.num_assignments = num_assignments

    @property
    def num_variables(self) -> int:
        return int(self.objective.size)

    def solve(self, relax: bool = True, time_limit: float = TIME_LIMIT_S) -> float:
        """The optimum (``relax``: of the LP relaxation, which is above it); the MILP's dual bound if HiGHS
        stops at ``time_limit``."""
        integral = np.zeros(self.num_variables, dtype=bool)
        integral[: self.num_assignments] = not relax
        return solve_packing(self.objective, self.constraints, self.upper, integral, self.lower_bounds,
                             self.upper_bounds, time_limit=time_limit, what="penalised hindsight") + self.offset


def penalised_model(instance: Instance, slots: np.ndarray, devices: np.ndarray, durations: np.ndarray, *,
                    scale: float = DEFAULT_SCALE, values: str = DEFAULT_VALUES, reward_penalty: bool = True,
                    arrival_scale: float = DEFAULT_ARRIVAL_SCALE, reserved_priority: str = "preempt"
                    ) -> PenalisedModel:
    """The hindsight MILP's constraints (``offline.uec.bounds.hindsight_model``) with the penalised credits of
    :func:`penalised_coefficients` as its objective, plus, when ``arrival_scale`` θ_a > 0, the arrival penalty
    (module docstring): a task holding server k over the slots (t, t + d) gains Σ ψ_k(s) there
    (:func:`arrival_penalty`), and the model's ``offset`` is −Σ_{k,s} ψ_k(s) (the charge when every server is
    free). Profiles of one arrival with the same realised duration on one server share a variable, with the
    larger credit; only positive credits get a variable."""
    if not np.isfinite(arrival_scale) or arrival_scale < 0:
        raise ValueError(f"arrival_scale={arrival_scale!r} is invalid: expected a finite number >= 0")
    coef = penalised_coefficients(instance, slots, devices, durations, scale=scale, values=values,
                                  reward_penalty=reward_penalty, reserved_priority=reserved_priority)
    slots = np.asarray(slots, np.int64)
    devices = np.asarray(devices, np.int64)
    durations = np.asarray(durations, np.int64)
    N, K, L = coef.shape
    T = instance.horizon
    psi = arrival_penalty(instance, slots, devices, arrival_scale=arrival_scale, scale=scale, values=values)
    if arrival_scale > 0 and N:
        prefix = np.zeros((K, T + 1))
        np.cumsum(psi, axis=1, out=prefix[:, 1:])
        lo = np.broadcast_to(np.minimum(slots[:, None] + 1, T), (N, L))
        hi = np.minimum(slots[:, None] + durations, T)  # (N, L)
        coef = coef + (prefix[:, hi] - prefix[:, lo]).transpose(1, 0, 2)  # Σ ψ_k(s) over s ∈ (t, t + d)
    # one variable per (arrival, server, distinct realised duration) with the largest credit; with an arrival
    # penalty a task may be worth holding a server even at a non-positive credit
    best: dict[tuple[int, int, int], float] = {}
    keep = coef > 0  # packing constraints: a variable of credit ≤ 0 never helps
    for i, k, l in zip(*np.nonzero(keep)):
        key = (int(i), int(k), int(durations[i, l]))
        best[key] = max(best.get(key, -np.inf), float(coef[i, k, l]))
    keys = sorted(best)
    profit = np.array([best[key] for key in keys], dtype=float)
    arrival = np.array([key[0] for key in keys], dtype=np.int64)
    server = np.array([key[1] for key in keys], dtype=np.int64)
    duration = np.array([key[2] for key in keys], dtype=np.int64)
    start = slots[arrival] if keys else np.zeros(0, np.int64)
    n = profit.size
    constraints, upper = packing_constraints(instance, slots, arrival, server, start, duration)
    objective = [profit]
    lower_bounds, upper_bounds = [np.zeros(n)], [np.ones(n)]
    model = PenalisedModel(np.concatenate(objective), constraints, upper,
                           np.concatenate(lower_bounds), np.concatenate(upper_bounds), n, offset=-float(psi.sum()))
    model.arrival, model.server, model.start, model.duration = arrival, server, start, duration
    return model


def penalised_optimum(env: gym.Env, relax: bool = True, **kwargs: Any) -> float:
    """The penalised hindsight optimum of the episode ``env`` was just reset to (its LP relaxation by default);
    ``kwargs`` go to :func:`penalised_model` (``reserved_priority`` defaults to the env's)."""
    base = env.unwrapped
    if not isinstance(base, UECEnv):
        raise ValueError(f"penalised_optimum needs a UEC-v0 env, got {type(base).__name__}")
    kwargs.setdefault("reserved_priority", base.reserved_priority)
    return penalised_model(base.instance, *episode_draws(base), **kwargs).solve(relax=relax)


def episode_relaxation_bounds(env_kwargs: dict[str, Any], instance_seed: int, reset_seed: int) -> dict[str, float]:
    """A ``BoundFn`` (``offline.ladder_spec``) for UEC-v0: the LP relaxation of the penalised hindsight MILP of
    one episode. Only its mean over episodes bounds an online policy's mean profit (rung ``bound``, proven in
    expectation); it is not a bound per episode."""
    env = _episode_env(env_kwargs, instance_seed)
    env.reset(seed=reset_seed)
    return {RELAXATION_BOUND_NAMES[0]: penalised_optimum(env, relax=True)}
