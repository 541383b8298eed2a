"""Random-scenario fuzz of every env (hypothesis): random valid scenario overrides drawn from each
Scenario's documented ranges (small sizes), random instance and reset seeds, random feasible actions.

Every step: the reward is a finite Python float, the observation a float32 member of the observation
space, the flags Python bools, the mask (where the env has one) int8, equal to ``action_masks()`` and
never all-false. Per problem, what its info exposes:

* UEC: a server never holds two retraining tasks at once (capacity is never exceeded), every reserved
  task meets its demand at the end (``reserved_completed == reserved_total``), profit and counts add up;
* OINC: the reward is eq. (4) of the step's mean latency and SLO rate, the job counts add up;
* ASET: success + failed + rejected = 1, the reward is the success fraction, termination iff it is below
  theta;
* CoRaiS: the cost is finite, equals max_j T_j, and is at least the backlog-only lower bound
  max_j [max(T^{L,cmp}, T^{I,trn}) + T^{I,cmp} + max(T^{L,res}, T^{I,res})].

The default test runs the "default" hypothesis profile (a few seconds per env); the ``slow`` variant
draws many more examples (``python -m pytest -m slow tests/test_env_fuzz.py``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from hypothesis import given, settings
from hypothesis import strategies as st

import envs
from envs.aset.generator import QUEUEING_MODELS, TOPOLOGIES
from envs.common.durations import DURATION_FAMILIES
from envs.common.radio import CHANNEL_PRESETS
from envs.oinc.retraining import CONTROLLERS

SEEDS = st.integers(0, 2**32 - 1)


def _interval(lo: float, hi: float) -> st.SearchStrategy[tuple[float, float]]:
    """A (a, b) pair with lo <= a <= b <= hi."""
    return st.tuples(st.floats(lo, hi), st.floats(lo, hi)).map(lambda p: (min(p), max(p)))


@st.composite
def uec_kwargs(draw) -> dict[str, Any]:
    # RESCUE's documented ranges (servers 2-7, devices 10-18, profiles 1-8, ...), scaled down in size
    horizon = draw(st.integers(10, 40))
    servers = draw(st.integers(2, 4))
    density = draw(st.floats(0.1, 0.6))
    covered = round(density * horizon)
    max_demand = covered / horizon / 1.1  # what over-provisioning by 10 % allows
    profiles = draw(st.integers(1, 4))
    mean_lo = draw(st.floats(1.0, 4.0))
    overrides = {
        "num_servers": servers,
        "num_devices": draw(st.integers(1, 5)),
        "num_profiles": profiles,
        "horizon": horizon,
        "num_reserved": draw(st.integers(0, min(6, servers * covered))),
        "reserved_density": density,
        "reserved_demand": draw(st.floats(0.05, max(0.05, min(0.3, 0.99 * max_demand)))),
        "mean_arrival_prob": draw(st.floats(0.2, 0.7)),
        "sla_range": draw(_interval(2.0, float(min(28, horizon)))),
        "duration_family": draw(st.sampled_from(DURATION_FAMILIES)),
        # the generator needs the discretised profile means strictly increasing: ~1 slot apart at least
        "duration_mean_range": (mean_lo, mean_lo + max(profiles - 1, 0.5) * draw(st.floats(1.0, 3.0))),
        "channel": draw(st.sampled_from(list(CHANNEL_PRESETS))),
    }
    if overrides["reserved_demand"] > 0.99 * max_demand:  # density too low to host any reserved demand
        overrides["num_reserved"] = 0
    return {
        "scenario": "paper",
        "scenario_overrides": overrides,
        "instance_seed": draw(st.none() | SEEDS),
        "reserved_priority": draw(st.sampled_from(["preempt", "mask"])),
    }


@st.composite
def oinc_kwargs(draw) -> dict[str, Any]:
    overrides = {
        "num_devices": draw(st.integers(1, 5)),
        "num_edges": draw(st.integers(1, 3)),
        "horizon": draw(st.integers(1, 15)),
        "drift_prob": draw(st.floats(0.0, 0.5)),
        "data_unit": draw(st.sampled_from(["MB", "Mbit"])),
        "channel": draw(st.sampled_from(list(CHANNEL_PRESETS))),
        "slo_s": draw(_interval(0.05, 2.0)),
        "cpu_ghz": draw(_interval(1.0, 10.0)),
        "retrain_set_size": draw(st.integers(16, 2048)),
        "deadline_slack_s": draw(_interval(2.0, 30.0)),
        "ar_coef": draw(st.floats(0.0, 0.99)),
        "burst_prob": draw(st.floats(0.0, 1.0)),
    }
    return {
        "scenario": draw(st.sampled_from(["paper", "tiny"])),
        "scenario_overrides": overrides,
        "retraining": draw(st.sampled_from(list(CONTROLLERS))),
        "psi": draw(st.floats(0.0, 10.0)),
        "observation": draw(st.sampled_from(["paper", "extended"])),
        "instance_seed": draw(st.none() | SEEDS),
        "resample_instance": draw(st.booleans()),
    }


@st.composite
def aset_kwargs(draw) -> dict[str, Any]:
    overrides = {
        "rate_variation": draw(st.floats(0.0, 0.95)),
        "rate_period_windows": draw(st.integers(1, 120)),
        "app_mix_concentration": draw(st.floats(0.0, 5.0)),
        "queueing": draw(st.sampled_from(QUEUEING_MODELS)),
        "service_headroom": draw(st.floats(1.0, 3.0)),
        "mean_lifetime_s": draw(st.floats(5.0, 300.0)),
        "sub_windows": draw(st.integers(1, 20)),
    }
    return {
        "topology": draw(st.sampled_from(TOPOLOGIES)),
        "lam": draw(st.floats(1.0, 200.0)),
        "scenario_overrides": overrides,
        "horizon": draw(st.integers(1, 4)),
        "theta": draw(st.floats(0.0, 1.0)),
        "obs_layout": draw(st.sampled_from(["flat", "2d"])),
        "instance_seed": draw(st.none() | SEEDS),
        "resample_instance": draw(st.booleans()),
    }


@st.composite
def corais_kwargs(draw) -> dict[str, Any]:
    n = draw(st.integers(1, 8))
    q = draw(st.integers(1, n))
    m_lo = draw(st.integers(1, 5))
    overrides = {
        "replicas": (m_lo, m_lo + draw(st.integers(0, 5))),
        "coef_a": draw(_interval(0.0, 2.0)),
        "coef_b": draw(_interval(0.05, 2.0)),
        "backlog_max": draw(st.integers(0, 8)),
        "data_size": draw(_interval(0.0, 2.0)),
        "mu": draw(st.floats(0.0, 2.0)),
        "coord_max": draw(st.floats(0.1, 10.0)),
    }
    return {
        "scale": (n, q, draw(st.integers(1, 20))),
        "scenario_overrides": overrides,
        "instance_seed": draw(st.none() | SEEDS),
        "flat_observation": draw(st.booleans()),
    }


# ----------------------------------------------------------------------------------- per-problem checks
class UECCheck:
    def __init__(self, env: gym.Env) -> None:
        self.busy_until: dict[int, int] = {}
        self.profit = 0.0
        self.decisions = 0

    def step(self, env, before: dict, action, reward: float, info: dict) -> None:
        inst = env.unwrapped.instance
        assert reward >= 0.0
        assert not info["invalid_action"]  # a masked action is always carried out
        self.decisions += 1
        self.profit += reward
        if action != 0:
            server = (action - 1) // inst.num_profiles
            t = before["time"]
            assert self.busy_until.get(server, 0) <= t, "a server would hold two retraining tasks at once"
            assert info["duration"] >= 1 or info["preempted"]  # "preempt": reserved work may reclaim it at once
            if info["preempted"]:
                assert reward == 0.0 and env.unwrapped.reserved_priority == "preempt"
            self.busy_until[server] = t + info["duration"]

    def end(self, env, info: dict) -> None:
        assert info["reserved_completed"] == info["reserved_total"] == len(env.unwrapped.instance.reserved)
        assert info["accepted"] + info["rejected"] == self.decisions and info["invalid_actions"] == 0
        assert math.isclose(info["episode_profit"], self.profit, rel_tol=1e-9, abs_tol=1e-12)
        assert 0.0 <= info["uec_utilisation"] <= 1.0 + 1e-9


class OINCCheck:
    def __init__(self, env: gym.Env) -> None:
        self.arrived = 0
        self.completed = 0

    def reset(self, env, info: dict) -> None:
        self.arrived += info["jobs_arrived"]

    def step(self, env, before: dict, action, reward: float, info: dict) -> None:
        sc, psi = env.unwrapped.scenario, env.unwrapped.psi
        assert 0 <= info["slo_met"] <= sc.num_devices and 0 <= info["paused_edges"] <= sc.num_edges
        assert math.isclose(info["slo_rate"], info["slo_met"] / sc.num_devices)
        assert info["latency_mean_s"] > 0.0 and 0.0 <= info["retraining_share_mean"] <= 1.0
        assert math.isclose(reward, -(info["latency_mean_s"] + psi * (1.0 - info["slo_rate"])), rel_tol=1e-9, abs_tol=1e-12)
        self.arrived += info["jobs_arrived"]
        self.completed += info["jobs_completed"]
        assert info["jobs_active"] <= sc.num_devices  # at most one job per device

    def end(self, env, info: dict) -> None:
        assert info["jobs_total"] == self.arrived and info["jobs_finished_in_horizon"] == self.completed
        assert info["jobs_finished_in_horizon"] + info["jobs_censored"] <= info["jobs_total"]
        for key in ("success_rate", "slo_hit_rate", "paused_fraction"):
            assert 0.0 <= info[key] <= 1.0, key
        assert info["jobs_total"] == 0 or (0.0 <= info["deadline_hit_rate"] <= 1.0 and info["retraining_completion_s"] > 0)


class ASETCheck:
    def __init__(self, env: gym.Env) -> None:
        pass

    def step(self, env, before: dict, action, reward: float, info: dict) -> None:
        assert 0.0 <= reward <= 1.0 and reward == info["success"]
        assert math.isclose(info["success"] + info["failed"] + info["rejected"], 1.0, abs_tol=1e-9)
        assert min(info["failed"], info["rejected"]) >= 0.0 and info["queries"] >= 0.0
        assert 0 <= info["rejected_streams"] <= info["arrivals"]
        for key in ("class_success", "class_failed", "class_rejected"):
            assert np.all((info[key] >= 0.0) & (info[key] <= 1.0 + 1e-9)), key
        assert info["policy"] and info["window"] >= 1

    def terminated(self, env, reward: float, terminated: bool) -> None:
        assert terminated == (reward < env.unwrapped.theta)


class CoRaiSCheck:
    def __init__(self, env: gym.Env) -> None:
        pass

    def step(self, env, before: dict, action, reward: float, info: dict) -> None:
        inst = env.unwrapped.instance
        w = inst.workload  # columns T^{L,cmp}, T^{I,trn}, T^{I,cmp}, T^{L,res}, T^{I,res}
        backlog_only = np.maximum(w[:, 0], w[:, 1]) + w[:, 2] + np.maximum(w[:, 3], w[:, 4])
        cost = info["cost"]
        assert np.isfinite(cost) and reward == -cost
        assert cost == info["edge_times"].max()
        assert np.all(info["edge_times"] >= backlog_only * (1 - 1e-12) - 1e-12)
        assert cost >= backlog_only.max() * (1 - 1e-12) - 1e-12
        assert info["requests_per_edge"].sum() == inst.num_requests
        assert np.isclose(info["data_per_edge"].sum(), inst.req_d.sum())


#: env id -> (scenario strategy, per-problem check, episodes per example).
FUZZ: dict[str, tuple[Callable[[], st.SearchStrategy], type, int]] = {
    "UEC-v0": (uec_kwargs, UECCheck, 2),
    "OINC-v0": (oinc_kwargs, OINCCheck, 1),
    "ASET-v0": (aset_kwargs, ASETCheck, 1),
    "ASET-v1": (aset_kwargs, ASETCheck, 1),  # the same ranges on v1's capacities (x 5/3)
    "CoRaiS-v0": (corais_kwargs, CoRaiSCheck, 3),
    "CoRaiS-v1": (corais_kwargs, CoRaiSCheck, 3),  # the same ranges through the "load" backlog model
}


def random_feasible_action(env: gym.Env, info: dict, rng: np.random.Generator):
    space = env.action_space
    if isinstance(space, spaces.Discrete):
        mask = info.get("action_mask")
        feasible = np.flatnonzero(mask) if mask is not None else np.arange(space.n)
        return int(rng.choice(feasible))
    assert isinstance(space, spaces.MultiDiscrete)  # every entry is feasible (no mask)
    return rng.integers(0, space.nvec).astype(np.int64)


def assert_observation(env: gym.Env, obs) -> None:
    space = env.observation_space
    parts = obs.values() if isinstance(obs, dict) else [obs]
    for part in parts:
        assert isinstance(part, np.ndarray) and part.dtype == np.float32
        assert np.all(np.isfinite(part))
    assert space.contains(obs), "observation outside the observation space"


def assert_mask(env: gym.Env, info: dict) -> None:
    if "action_mask" not in info:
        assert not hasattr(env.unwrapped, "action_masks")
        return
    mask = info["action_mask"]
    assert mask.dtype == np.int8 and mask.shape == (env.action_space.n,) and mask.any(), "mask all-false"
    np.testing.assert_array_equal(np.asarray(env.unwrapped.action_masks()).astype(bool), mask.astype(bool))


def run_fuzz_example(env_id: str, kwargs: dict[str, Any], seed: int, action_seed: int) -> None:
    _, check_cls, episodes = FUZZ[env_id]
    env = gym.make(env_id, **kwargs)
    rng = np.random.default_rng(action_seed)
    check = check_cls(env)
    for episode in range(episodes):
        obs, info = env.reset(seed=seed + episode)
        assert_observation(env, obs)
        assert_mask(env, info)
        if hasattr(check, "reset"):
            check.reset(env, info)
        for _ in range(10_000):
            action = random_feasible_action(env, info, rng)
            before = info
            obs, reward, terminated, truncated, info = env.step(action)
            assert type(reward) is float and math.isfinite(reward)
            assert type(terminated) is bool and type(truncated) is bool
            assert_observation(env, obs)
            check.step(env, before, action, reward, info)
            if hasattr(check, "terminated"):
                check.terminated(env, reward, terminated)
            if terminated or truncated:
                break
            assert_mask(env, info)
        else:
            pytest.fail(f"{env_id} episode did not end")
        if hasattr(check, "end"):
            check.end(env, info)
        if episode + 1 < episodes:
            check = check_cls(env)


def test_fuzz__every_registered_env_is_fuzzed():
    assert set(FUZZ) == set(envs.ENV_IDS)


@pytest.mark.parametrize("env_id", list(FUZZ))
@given(data=st.data(), seed=SEEDS, action_seed=SEEDS)
def test_fuzz__random_scenarios_seeds_and_feasible_actions_keep_the_contract(env_id, data, seed, action_seed):
    run_fuzz_example(env_id, data.draw(FUZZ[env_id][0](), label="kwargs"), seed, action_seed)


@pytest.mark.slow
@pytest.mark.parametrize("env_id", list(FUZZ))
@settings(max_examples=400)
@given(data=st.data(), seed=SEEDS, action_seed=SEEDS)
def test_fuzz__many_random_scenarios_keep_the_contract(env_id, data, seed, action_seed):
    run_fuzz_example(env_id, data.draw(FUZZ[env_id][0](), label="kwargs"), seed, action_seed)
