"""UEC-v0's online references (offline/uec/online.py): the simulator reproduces the env, the policies are
deterministic under their seed, never propose a masked action, refuse bad parameters, and the rollout is not
worse than its base policy."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import edge_sched_gym  # noqa: F401  (registers UEC-v0)
from envs.common.clairvoyance import episode_draws
from offline.protocol import PolicyView, policy_env, run_episode
from offline.registry import make_policy
from offline.stats import mean_ci95
from offline.uec.duals import solve_capacity_duals
from offline.uec.online import (
    BASE,
    LPResolvePolicy,
    RolloutPolicy,
    Simulator,
    _lp_price,
    _policy_rng,
    _served_before,
    resolved_duals,
)
from tests.uec.tests_helpers_uec import edf_slot_by_slot

ONLINE = ("lp_resolve", "uec_rollout", "uec_rollout_preempt")
#: A small instance on which a rollout's decisions matter (the paper's sizes, fewer servers and slots).
SMALL = {"scenario": "paper", "scenario_overrides": {"num_servers": 2, "horizon": 60, "num_reserved": 6}}


def _per_slot(env: gym.Env) -> tuple[np.ndarray, np.ndarray]:
    """The episode's realised draws as the simulator reads a future: device per slot (-1: none), durations (T, L)."""
    inst = env.unwrapped.instance
    slots, devices, durations = episode_draws(env)
    dev = np.full(inst.horizon, -1, np.int64)
    dev[slots] = devices
    dur = np.ones((inst.horizon, inst.num_profiles), np.int64)
    dur[slots] = durations
    return dev, dur


@pytest.mark.parametrize("priority", ["preempt", "mask"])
def test_simulator_reproduces_the_env_on_realised_draws(priority: str) -> None:
    """Fed the realised draws, the simulator's profit equals the env's: for lp_bid_price (its base policy) and
    for a fixed sequence of random actions (unsafe ones pre-empted, infeasible ones carried out as rejects)."""
    env = gym.make("UEC-v0", reserved_priority=priority)
    inst = env.unwrapped.instance
    sim = Simulator(inst, _lp_price(inst, None)[1], priority == "mask")
    base = make_policy("UEC-v0", "lp_bid_price", env)
    rng = np.random.default_rng(0)
    preemptions = 0
    for seed in (0, 1):
        result = run_episode(env, base, seed=seed)
        dev, dur = _per_slot(env)
        env.reset(seed=seed)
        state = env.unwrapped.present_state()
        slack = sim.slack(state["pair_slack"])
        assert sim.play(0, state["busy_until"], slack, dev, dur) == pytest.approx(result.total_reward, rel=1e-12)
        obs, info = env.reset(seed=seed)
        forced, total, done = np.full(inst.horizon, BASE), 0.0, False
        while not done:
            allowed = np.flatnonzero(info["action_mask"])
            action = int(rng.choice(allowed)) if rng.random() < 0.8 else int(rng.integers(len(info["action_mask"])))
            forced[info["time"]] = action - 1
            obs, reward, done, _, info = env.step(action)
            total += reward
        preemptions += info["preemptions"]
        assert sim.play(0, state["busy_until"], slack, dev, dur, forced) == pytest.approx(total, rel=1e-12)
    assert (preemptions > 0) == (priority == "preempt")  # the pre-emption path was exercised


def test_present_state_is_the_present_and_copies() -> None:
    """present_state() is visible through a policy's view, matches the env's own state and is a copy."""
    env = gym.make("UEC-v0")
    obs, info = env.reset(seed=4)
    view = PolicyView(env)
    for _ in range(8):
        obs, _, _, _, info = env.step(int(np.flatnonzero(info["safe_action_mask"])[-1]))
    state = view.unwrapped.present_state()
    st = env.unwrapped._state
    assert state["time"] == info["time"] and np.array_equal(state["busy_until"], st.busy_until)
    idle = state["busy_until"] <= state["time"]
    assert np.array_equal(state["block_limits"][idle], st.block_limits[st.decision][idle])
    state["busy_until"][:] = -5
    state["pair_slack"][0][:] = -5.0
    assert st.busy_until.min() >= 0 and (st.pair_slack[0].size == 0 or st.pair_slack[0].min() > -5)
    with pytest.raises(AttributeError, match="not visible"):
        view.episode_draws()


def test_the_policy_stream_is_not_the_envs() -> None:
    """Reset with the env's seed, the policy still samples other futures (default_rng(seed) is the env's stream)."""
    assert not np.allclose(_policy_rng(5).random(8), np.random.default_rng(5).random(8))


@pytest.mark.parametrize("name", ONLINE)
def test_online_policies_never_propose_a_masked_action(name: str) -> None:
    """Every action is allowed by the mask; only the pre-empting rollout leaves the safe mask."""
    for priority in ("preempt", "mask"):
        env = gym.make("UEC-v0", reserved_priority=priority, **SMALL)
        policy = make_policy("UEC-v0", name, env, **({"futures": 32} if "rollout" in name else {}))
        unsafe = 0
        for seed in (0, 1, 2):
            obs, info = env.reset(seed=seed)
            policy.reset(policy_env(env, policy), seed=seed)
            done = False
            while not done:
                action = policy.act(obs, info)
                assert info["action_mask"][action], (name, priority, seed)
                unsafe += int(not info["safe_action_mask"][action])
                obs, _, done, _, info = env.step(action)
                assert not info["invalid_action"]
        assert unsafe == 0 or (name == "uec_rollout_preempt" and priority == "preempt")


def _actions(name: str, seed: int, policy_seed: int, **kwargs: Any) -> list[int]:
    env = gym.make("UEC-v0", **SMALL)
    policy = make_policy("UEC-v0", name, env, **kwargs)
    actions: list[int] = []
    obs, info = env.reset(seed=seed)
    policy.reset(policy_env(env, policy), seed=policy_seed)
    done = False
    while not done:
        actions.append(policy.act(obs, info))
        obs, _, done, _, info = env.step(actions[-1])
    return actions


def test_rollout_is_deterministic_under_its_seed() -> None:
    first = _actions("uec_rollout_preempt", 3, 7, futures=16)
    assert first == _actions("uec_rollout_preempt", 3, 7, futures=16)
    assert any(a > 0 for a in first)


@pytest.mark.parametrize(("factory", "kwargs", "name"), [
    (RolloutPolicy, {"futures": 0}, "futures"),
    (RolloutPolicy, {"futures": 2.5}, "futures"),
    (RolloutPolicy, {"width": -1}, "width"),
    (RolloutPolicy, {"horizon": 0}, "horizon"),
    (RolloutPolicy, {"preempt": "yes"}, "preempt"),
    (RolloutPolicy, {"scale": -1.0}, "scale"),
    (LPResolvePolicy, {"every": 0}, "every"),
    (LPResolvePolicy, {"window": True}, "window"),
    (LPResolvePolicy, {"scale": float("nan")}, "scale"),
])
def test_bad_parameters_raise_naming_them(factory: type, kwargs: dict[str, Any], name: str) -> None:
    with pytest.raises(ValueError, match=rf"^{name}="):
        factory(**kwargs)


def test_served_before_is_edf() -> None:
    """The reserved demand lp_resolve counts as served before t is the literal EDF rule's, blocks included."""
    env = gym.make("UEC-v0")
    inst = env.unwrapped.instance
    res = inst.reserved
    blocks = [(0, 10, 15), (1, 40, 30), (0, 90, 20)]
    for t in (0, 37, 120, inst.horizon):
        served = _served_before(inst, blocks, t)
        for k in range(inst.num_servers):
            available = inst.capacity[k].copy()
            for server, start, duration in blocks:
                if server == k:
                    available[start : start + duration] = 0.0
            on_k = res.server == k
            expected = edf_slot_by_slot(available[:t], res.start[on_k], res.end[on_k], res.demand[on_k])
            np.testing.assert_allclose(served[on_k], expected, atol=1e-9)


def test_resolved_lp_at_the_start_is_p1_lp() -> None:
    """Re-solved at slot 0 from the empty state over the whole horizon, the duals are P1-LP's."""
    env = gym.make("UEC-v0", **SMALL)
    inst = env.unwrapped.instance
    duals = resolved_duals(inst, 0, np.zeros(inst.num_servers, np.int64), np.zeros(len(inst.reserved)))
    np.testing.assert_allclose(duals, solve_capacity_duals(inst), atol=1e-6)


def test_rollout_is_not_worse_than_its_base() -> None:
    """Over paired episodes of a small instance, the rollout's mean profit is not below lp_bid_price's beyond
    the 95 % CI of the paired difference."""
    env = gym.make("UEC-v0", **SMALL)
    base = make_policy("UEC-v0", "lp_bid_price", env)
    rollout = make_policy("UEC-v0", "uec_rollout", env, futures=64)
    diffs = [run_episode(env, rollout, seed=s).total_reward - run_episode(env, base, seed=s).total_reward
             for s in range(20)]
    mean, half = mean_ci95(diffs)
    assert mean + half >= 0.0, (mean, half)


@pytest.mark.parametrize(("argv", "name"), [
    (["split=test"], "split"), (["episodes=0"], "episodes"), (["futures=many"], "futures"), (["scale=x"], "scale"),
    (["colour=red"], "argument"),
])
def test_the_benchmark_refuses_bad_arguments_naming_them(argv: list[str], name: str) -> None:
    from benchmarks.uec_online import parse

    with pytest.raises(ValueError, match=rf"^{name}"):
        parse(argv)
    assert parse(["policies=uec_rollout"])["policies"] == ["lp_bid_price", "uec_rollout"]  # the reference is always played
