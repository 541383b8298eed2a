"""Property tests of UEC-v0's invariants over random scenarios and policies (hypothesis).

The references here are deliberately naive and independent of the env's fast paths: reserved-task
feasibility is checked by simulating EDF slot by slot on the whole capacity profile, not by the
interval (Hall) constraints the env's mask uses.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from envs.common.durations import DURATION_FAMILIES
from envs.uec import dynamics
from envs.uec.env import UECEnv
from envs.uec.generator import Scenario

from tests_helpers_uec import edf_slot_by_slot


@st.composite
def scenarios(draw) -> Scenario:
    num_servers = draw(st.integers(1, 3))
    horizon = draw(st.integers(8, 36))
    density = draw(st.floats(0.2, 0.8))
    per_server_cap = round(density * horizon)
    num_reserved = draw(st.integers(0, min(6, num_servers * per_server_cap)))
    low_mean = draw(st.floats(1.0, 3.0))
    num_profiles = draw(st.integers(1, 3))
    spacing = draw(st.floats(1.0, 2.0))  # profiles at least one slot apart on average
    return Scenario(
        num_servers=num_servers,
        num_devices=draw(st.integers(1, 4)),
        num_profiles=num_profiles,
        horizon=horizon,
        capacity_range=(draw(st.floats(1.0, 5.0)), 6.0),
        sla_range=(2.0, float(draw(st.integers(3, 8)))),
        duration_family=draw(st.sampled_from(DURATION_FAMILIES)),
        duration_mean_range=(low_mean, low_mean + spacing * max(num_profiles - 1, 1)),
        mean_arrival_prob=draw(st.floats(0.2, 1.0)),
        num_reserved=num_reserved,
        reserved_density=density,
        reserved_demand=draw(st.floats(0.0, 0.95)) * round(density * horizon) / horizon / 1.1,
        name="hypothesis",
    )


POLICIES = ("random_feasible", "random_any", "greedy")


def choose(policy: str, info: dict, obs: np.ndarray, env: UECEnv, rng: np.random.Generator) -> int:
    if policy == "random_any":  # includes infeasible actions
        return int(rng.integers(env.action_space.n))
    feasible = np.flatnonzero(info["action_mask"])
    if policy == "random_feasible":
        return int(feasible[rng.integers(feasible.size)])
    profits = env.layout.split(obs)["ssp_profit"]
    best = max(feasible[1:], key=lambda a: profits[a - 1], default=0)  # greedy on R_jkl(t)
    return int(best)


def edf_meets_all(inst, server: int, blocked: list[tuple[int, int]]) -> bool:
    """Naive reference: EDF on the server's capacity with ``blocked`` (start, duration) zeroed."""
    res = inst.reserved
    on = res.server == server
    if not on.any():
        return True
    available = inst.capacity[server].copy()
    for start, duration in blocked:
        available[start : start + duration] = 0.0
    served = edf_slot_by_slot(available, res.start[on], res.end[on], res.demand[on])
    return bool(np.all(served >= res.demand[on] - 1e-7))


@given(
    scenario=scenarios(),
    policy=st.sampled_from(POLICIES),
    seed=st.integers(0, 2**16),
    priority=st.sampled_from(("mask", "preempt")),
)
def test_uec__invariants_hold_under_any_policy(scenario, policy, seed, priority):
    env = UECEnv(scenario=scenario, instance_seed=seed, reserved_priority=priority)
    inst = env.instance
    rng = np.random.default_rng(seed + 1)
    obs, info = env.reset(seed=seed)
    blocks: dict[int, list[tuple[int, int]]] = {k: [] for k in range(inst.num_servers)}
    busy_until = np.zeros(inst.num_servers, dtype=int)
    done, decisions = False, 0
    while not done:
        t, device = info["time"], info["device"]
        mask = info["action_mask"]
        # mask == action_masks() == the feasibility rule, and reject is always allowed
        np.testing.assert_array_equal(mask.astype(bool), env.action_masks())
        np.testing.assert_array_equal(obs[-env.action_space.n :], mask)
        assert mask[0] == 1 and mask.dtype == np.int8
        for k in range(inst.num_servers):
            for l in range(inst.num_profiles):
                idle = busy_until[k] <= t
                safe = edf_meets_all(inst, k, [*blocks[k], (t, int(inst.max_duration[l]))])
                rule = idle and (safe or priority == "preempt")
                assert bool(mask[1 + k * inst.num_profiles + l]) == rule, (t, k, l)
        action = choose(policy, info, obs, env, rng)
        obs, reward, terminated, truncated, info = env.step(action)
        decisions += 1
        assert isinstance(reward, float) and math.isfinite(reward) and reward >= 0.0
        assert isinstance(terminated, bool) and isinstance(truncated, bool) and not truncated
        assert env.observation_space.contains(obs)
        if action != 0 and not mask[action]:  # a masked action is a reject, flagged
            assert info["invalid_action"] and reward == 0.0 and info["duration"] == 0
        elif action != 0:
            server, profile = divmod(action - 1, inst.num_profiles)
            duration = info["duration"]
            assert duration <= inst.max_duration[profile]
            if info["preempted"]:  # stopped exactly when one more slot would break the reserved tasks
                assert priority == "preempt" and reward == 0.0
                assert edf_meets_all(inst, server, [*blocks[server], (t, duration)])
                assert not edf_meets_all(inst, server, [*blocks[server], (t, duration + 1)])
            else:
                assert duration >= 1
            assert busy_until[server] <= t  # a server never runs two retraining tasks
            blocks[server].append((t, duration))
            busy_until[server] = t + duration
            # the realised profit never exceeds w_j·a_j(t)·F_j of the task's maximal work
            cum = inst.cumulative_capacity[server]
            max_work = cum[t + inst.max_duration[profile]] - cum[t]
            cap = inst.weight[device] * inst.accuracy_gap[device, t] * dynamics.resource_to_performance(
                max_work, inst.perf_scale[device], inst.perf_rate[device]
            )
            assert reward <= cap + 1e-9
        else:
            assert not info["invalid_action"] and reward == 0.0
        done = terminated
    # no reserved task ever misses its demand, whatever the policy did
    for k in range(inst.num_servers):
        assert edf_meets_all(inst, k, blocks[k])
    assert info["reserved_completed"] == info["reserved_total"] == len(inst.reserved)
    assert 0.0 <= info["uec_utilisation"] <= 1.0 + 1e-9
    assert info["accepted"] + info["rejected"] == decisions == env.unwrapped._arrival_slots.size


@given(scenario=scenarios(), seed=st.integers(0, 2**16))
def test_uec__observed_reserved_backlog_matches_slot_by_slot_edf(scenario, seed):
    env = UECEnv(scenario=scenario, instance_seed=seed)
    inst = env.instance
    obs, info = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    blocks: dict[int, list[tuple[int, int]]] = {k: [] for k in range(inst.num_servers)}
    done = False
    while not done:
        t = info["time"]
        # reference: remaining reserved demand at t = total demand - EDF service in slots < t
        res = inst.reserved
        for k in range(inst.num_servers):
            on = res.server == k
            available = inst.capacity[k].copy()
            for start, duration in blocks[k]:
                available[start : start + duration] = 0.0
            available[t:] = 0.0
            served = edf_slot_by_slot(available, res.start[on], res.end[on], res.demand[on]) if on.any() else [0.0]
            remaining = res.demand[on].sum() - np.sum(served)
            observed = env.layout.split(obs)["servers"][k, 3] * env._reserved_scale
            assert observed == np_approx(min(remaining, env._reserved_scale))
        feasible = np.flatnonzero(info["action_mask"])
        action = int(feasible[rng.integers(feasible.size)])
        obs, _, done, _, info = env.step(action)
        if action:
            blocks[(action - 1) // inst.num_profiles].append((t, info["duration"]))


def np_approx(value: float):
    import pytest

    return pytest.approx(value, rel=1e-5, abs=1e-4)


@given(
    windows=st.lists(
        st.tuples(st.integers(0, 15), st.integers(0, 8), st.floats(0.0, 12.0)), min_size=1, max_size=6
    ),
    capacity=st.lists(st.floats(0.0, 4.0), min_size=24, max_size=24),
)
def test_uec__edf_service_allocates_exactly_as_slot_by_slot_edf(windows, capacity):
    start = np.array([w[0] for w in windows])
    end = start + np.array([w[1] for w in windows])
    demand = np.array([w[2] for w in windows])
    available = np.array(capacity)
    np.testing.assert_allclose(
        dynamics.edf_service(available, start, end, demand), edf_slot_by_slot(available, start, end, demand), atol=1e-9
    )
