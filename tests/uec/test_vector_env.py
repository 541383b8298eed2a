"""UEC-v0's native vector env (envs.uec.vector.UECVectorEnv): every sub-env is the single env.

The key property: sub-env i reset with ``seed + i`` gives exactly the observations, rewards, flags, masks
and episode-end infos of ``gym.make("UEC-v0")`` reset with ``seed + i`` and stepped with the same
actions, across auto-resets, in both reserved-priority modes, with fixed and resampled instances.
"""

from __future__ import annotations

import re

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, VectorEnv
from hypothesis import given, settings
from hypothesis import strategies as st

import envs  # noqa: F401
from envs.uec.env import UECEnv
from envs.uec.generator import generate_instance
from envs.uec.vector import UECVectorEnv

SUMMARY_KEYS = ("episode_profit", "accepted", "rejected", "invalid_actions", "preemptions", "uec_utilisation",
                "reserved_completed", "reserved_total")


def make_vec(num_envs: int, **kwargs) -> UECVectorEnv:
    return gym.make_vec("UEC-v0", num_envs=num_envs, vectorization_mode="vector_entry_point", **kwargs)


def assert_same_as_single_envs(num_envs: int, seed: int, steps: int, policy_seed: int = 0,
                               autoreset_mode: AutoresetMode = AutoresetMode.NEXT_STEP, **kwargs) -> int:
    """Step the vector env and ``num_envs`` single envs with the same actions (a fifth of them drawn
    from the whole action space, so infeasible ones too); assert every sub-env matches its single env.
    Returns the number of finished episodes."""
    vec = make_vec(num_envs, autoreset_mode=autoreset_mode, **kwargs)
    singles = [gym.make("UEC-v0", **kwargs) for _ in range(num_envs)]
    obs, infos = vec.reset(seed=seed)
    single = [env.reset(seed=seed + i) for i, env in enumerate(singles)]
    rng = np.random.default_rng(policy_seed)
    pending = [False] * num_envs  # NEXT_STEP: this sub-env resets at the next step
    episodes = 0
    for _ in range(steps):
        assert vec.observation_space.contains(obs)
        for i, (s_obs, s_info) in enumerate(single):
            np.testing.assert_array_equal(obs[i], s_obs)
            np.testing.assert_array_equal(infos["action_mask"][i], s_info["action_mask"])
            np.testing.assert_array_equal(infos["safe_action_mask"][i], s_info["safe_action_mask"])
            assert infos["time"][i] == s_info["time"] and infos["device"][i] == s_info["device"]
        np.testing.assert_array_equal(vec.action_masks(), infos["action_mask"].astype(bool))
        actions = np.array([
            rng.integers(vec.single_action_space.n) if rng.random() < 0.2
            else rng.choice(np.flatnonzero(infos["action_mask"][i]))
            for i in range(num_envs)
        ])
        obs, rewards, terminated, truncated, infos = vec.step(actions)
        assert rewards.shape == terminated.shape == truncated.shape == (num_envs,)
        assert terminated.dtype == truncated.dtype == np.bool_ and not truncated.any()
        for i, env in enumerate(singles):
            if pending[i]:  # NEXT_STEP: the vector env resets sub-env i now, ignoring its action
                single[i] = env.reset()
                pending[i] = False
                assert rewards[i] == 0.0 and not terminated[i] and not infos["_invalid_action"][i]
                continue
            s_obs, s_reward, s_term, s_trunc, s_info = env.step(int(actions[i]))
            assert rewards[i] == s_reward and terminated[i] == s_term and truncated[i] == s_trunc
            for key in ("invalid_action", "expected_profit", "duration", "preempted"):
                assert infos["_" + key][i] and infos[key][i] == s_info[key], key
            if s_term:
                episodes += 1
                ended = infos if autoreset_mode == AutoresetMode.NEXT_STEP else infos["final_info"]
                for key in SUMMARY_KEYS:
                    assert ended["_" + key][i] and ended[key][i] == s_info[key], key
                if autoreset_mode == AutoresetMode.NEXT_STEP:
                    pending[i] = True
                else:
                    assert infos["_final_obs"][i]
                    np.testing.assert_array_equal(infos["final_obs"][i], s_obs)
                    np.testing.assert_array_equal(ended["action_mask"][i], s_info["action_mask"])
                    s_obs, s_info = env.reset()
            elif autoreset_mode == AutoresetMode.SAME_STEP and "_final_obs" in infos:
                assert not infos["_final_obs"][i]
            single[i] = (s_obs, s_info)
    return episodes


@settings(max_examples=12)
@given(
    seed=st.integers(0, 2**16),
    num_envs=st.integers(1, 4),
    reserved_priority=st.sampled_from(["preempt", "mask"]),
    resample_instance=st.booleans(),
    instance_seed=st.sampled_from([0, 3, None]),
    autoreset_mode=st.sampled_from([AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP]),
)
def test_vector_env__tiny_sub_envs_equal_the_single_env(seed, num_envs, reserved_priority, resample_instance,
                                                        instance_seed, autoreset_mode):
    episodes = assert_same_as_single_envs(
        num_envs, seed, steps=40, policy_seed=seed, autoreset_mode=autoreset_mode, scenario="tiny",
        reserved_priority=reserved_priority, resample_instance=resample_instance, instance_seed=instance_seed,
    )
    assert episodes >= num_envs  # tiny episodes are short: the test crosses auto-resets


@pytest.mark.parametrize("reserved_priority", ["preempt", "mask"])
@pytest.mark.parametrize("autoreset_mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_vector_env__paper_sub_envs_equal_the_single_env(reserved_priority, autoreset_mode):
    episodes = assert_same_as_single_envs(3, seed=7, steps=260, autoreset_mode=autoreset_mode,
                                          reserved_priority=reserved_priority)
    assert episodes >= 3


def test_vector_env__paper_resampled_instances_equal_the_single_env():
    assert assert_same_as_single_envs(2, seed=1, steps=120, resample_instance=True) >= 1


def test_vector_env__reset_options_reach_every_sub_env():
    inst = generate_instance("tiny", np.random.default_rng(42))
    vec, single = make_vec(2, scenario="tiny"), gym.make("UEC-v0", scenario="tiny")
    obs, _ = vec.reset(seed=5, options={"instance": inst})
    assert all(env.instance is inst for env in vec.unwrapped.envs)
    np.testing.assert_array_equal(obs[1], single.reset(seed=6, options={"instance": inst})[0])
    obs, _ = vec.reset(seed=[8, 9], options={"resample": True})
    np.testing.assert_array_equal(obs[0], single.reset(seed=8, options={"resample": True})[0])
    with pytest.raises(ValueError, match="unknown reset option"):
        vec.reset(options={"bogus": 1})


def test_vector_env__make_vec_gives_the_native_batched_env():
    vec = make_vec(5, scenario="tiny", reserved_priority="mask")
    assert isinstance(vec, UECVectorEnv) and isinstance(vec, VectorEnv)
    assert vec.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    single = UECEnv(scenario="tiny")
    assert vec.single_observation_space == single.observation_space
    assert vec.single_action_space == single.action_space
    assert vec.observation_space.shape == (5, *single.observation_space.shape)
    assert vec.action_space == gym.spaces.MultiDiscrete([single.action_space.n] * 5)
    obs, infos = vec.reset(seed=0)
    assert obs.dtype == np.float32 and vec.observation_space.contains(obs)
    assert infos["action_mask"].shape == (5, single.action_space.n) and infos["action_mask"].dtype == np.int8
    assert infos["_action_mask"].all()
    same = make_vec(2, scenario="tiny", autoreset_mode="SameStep")
    assert same.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    assert UECVectorEnv.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP  # per instance, not the class's


def test_vector_env__step_before_reset_raises():
    vec = make_vec(2, scenario="tiny")
    with pytest.raises(RuntimeError, match="reset"):
        vec.step(np.zeros(2, np.int64))


@pytest.mark.parametrize("actions", [
    np.array([0, 99]), np.array([-1, 0]), np.array([0.0, 1.0]), np.array([True, False]), np.array([0, 0, 0]), "0",
])
def test_vector_env__actions_outside_the_space_raise(actions):
    vec = make_vec(2, scenario="tiny")
    vec.reset(seed=0)
    with pytest.raises(ValueError, match="invalid"):
        vec.step(actions)


def test_vector_env__infeasible_action_is_a_flagged_reject_as_in_the_single_env():
    vec, single = make_vec(1), gym.make("UEC-v0", reserved_priority="preempt")
    _, infos = vec.reset(seed=3)
    single.reset(seed=3)
    action = int(np.flatnonzero(infos["action_mask"][0])[-1])
    vec.step(np.array([action]))  # occupy a server ...
    single.step(action)
    obs, reward, _, _, infos = vec.step(np.array([action]))  # ... and pick it again while it is busy
    s_obs, s_reward, _, _, s_info = single.step(action)
    if s_info["invalid_action"]:
        assert infos["invalid_action"][0] and reward[0] == 0.0
    np.testing.assert_array_equal(obs[0], s_obs)
    assert reward[0] == s_reward and infos["invalid_action"][0] == s_info["invalid_action"]


@pytest.mark.parametrize("kwargs", [
    {"reserved_priority": "sometimes"}, {"instance_seed": -1}, {"instance_seed": 1.5}, {"resample_instance": "yes"},
    {"scenario": "nope"}, {"scenario_overrides": {"num_servers": 0}}, {"scenario": "fig3", "resample_instance": True},
])
def test_vector_env__bad_kwargs_raise_the_single_env_error(kwargs):
    with pytest.raises(ValueError) as single_error:
        UECEnv(**kwargs)
    with pytest.raises(ValueError, match=re.escape(str(single_error.value))):
        make_vec(2, **kwargs)


def test_vector_env__works_with_gymnasium_vector_wrappers():
    vec = gym.wrappers.vector.RecordEpisodeStatistics(make_vec(3, scenario="tiny"))
    _, infos = vec.reset(seed=0)
    rng, returns = np.random.default_rng(0), []
    for _ in range(60):
        masks = vec.unwrapped.action_masks()
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
        _, _, terminated, _, infos = vec.step(actions)
        if "episode" in infos:
            returns.extend(infos["episode"]["r"][infos["_episode"]])
            np.testing.assert_allclose(infos["episode"]["r"][terminated], infos["episode_profit"][terminated])
    assert len(returns) >= 3


def test_vector_env__throughput_benchmark_runs_all_three_vector_envs():
    from benchmarks.env_throughput import vector_rates

    rates = vector_rates(2, seconds=0.06, rounds=2)
    assert set(rates) == {"native", "sync", "cartpole"} and all(rate > 0 for rate in rates.values())
