"""Validity of the information-relaxation bound on online UEC-v0 policies (offline.uec.relaxation).

The bound holds in expectation: E[penalised hindsight optimum] ≥ the expected profit of every non-anticipative
policy. On tiny instances both sides are computed exactly: the best non-anticipative policy by dynamic
programming over (slot, servers' busy-until, reserved-pair slacks), written here from the env's rules, and the
bound's expectation by enumerating every arrival sequence and every duration outcome.
"""

from __future__ import annotations

import itertools
from functools import cache

import gymnasium as gym
import numpy as np
import pytest

import envs  # noqa: F401  (registers the envs)
from envs.common.clairvoyance import episode_draws
from envs.uec import dynamics
from envs.uec.generator import PRESETS, generate_instance
from envs.uec.types import Instance
from offline.protocol import run_episode
from offline.registry import make_policy
from offline.uec.bounds import episode_bounds, hindsight_model
from offline.uec.relaxation import (
    RELAXATION_BOUND_NAMES,
    episode_relaxation_bounds,
    penalised_coefficients,
    penalised_model,
    penalised_optimum,
)

ENV_ID = "UEC-v0"
TOL = 1e-6


def tiny_instance(seed: int, servers: int, reserved: int, profiles: int = 2) -> Instance:
    """T = 4 slots, one or two devices, short uniform durations: small enough to enumerate every outcome."""
    scenario = PRESETS["tiny"].replace(
        num_servers=servers, num_devices=1 + seed % 2, num_profiles=profiles, horizon=4, sla_range=(2.0, 4.0),
        duration_family="uniform", duration_mean_range=(1.0, 2.0), num_reserved=reserved, reserved_density=0.6,
        reserved_demand=0.3, mean_arrival_prob=0.6,
    )
    return generate_instance(scenario, np.random.default_rng(seed))


def duration_cells(instance: Instance) -> list[tuple[float, tuple[int, ...]]]:
    """The duration uniform's outcomes as the env reads them: (probability, duration under each profile)."""
    cdf = np.cumsum(instance.duration_pmf, axis=1)
    cdf[:, -1] = 1.0
    edges = np.unique(np.concatenate([[0.0, 1.0], cdf[(cdf > 0) & (cdf < 1)]]))
    cells = []
    for low, high in itertools.pairwise(edges):
        if high - low > 1e-15:
            u = 0.5 * (low + high)
            cells.append((float(high - low), tuple(int(c.searchsorted(u, side="right")) + 1 for c in cdf)))
    return cells


def episodes(instance: Instance):
    """Every episode (probability, slots, devices, durations (N, L)), conditioned on at least one arrival."""
    p = instance.arrival_prob
    T, J = p.shape
    slot_options = [[(-1, 1.0 - float(p[t].sum()))] + [(j, float(p[t, j])) for j in range(J) if p[t, j] > 0]
                    for t in range(T)]
    cells = duration_cells(instance)
    none = float(np.prod([1.0 - p[t].sum() for t in range(T)]))
    for combo in itertools.product(*slot_options):
        slots = np.array([t for t, (j, _) in enumerate(combo) if j >= 0], np.int64)
        if slots.size == 0:
            continue
        devices = np.array([j for j, _ in combo if j >= 0], np.int64)
        weight = float(np.prod([q for _, q in combo])) / (1.0 - none)
        for outcome in itertools.product(cells, repeat=slots.size):
            durations = np.array([d for _, d in outcome], np.int64)
            yield weight * float(np.prod([q for q, _ in outcome])), slots, devices, durations


def online_optimum(instance: Instance, priority: str) -> float:
    """The best expected profit of a non-anticipative policy (exact dynamic programming on the env's rules).

    Before the first arrival nothing is decided; after it the slots' arrivals are independent, so the value
    is E[W(0, all free)] / P(at least one arrival) with W the Bellman recursion under the unconditioned law."""
    T, K, L = instance.horizon, instance.num_servers, instance.num_profiles
    p, pmf, longest = instance.arrival_prob, instance.duration_pmf, instance.max_duration
    pairs, cum = instance.feasibility_pairs, instance.cumulative_capacity

    def limit(k: int, slack: tuple[float, ...], t: int) -> int:
        return int(dynamics.max_feasible_block(pairs[k], np.array(slack), cum[k], np.array([t]))[0])

    @cache
    def value(t: int, busy: tuple[int, ...], slacks: tuple[tuple[float, ...], ...]) -> float:
        if t >= T:
            return 0.0
        wait = value(t + 1, busy, slacks)
        total = (1.0 - float(p[t].sum())) * wait
        for j in np.flatnonzero(p[t] > 0):
            best = wait
            for k in range(K):
                if busy[k] > t:
                    continue
                lam = limit(k, slacks[k], t)
                for l in range(L):
                    if priority == "mask" and lam < longest[l]:
                        continue
                    expected = 0.0
                    for d in np.flatnonzero(pmf[l] > 0) + 1:
                        held = int(min(d, lam))
                        reward = dynamics.realised_profit(instance, int(j), k, t, int(d)) if d <= lam else 0.0
                        cut = dynamics.block_slack_reduction(pairs[k], cum[k], t, held) if held else 0.0
                        slack = tuple(np.round(np.array(slacks[k]) - cut, 10).tolist())
                        state = ((*busy[:k], t + held, *busy[k + 1:]), (*slacks[:k], slack, *slacks[k + 1:]))
                        expected += pmf[l, d - 1] * (reward + value(t + 1, *state))
                    best = max(best, expected)
            total += float(p[t, j]) * best
        return total

    start = tuple(tuple(np.round(pr.slack, 10).tolist()) for pr in pairs)
    none = float(np.prod([1.0 - p[t].sum() for t in range(T)]))
    return value(0, (0,) * K, start) / (1.0 - none)


def expected_bound(instance: Instance, relax: bool, **kwargs) -> float:
    return sum(w * penalised_model(instance, s, j, d, **kwargs).solve(relax=relax)
               for w, s, j, d in episodes(instance))


#: (seed, servers, reserved tasks): the quickest in the default suite, the rest (up to 2400 episodes each) slow
QUICK_CASES = [(6, 2, 1), (8, 1, 2)]
SLOW_CASES = [(1, 1, 1), (2, 2, 0), (3, 2, 2), (5, 1, 2)]


def check_bound_above_online_optimum(seed: int, servers: int, reserved: int, priority: str, configs) -> None:
    inst = tiny_instance(seed, servers, reserved)
    optimum = online_optimum(inst, priority)
    assert optimum > 0
    plain = sum(w * hindsight_model(inst, s, j, d).solve() for w, s, j, d in episodes(inst))
    assert plain >= optimum - TOL
    for kwargs in configs:
        kwargs = {**kwargs, "reserved_priority": priority}
        also_lp = kwargs.pop("lp", False)
        milp = expected_bound(inst, relax=False, **kwargs)
        assert milp >= optimum - TOL, (kwargs, milp, optimum)
        if also_lp:
            assert expected_bound(inst, relax=True, **kwargs) >= milp - TOL


@pytest.mark.parametrize(("seed", "servers", "reserved"), QUICK_CASES)
@pytest.mark.parametrize("priority", ["preempt", "mask"])
def test_expected_penalised_bound_is_above_the_exact_online_optimum(seed, servers, reserved, priority):
    check_bound_above_online_optimum(seed, servers, reserved, priority,
                                     [{"lp": True}, {"scale": 2.0, "values": "rescue", "arrival_scale": 1.0}])


@pytest.mark.slow
@pytest.mark.parametrize(("seed", "servers", "reserved"), SLOW_CASES)
@pytest.mark.parametrize("priority", ["preempt", "mask"])
def test_expected_penalised_bound_is_above_the_exact_online_optimum_larger(seed, servers, reserved, priority):
    check_bound_above_online_optimum(seed, servers, reserved, priority,
                                     [{"lp": True}, {"scale": 2.0, "values": "rescue"},
                                      {"scale": 0.0, "arrival_scale": 0.0}, {"scale": 1.0, "arrival_scale": 1.0}])


def test_the_penalty_tightens_the_hindsight_bound_on_a_tiny_instance():
    """Not only valid: on an instance where knowing durations pays, the penalised mean is strictly below the
    hindsight mean and here reaches the online optimum (the test would fail if the penalty were dropped)."""
    inst = tiny_instance(2, 2, 0)
    plain = sum(w * hindsight_model(inst, s, j, d).solve() for w, s, j, d in episodes(inst))
    optimum = online_optimum(inst, "preempt")
    penalised = expected_bound(inst, relax=False)  # the defaults, with the arrival penalty
    assert optimum - TOL <= penalised < plain - 1e-3
    durations_only = expected_bound(inst, relax=False, arrival_scale=0.0)
    assert durations_only == pytest.approx(optimum, abs=1e-6)  # exact here: no reserved tasks, one device


def test_zero_penalty_is_the_hindsight_model():
    env = gym.make(ENV_ID, instance_seed=3, scenario_overrides={"horizon": 80})
    for seed in range(2):
        env.reset(seed=seed)
        inst, draws = env.unwrapped.instance, episode_draws(env)
        plain = hindsight_model(inst, *draws)
        model = penalised_model(inst, *draws, scale=0.0, reward_penalty=False, arrival_scale=0.0)
        assert model.num_variables == plain.num_variables
        np.testing.assert_allclose(np.sort(model.objective), np.sort(plain.profit), rtol=1e-12)
        assert model.solve(relax=True) == pytest.approx(plain.solve(relax=True), rel=1e-9)
        assert model.solve(relax=False) == pytest.approx(plain.solve(relax=False), rel=1e-6)


def test_safe_credit_is_expected_profit_less_the_duration_value():
    """Under "mask" the credit is R_jkl(t) + θ·(E[V_k(t + d')] − V_k(t + d)): its mean over d is R_jkl(t)."""
    env = gym.make(ENV_ID, instance_seed=1, scenario_overrides={"horizon": 60})
    env.reset(seed=4)
    inst = env.unwrapped.instance
    slots, devices, _ = episode_draws(env)
    pmf = inst.duration_pmf
    mean = 0.0
    for d in range(1, pmf.shape[1] + 1):
        credit = penalised_coefficients(inst, slots, devices, np.full((slots.size, inst.num_profiles), d),
                                        scale=1.5, reserved_priority="mask")
        mean = mean + pmf[:, d - 1][None, None, :] * credit
    expected = inst.expected_profit[devices, :, :, slots]  # (N, K, L)
    np.testing.assert_allclose(mean, expected, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("kwargs", [{"values": "nope"}, {"scale": -1.0}, {"reserved_priority": "x"},
                                    {"arrival_scale": float("nan")}])
def test_bad_parameters_raise(kwargs):
    env = gym.make(ENV_ID, scenario="tiny")
    env.reset(seed=0)
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        penalised_optimum(env, **kwargs)


class PreemptingGreedy:
    """Online, may be pre-empted: the SSP with the highest R_jkl(t) among all the env allows (under "preempt" also
    those whose block may be cut short), accepted if R > 0."""

    name = "preempting_greedy"

    def reset(self, env, seed=None) -> None:
        inst = env.unwrapped.instance
        self._profit = inst.expected_profit.reshape(inst.num_devices, -1, inst.horizon)

    def act(self, obs, info) -> int:
        scores = np.where(info["action_mask"][1:] > 0, self._profit[info["device"], :, info["time"]], -1.0)
        best = int(np.argmax(scores))
        return 1 + best if scores[best] > 0 else 0


def test_mean_bound_is_above_online_policies_on_fuzzed_episodes():
    """Fuzzed small instances (both priorities): over many episodes the bound's mean stays above the mean profit
    of lp_bid_price, rescue, random and a pre-empting greedy on the same episodes (paired, 4-sigma margin)."""
    rng = np.random.default_rng(11)
    for trial in range(4):
        priority = ("preempt", "mask")[trial % 2]
        kwargs = {"scenario": "tiny", "scenario_overrides": {"horizon": 40}, "reserved_priority": priority}
        instance_seed = int(rng.integers(10_000))
        env = gym.make(ENV_ID, instance_seed=instance_seed, **kwargs)
        policies = [make_policy(ENV_ID, name, env) for name in ("lp_bid_price", "rescue", "random")]
        policies.append(PreemptingGreedy())
        gaps = {policy.name: [] for policy in policies}
        for _ in range(40):
            seed = int(rng.integers(1_000_000))
            bound = episode_relaxation_bounds(kwargs, instance_seed, seed)[RELAXATION_BOUND_NAMES[0]]
            for policy in policies:
                profit = run_episode(env, policy, seed=seed, policy_seed=seed + 1).final_info["episode_profit"]
                gaps[policy.name].append(bound - profit)
        for name, gap in gaps.items():
            gap = np.array(gap)
            assert gap.mean() + 4 * gap.std(ddof=1) / np.sqrt(gap.size) >= 0, (name, priority, gap.mean())


def test_episode_relaxation_bounds_is_deterministic_and_below_hindsight_on_average():
    """The ladder hook: one named value per episode, reproducible; on the paper preset its mean over a few
    episodes is below the hindsight LP bound's (the penalty removes part of the clairvoyant's advantage)."""
    seeds = range(4)
    first = [episode_relaxation_bounds({}, 0, s) for s in seeds]
    assert [episode_relaxation_bounds({}, 0, s) for s in seeds] == first
    assert all(set(row) == set(RELAXATION_BOUND_NAMES) for row in first)
    ours = np.mean([row[RELAXATION_BOUND_NAMES[0]] for row in first])
    hindsight = np.mean([episode_bounds({}, 0, s)["clairvoyant_hindsight_lp_bound"] for s in seeds])
    assert ours < hindsight
