"""RESCUE's theory as tests: Theorem 1's ½ bound, Σ_k B_k(1) as RESCUE's expected profit (Monte Carlo through
the env), Theorem 2's tight instance, and Lemma 1 against a brute-force hindsight optimum."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import envs  # noqa: F401  (registers UEC-v0)
from envs.uec.generator import PRESETS, generate_instance, theorem2_instance
from envs.uec.types import Instance
from offline.uec.bruteforce import expected_hindsight_optimum
from offline.uec.policies import RescuePolicy
from offline.uec.values import compute_rescue_solution, rescue_solution

Z99 = 2.5758293035489  # two-sided 99 % normal quantile


def no_arrival_probability(inst: Instance) -> float:
    """Π_t (1 - Σ_j p_j(t)): the env redraws such episodes, so its mean profit is E[profit] / (1 - this)."""
    return float(np.prod(1.0 - inst.arrival_prob.sum(axis=1)))


def rescue_profits(inst: Instance, episodes: int, seed: int = 0) -> np.ndarray:
    shape = {"num_servers": inst.num_servers, "num_devices": inst.num_devices, "num_profiles": inst.num_profiles}
    env = gym.make("UEC-v0", scenario=PRESETS["tiny"].replace(num_reserved=0, **shape))  # spaces of inst's shape
    policy = RescuePolicy()
    profits = np.empty(episodes)
    for e in range(episodes):
        obs, info = env.reset(seed=seed + e, options={"instance": inst} if e == 0 else None)
        policy.reset(env, seed=10_000_000 + seed + e)
        total, done = 0.0, False
        while not done:
            obs, reward, terminated, truncated, info = env.step(policy.act(obs, info))
            total += reward
            done = terminated or truncated
        assert info["invalid_actions"] == 0
        profits[e] = total
    return profits


def assert_matches_value_bound(inst: Instance, profits: np.ndarray) -> None:
    """The Monte-Carlo mean lies within its 99 % confidence interval of Σ_k B_k(1) (redraw-corrected)."""
    target = rescue_solution(inst).value_bound / (1.0 - no_arrival_probability(inst))
    half = Z99 * profits.std(ddof=1) / math.sqrt(profits.size)
    assert abs(profits.mean() - target) <= half, (profits.mean(), target, half)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 100_000),
    servers=st.integers(1, 3),
    devices=st.integers(1, 5),
    profiles=st.integers(1, 3),
    horizon=st.integers(10, 30),
    reserved=st.integers(0, 5),
    arrival=st.floats(0.1, 0.9),
    family=st.sampled_from(["normal", "uniform", "bimodal", "heavy_tail"]),
)
def test_uec_v0__value_bound_is_at_least_half_the_lp_bound(
    seed, servers, devices, profiles, horizon, reserved, arrival, family
):
    try:
        scenario = PRESETS["tiny"].replace(
            num_servers=servers,
            num_devices=devices,
            num_profiles=profiles,
            horizon=horizon,
            num_reserved=reserved,
            mean_arrival_prob=arrival,
            duration_family=family,
            duration_mean_range=(1.5, 6.0),
        )
        inst = generate_instance(scenario, np.random.default_rng(seed))
    except ValueError:
        assume(False)
    sol = compute_rescue_solution(inst)
    assert sol.value_bound >= 0.5 * sol.lp_bound - 1e-9 * max(1.0, sol.lp_bound)  # Theorem 1 (Lemmas 2-3)
    assert sol.value_bound <= sol.lp_bound + 1e-9 * max(1.0, sol.lp_bound)  # RESCUE is a feasible policy


def test_uec_v0__rescue_realised_profit_matches_value_bound_without_reserved_tasks():
    inst = generate_instance(PRESETS["tiny"].replace(num_reserved=0), np.random.default_rng(7))
    assert_matches_value_bound(inst, rescue_profits(inst, episodes=3000))


@pytest.mark.slow
def test_uec_v0__rescue_realised_profit_matches_value_bound_on_paper_preset_without_reserved_tasks():
    inst = generate_instance(PRESETS["paper"].replace(num_reserved=0), np.random.default_rng(0))
    env = gym.make("UEC-v0", scenario_overrides={"num_reserved": 0})
    policy = RescuePolicy()
    profits = []
    for e in range(400):
        obs, info = env.reset(seed=e, options={"instance": inst} if e == 0 else None)
        policy.reset(env, seed=10_000 + e)
        total, done = 0.0, False
        while not done:
            obs, reward, terminated, truncated, info = env.step(policy.act(obs, info))
            total += reward
            done = terminated
        profits.append(total)
    assert_matches_value_bound(inst, np.array(profits))


@pytest.mark.parametrize("eps", [0.01, 0.02])
def test_uec_v0__theorem2_instance_is_tight(eps):
    inst = theorem2_instance(eps)
    sol = compute_rescue_solution(inst)
    ratio = sol.value_bound / sol.lp_bound
    assert abs(ratio - 0.5) <= 0.05
    assert ratio == pytest.approx(1 / (2 - eps), rel=1e-6)
    # the arrival-clairvoyant optimum is exactly the LP value here: E[OPT] = ε·(1/ε) + (1 - ε)·1
    assert expected_hindsight_optimum(inst) == pytest.approx(2 - eps, rel=1e-9)


def test_uec_v0__theorem2_rescue_earns_its_value_bound_in_the_env():
    inst = theorem2_instance(0.2)
    assert no_arrival_probability(inst) == 0.0
    assert_matches_value_bound(inst, rescue_profits(inst, episodes=2000))


def tiny_bruteforce_instance(seed: int, reserved: int) -> Instance:
    scenario = PRESETS["tiny"].replace(
        horizon=6,
        num_devices=2,
        sla_range=(3.0, 5.0),
        duration_mean_range=(1.0, 1.8),
        num_reserved=reserved,
        reserved_density=0.5,
        reserved_demand=0.25,
        mean_arrival_prob=0.6,
    )
    return generate_instance(scenario, np.random.default_rng(seed))


@pytest.mark.parametrize(("seed", "reserved"), [(0, 0), (1, 0), (2, 1), (3, 2)])
def test_uec_v0__lp_bound_dominates_bruteforce_hindsight_optimum(seed, reserved):
    inst = tiny_bruteforce_instance(seed, reserved)
    sol = compute_rescue_solution(inst)
    hindsight = expected_hindsight_optimum(inst)
    assert sol.lp_bound >= hindsight - 1e-9  # Lemma 1
    if reserved == 0:  # no mask beyond "server busy": RESCUE is one of the policies the hindsight optimum beats
        assert hindsight >= sol.value_bound - 1e-9
