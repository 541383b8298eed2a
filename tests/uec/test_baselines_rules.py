"""The UEC baselines do what uec.md's "Baselines" says, act only on feasible SSPs, and are seeded."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from scipy import stats

import envs  # noqa: F401  (registers UEC-v0)
from offline.registry import available_policies, make_policy
from offline.uec.evaluation import rollout
from offline.uec.values import rescue_solution

ALL = ["rescue", "pickconfigs", "srs", "sumita", "cvs", "random"]


def tiny_env(**overrides) -> gym.Env:
    return gym.make("UEC-v0", scenario="tiny", scenario_overrides={"horizon": 40, **overrides}, instance_seed=3)


def test_uec_v0__every_policy_is_registered():
    assert set(ALL) <= set(available_policies("UEC-v0"))
    env = tiny_env()
    with pytest.raises(ValueError, match="takes no options"):
        make_policy("UEC-v0", "pickconfigs", env, greedy=True)


@pytest.mark.parametrize("name", ALL)
def test_uec_v0__policies_are_feasible_and_seeded(name):
    env = tiny_env(num_reserved=4, reserved_density=0.5, reserved_demand=0.3)
    policy = make_policy("UEC-v0", name, env)
    first = [rollout(env, policy, seed=s, policy_seed=100 + s)["info"] for s in range(4)]
    again = [rollout(env, policy, seed=s, policy_seed=100 + s)["info"] for s in range(4)]
    for info, repeat in zip(first, again):
        assert info["invalid_actions"] == 0
        assert info["reserved_completed"] == info["reserved_total"] == 4
        assert info["episode_profit"] == repeat["episode_profit"]


def expected_greedy(name: str, inst, t: int, j: int, mask: np.ndarray) -> int:
    """The rule written with loops: best feasible SSP by the baseline's score, accept if R > 0."""
    best, best_score = 0, -1.0
    for k in range(inst.num_servers):
        for l in range(inst.num_profiles):
            if not mask[1 + k * inst.num_profiles + l]:
                continue
            r = inst.expected_profit[j, k, l, t]
            score = {
                "pickconfigs": r,
                "srs": r / inst.mean_duration[l],
                "cvs": r / (inst.mean_duration[l] * inst.capacity[k].mean()),
            }[name]
            if score > best_score:
                best, best_score = 1 + k * inst.num_profiles + l, score
    return best if best_score > 0 else 0


@pytest.mark.parametrize("name", ["pickconfigs", "srs", "cvs"])
def test_uec_v0__greedy_baselines_follow_their_rule(name):
    env = tiny_env(num_reserved=3)
    inst = env.unwrapped.instance
    policy = make_policy("UEC-v0", name, env)
    checked = 0
    for seed in range(5):
        obs, info = env.reset(seed=seed)
        policy.reset(env, seed=seed)
        done = False
        while not done:
            action = policy.act(obs, info)
            # the rule runs over the SSPs that keep the reserved tasks satisfiable (the paper's PickConfigs)
            assert action == expected_greedy(name, inst, info["time"], info["device"], info["safe_action_mask"])
            checked += action > 0
            obs, _, done, _, info = env.step(action)
    assert checked > 10


def test_uec_v0__sumita_takes_the_best_feasible_profile_on_a_server_drawn_from_y():
    env = tiny_env(num_reserved=3)
    inst = env.unwrapped.instance
    y = rescue_solution(inst).y
    policy = make_policy("UEC-v0", "sumita", env)
    accepted = 0
    for seed in range(8):
        obs, info = env.reset(seed=seed)
        policy.reset(env, seed=seed)
        done = False
        while not done:
            t, j, mask = info["time"], info["device"], info["safe_action_mask"]
            action = policy.act(obs, info)
            if action:
                k, l = divmod(action - 1, inst.num_profiles)
                assert y[j, k, :, t].sum() > 0  # the LP sends some of j's mass at t to server k
                feasible = [m for m in range(inst.num_profiles) if mask[1 + k * inst.num_profiles + m]]
                assert l in feasible
                assert inst.expected_profit[j, k, l, t] == max(inst.expected_profit[j, k, m, t] for m in feasible)
                accepted += 1
            obs, _, done, _, info = env.step(action)
    assert accepted > 10


def test_uec_v0__random_accepts_about_half_of_the_feasible_arrivals():
    env = tiny_env(num_reserved=0)
    policy = make_policy("UEC-v0", "random", env)
    offered = accepted = 0
    for seed in range(40):
        obs, info = env.reset(seed=seed)
        policy.reset(env, seed=seed)
        done = False
        while not done:
            action = policy.act(obs, info)
            if info["safe_action_mask"][1:].any():
                offered += 1
                accepted += action > 0
                assert action == 0 or info["safe_action_mask"][action]
            obs, _, done, _, info = env.step(action)
    assert stats.binomtest(accepted, offered, 0.5).pvalue > 1e-3


def test_uec_v0__rescue_accepts_only_above_threshold():
    env = tiny_env(num_reserved=2)
    inst = env.unwrapped.instance
    sol = rescue_solution(inst)
    policy = make_policy("UEC-v0", "rescue", env)
    accepted = 0
    for seed in range(10):
        obs, info = env.reset(seed=seed)
        policy.reset(env, seed=seed)
        done = False
        while not done:
            t, j = info["time"], info["device"]
            action = policy.act(obs, info)
            if action:
                k, l = divmod(action - 1, inst.num_profiles)
                assert sol.activation[j, k, l, t] > sol.baseline[k, t + 1]
                assert sol.y[j, k, l, t] > 0 and info["action_mask"][action]
                accepted += 1
            obs, _, done, _, info = env.step(action)
    assert accepted > 5
