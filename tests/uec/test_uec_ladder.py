"""UEC-v0's ladder (offline.uec.ladder): our heuristics, the hindsight bound, tuning.

Properties: the env's realised draws (``episode_draws``) are what ``step`` plays; the hindsight MILP equals
brute force over every action sequence on tiny episodes and its LP relaxation lies above it; on fuzzed small
instances no registered policy (nor a random policy that risks pre-emption) earns more than the per-episode
bound; the tuned policies read tuned.yaml; lp_bid_price's prices are P1-LP's duals (complementary slackness)
and θ = 0 is PickConfigs; policies, bounds and tuning (over several loads too) are deterministic under their seeds.
"""

from __future__ import annotations

import copy
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import yaml

import envs  # noqa: F401  (registers the ids)
from envs.common.clairvoyance import episode_draws
from offline.ladder_spec import TuningSpec, tuned_params
from offline.protocol import MaskedRandomPolicy, run_episode
from offline.registry import available_policies, make_policy
from offline.uec import heuristics
from offline.uec.bounds import episode_bounds, hindsight_model, hindsight_optimum
from offline.uec.duals import capacity_duals, solve_capacity_duals, ssp_bid_prices
from offline.uec.ladder import SPEC
from offline.uec.values import rescue_solution

ENV_ID = "UEC-v0"
TOL = 1e-6
PACKAGE = Path(heuristics.__file__).parent


def _brute_force(env: gym.Env) -> float:
    """The best profit of any action sequence from the env's current state (depth-first over copies)."""
    base = env.unwrapped
    mask = np.flatnonzero(base.action_masks())
    best = 0.0
    for action in mask:
        child = copy.deepcopy(base)
        _, reward, terminated, _, _ = child.step(int(action))
        best = max(best, reward + (0.0 if terminated else _brute_force(child)))
    return best


def test_episode_draws_are_what_step_plays() -> None:
    env = gym.make(ENV_ID, scenario="tiny", instance_seed=3)
    rng = np.random.default_rng(0)
    for seed in range(5):
        obs, info = env.reset(seed=seed)
        slots, devices, durations = episode_draws(env)
        i, done = 0, False
        while not done:
            assert info["time"] == slots[i] and info["device"] == devices[i]
            feasible = np.flatnonzero(info["action_mask"])
            action = int(feasible[rng.integers(feasible.size)])
            obs, _, done, _, info = env.step(action)
            if action and not info["preempted"]:
                assert info["duration"] == durations[i, (action - 1) % env.unwrapped.instance.num_profiles]
            i += 1


@pytest.mark.parametrize("instance_seed", [0, 1, 2])
def test_hindsight_milp_equals_brute_force_on_tiny_episodes(instance_seed: int) -> None:
    env = gym.make(ENV_ID, scenario="tiny", instance_seed=instance_seed,
                   scenario_overrides={"horizon": 9, "sla_range": (5.0, 7.0)})
    checked = 0
    for seed in range(12):
        env.reset(seed=seed)
        if episode_draws(env)[0].size > 5:
            continue  # keep the enumeration small
        exact = _brute_force(env)
        assert hindsight_optimum(env) == pytest.approx(exact, rel=1e-7, abs=TOL)
        assert hindsight_optimum(env, relax=True) >= exact - TOL
        checked += 1
        if checked == 3:
            break
    assert checked == 3


FUZZ = [
    ("tiny", None, "preempt"),
    ("tiny", {"mean_arrival_prob": 0.9, "reserved_density": 0.7, "reserved_demand": 0.4}, "preempt"),
    ("tiny", {"mean_arrival_prob": 0.8}, "mask"),
    ("paper", {"horizon": 40, "num_devices": 5, "num_servers": 3, "num_reserved": 6, "mean_arrival_prob": 0.7},
     "preempt"),
]


@pytest.mark.parametrize(("scenario", "overrides", "priority"), FUZZ)
def test_no_policy_beats_the_hindsight_bound(scenario: str, overrides: dict | None, priority: str) -> None:
    names = available_policies(ENV_ID)
    assert set(SPEC.policies()) <= set(names)
    rng = np.random.default_rng(7)
    for _ in range(3):
        instance_seed = int(rng.integers(10_000))
        kwargs = {"scenario": scenario, "scenario_overrides": overrides, "reserved_priority": priority}
        env = gym.make(ENV_ID, instance_seed=instance_seed, **kwargs)
        policies = [make_policy(ENV_ID, name, env) for name in names] + [MaskedRandomPolicy()]
        for _ in range(2):
            seed = int(rng.integers(1_000_000))
            bound = episode_bounds(kwargs, instance_seed, seed)["clairvoyant_hindsight_lp_bound"]
            env.reset(seed=seed)
            exact = hindsight_optimum(env)
            assert exact <= bound + TOL
            for policy in policies:
                profit = run_episode(env, policy, seed=seed, policy_seed=seed + 1).final_info["episode_profit"]
                assert profit <= exact + TOL, (policy.name, instance_seed, seed)


def test_bound_is_deterministic_and_above_our_policies_on_the_paper_preset() -> None:
    env = gym.make(ENV_ID, instance_seed=5)
    env.reset(seed=11)
    model = hindsight_model(env.unwrapped.instance, *episode_draws(env))
    assert model.num_variables > 0
    first = episode_bounds({}, 5, 11)
    assert episode_bounds({}, 5, 11) == first
    assert set(first) == {"clairvoyant_hindsight_lp_bound"}
    for name in ("lp_bid_price", "opportunity_greedy", "value_bid_price", "pickconfigs"):
        profits = [run_episode(env, make_policy(ENV_ID, name, env), seed=11).total_reward for _ in range(2)]
        assert profits[0] == profits[1]  # deterministic policies
        assert profits[0] <= first["clairvoyant_hindsight_lp_bound"] + TOL


def test_tuned_policies_read_tuned_yaml() -> None:
    data = yaml.safe_load((PACKAGE / "tuned.yaml").read_text())
    env = gym.make(ENV_ID, scenario="tiny")
    for tuning, attribute, defaults in [
        ("opportunity_greedy", "price", heuristics.OPPORTUNITY_DEFAULTS),
        ("value_bid_price", "scale", heuristics.VALUE_BID_DEFAULTS),
        ("lp_bid_price", "scale", heuristics.LP_BID_DEFAULTS),
    ]:
        assert tuning in {t.policy for t in SPEC.tuning}
        published = data[tuning]["params"][attribute]
        assert tuned_params(PACKAGE, tuning, defaults)[attribute] == published
        assert getattr(make_policy(ENV_ID, tuning, env), attribute) == pytest.approx(published)
        assert getattr(make_policy(ENV_ID, tuning, env, **{attribute: 0.5}), attribute) == 0.5
        assert "ours" in SPEC.descriptions[tuning]


def test_zero_price_is_pickconfigs() -> None:
    env = gym.make(ENV_ID, instance_seed=2, scenario_overrides={"horizon": 60})
    ours = make_policy(ENV_ID, "opportunity_greedy", env, price=0.0)
    paper = make_policy(ENV_ID, "pickconfigs", env)
    for seed in range(3):
        assert run_episode(env, ours, seed=seed).total_reward == run_episode(env, paper, seed=seed).total_reward


def test_zero_dual_scale_is_pickconfigs() -> None:
    env = gym.make(ENV_ID, instance_seed=4, scenario_overrides={"horizon": 60, "mean_arrival_prob": 0.8})
    ours = make_policy(ENV_ID, "lp_bid_price", env, scale=0.0)
    paper = make_policy(ENV_ID, "pickconfigs", env)
    for seed in range(3):
        assert run_episode(env, ours, seed=seed).total_reward == run_episode(env, paper, seed=seed).total_reward


@pytest.mark.parametrize("mean_arrival_prob", [0.2, 0.9])
def test_capacity_duals_are_the_lp_prices(mean_arrival_prob: float) -> None:
    """Complementary slackness of P1-LP: a server-slot with a positive price μ_k(t) is full in the LP's optimum,
    and every SSP the LP uses (y* > 0) passes lp_bid_price's test at θ = 1 (R_jkl(t) ≥ its bid price)."""
    env = gym.make(ENV_ID, instance_seed=8, scenario_overrides={"horizon": 60, "mean_arrival_prob": mean_arrival_prob})
    env.reset(seed=0)
    instance = env.unwrapped.instance
    duals = capacity_duals(instance)
    assert duals.shape == (instance.num_servers, instance.horizon) and np.all(duals >= 0)
    assert np.array_equal(capacity_duals(instance), duals) and solve_capacity_duals(instance) == pytest.approx(duals)
    solution = rescue_solution(instance)
    rate = solution.y.sum(axis=0)  # (K, L, T): z_kl(t)
    survival = instance.duration_survival
    occupancy = np.zeros_like(duals)
    for s in range(1, survival.shape[1] + 1):
        occupancy[:, s - 1 :] += np.einsum("klt,l->kt", rate[:, :, : instance.horizon - s + 1], survival[:, s - 1])
    res = instance.reserved
    np.add.at(occupancy, (np.repeat(res.server, instance.horizon), np.tile(np.arange(instance.horizon), len(res))),
              solution.x.ravel())
    assert np.all(occupancy[duals > 1e-7] >= 1 - 1e-6)
    bids = ssp_bid_prices(instance, duals)
    used = solution.y > 1e-7
    assert used.any()
    assert np.all(instance.expected_profit[used] >= np.broadcast_to(bids[None], used.shape)[used] - 1e-6)


@pytest.mark.parametrize("policy", ["opportunity_greedy", "lp_bid_price"])
def test_tuning_is_deterministic_under_its_seed(policy: str) -> None:
    """Same seed, same trials; lp_bid_price's spec plays every load of its ``settings`` in each trial."""
    from offline.tuning import tune

    spec = next(t for t in SPEC.tuning if t.policy == policy)
    small = TuningSpec(policy=policy, space=spec.space, instances=1, episodes=2, env_kwargs={"scenario": "tiny"},
                       objective=spec.objective, settings=spec.settings)
    first = tune(ENV_ID, small, trials=2, seed=3)
    second = tune(ENV_ID, small, trials=2, seed=3)
    assert first[0] == second[0] and first[1] == second[1]
