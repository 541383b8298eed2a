"""OINC-v0's native vector env (envs.oinc.vector.OINCVectorEnv): every sub-env is the single env.

The key property: sub-env i reset with ``seed + i`` gives exactly the observations, rewards, flags and
infos (episode-end metrics included) of ``gym.make("OINC-v0")`` reset with ``seed + i`` and stepped with
the same actions, across auto-resets in both autoreset modes, with fixed, resampled and seed-drawn
instances, both observations and every retraining controller.
"""

from __future__ import annotations

import math
import re

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, VectorEnv
from hypothesis import given, settings
from hypothesis import strategies as st

import envs  # noqa: F401
from envs.oinc.env import OINCEnv
from envs.oinc.vector import OINCVectorEnv, _subset_sum

RESET_KEYS = ("t", "jobs_arrived", "retraining_share_mean")


def make_vec(num_envs: int, **kwargs) -> OINCVectorEnv:
    return gym.make_vec("OINC-v0", num_envs=num_envs, vectorization_mode="vector_entry_point", **kwargs)


def same(a: object, b: object) -> bool:
    """Equal, NaN equal to NaN (the episode metrics are NaN without jobs)."""
    return a == b or (isinstance(b, float) and math.isnan(b) and math.isnan(float(a)))


def assert_infos_equal(infos: dict, i: int, single: dict) -> None:
    """Sub-env ``i`` of the batched ``infos`` holds exactly ``single``'s keys and values."""
    held = {key for key in infos if not key.startswith("_") and key not in ("final_obs", "final_info")
            and infos["_" + key][i]}
    assert held == set(single), held ^ set(single)
    for key, value in single.items():
        assert same(infos[key][i], value), (key, infos[key][i], value)
        assert infos[key].dtype == (np.int64 if isinstance(value, int) else np.float64), key


def assert_same_as_single_envs(num_envs: int, seed: int, steps: int, policy_seed: int = 0,
                               autoreset_mode: AutoresetMode = AutoresetMode.NEXT_STEP,
                               options: dict | None = None, **kwargs) -> int:
    """Step the vector env and ``num_envs`` single envs with the same uniformly random actions; assert every
    sub-env matches its single env. Returns the number of finished episodes."""
    vec = make_vec(num_envs, autoreset_mode=autoreset_mode, **kwargs)
    singles = [gym.make("OINC-v0", **kwargs) for _ in range(num_envs)]
    obs, infos = vec.reset(seed=seed, options=options)
    single = [env.reset(seed=seed + i, options=options) for i, env in enumerate(singles)]
    rng = np.random.default_rng(policy_seed)
    pending = False  # NEXT_STEP: every sub-env resets at the next step (episodes end together)
    episodes = 0
    for _ in range(steps):
        assert obs.dtype == np.float32 and vec.observation_space.contains(obs)
        for i, (s_obs, s_info) in enumerate(single):
            np.testing.assert_array_equal(obs[i], s_obs)
            assert_infos_equal(infos, i, s_info)
        actions = rng.integers(0, vec.single_action_space.nvec, size=(num_envs, vec.single_action_space.shape[0]))
        obs, rewards, terminated, truncated, infos = vec.step(actions)
        assert rewards.shape == terminated.shape == truncated.shape == (num_envs,) and rewards.dtype == np.float64
        assert terminated.dtype == truncated.dtype == np.bool_ and not terminated.any()
        for i, env in enumerate(singles):
            if pending:  # NEXT_STEP: the vector env resets sub-env i now, ignoring its action
                single[i] = env.reset()
                assert rewards[i] == 0.0 and not terminated[i] and not truncated[i]
                continue
            s_obs, s_reward, s_term, s_trunc, s_info = env.step(actions[i])
            assert rewards[i] == s_reward and terminated[i] == s_term and truncated[i] == s_trunc
            if s_trunc and autoreset_mode == AutoresetMode.SAME_STEP:
                assert infos["_final_obs"][i] and infos["_final_info"][i]
                np.testing.assert_array_equal(infos["final_obs"][i], s_obs)
                assert_infos_equal(infos["final_info"], i, s_info)
                s_obs, s_info = env.reset()
            single[i] = (s_obs, s_info)
        if pending:
            pending = False
        elif truncated.any():
            episodes += num_envs
            pending = autoreset_mode == AutoresetMode.NEXT_STEP
    return episodes


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    num_envs=st.integers(1, 4),
    resample_instance=st.booleans(),
    instance_seed=st.sampled_from([0, 3, None]),
    observation=st.sampled_from(["paper", "extended"]),
    autoreset_mode=st.sampled_from([AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP]),
)
def test_vector_env__tiny_sub_envs_equal_the_single_env(seed, num_envs, resample_instance, instance_seed,
                                                        observation, autoreset_mode):
    episodes = assert_same_as_single_envs(
        num_envs, seed, steps=45, policy_seed=seed, autoreset_mode=autoreset_mode, scenario="tiny",
        resample_instance=resample_instance, instance_seed=instance_seed, observation=observation,
    )
    assert episodes >= 2 * num_envs  # tiny episodes last 20 slots: the test crosses auto-resets


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**16), share=st.sampled_from([None, 0.3, 0.95]), psi=st.sampled_from([0.0, 3.0]),
       drain_max_slots=st.sampled_from([None, 0, 2]))
def test_vector_env__tiny_controller_parameters_equal_the_single_env(seed, share, psi, drain_max_slots):
    assert_same_as_single_envs(3, seed, steps=22, policy_seed=seed, scenario="tiny", retraining_share=share, psi=psi,
                               drain_max_slots=drain_max_slots, autoreset_mode=AutoresetMode.SAME_STEP)


@pytest.mark.parametrize("autoreset_mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_vector_env__paper_sub_envs_equal_the_single_env(autoreset_mode):
    # the paper's I = 40, J = 12 with more drift (busy queues, waiting jobs, pauses) over one short episode
    assert assert_same_as_single_envs(2, seed=7, steps=32, autoreset_mode=autoreset_mode,
                                      scenario_overrides={"horizon": 30, "drift_prob": 0.05}) == 2


@pytest.mark.parametrize("autoreset_mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_vector_env__many_short_jobs_grow_the_job_table_and_still_equal_the_single_env(autoreset_mode):
    overrides = {"drift_prob": 0.9, "deadline_slack_s": (1.0, 2.0), "retrain_set_size": 1}
    vec = make_vec(3, scenario="tiny", scenario_overrides=overrides)
    capacity = vec.unwrapped._K
    assert assert_same_as_single_envs(3, seed=1, steps=45, scenario="tiny", scenario_overrides=overrides,
                                      autoreset_mode=autoreset_mode) == 6
    vec.reset(seed=1)
    for _ in range(20):
        vec.step(vec.action_space.sample())
    assert capacity < vec.unwrapped._K  # the episode held more jobs than the table's first capacity


@pytest.mark.parametrize("retraining", ["kalmia", "ekya", "dedas", "zhang"])
def test_vector_env__other_controllers_equal_the_single_env(retraining):
    assert assert_same_as_single_envs(2, seed=3, steps=22, scenario="tiny", retraining=retraining) == 2


def test_vector_env__reset_options_reach_every_sub_env():
    inst = OINCEnv(scenario="tiny", instance_seed=42).instance
    vec, single = make_vec(2, scenario="tiny"), gym.make("OINC-v0", scenario="tiny")
    assert_same_as_single_envs(2, seed=5, steps=25, scenario="tiny", options={"instance": inst})
    assert_same_as_single_envs(2, seed=8, steps=25, scenario="tiny", options={"resample": True})
    obs, _ = vec.reset(seed=5, options={"instance": inst})
    assert all(env.instance is inst for env in vec.unwrapped.envs)
    np.testing.assert_array_equal(obs[1], single.reset(seed=6, options={"instance": inst})[0])
    obs, _ = vec.reset(seed=[8, 9], options={"resample": True})
    np.testing.assert_array_equal(obs[0], single.reset(seed=8, options={"resample": True})[0])
    with pytest.raises(ValueError, match="unknown reset option"):
        vec.reset(options={"bogus": 1})


def test_vector_env__make_vec_gives_the_native_batched_env():
    vec = make_vec(5, scenario="tiny")
    assert isinstance(vec, OINCVectorEnv) and isinstance(vec, VectorEnv)
    assert vec.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    single = OINCEnv(scenario="tiny")
    assert vec.single_observation_space == single.observation_space
    assert vec.single_action_space == single.action_space
    assert vec.observation_space.shape == (5, *single.observation_space.shape)
    assert vec.action_space.shape == (5, *single.action_space.shape)
    obs, infos = vec.reset(seed=0)
    assert obs.dtype == np.float32 and vec.observation_space.contains(obs)
    assert set(infos) == {*RESET_KEYS, *("_" + key for key in RESET_KEYS)}
    same_step = make_vec(2, scenario="tiny", autoreset_mode="SameStep")
    assert same_step.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    assert OINCVectorEnv.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP  # per instance, not the class's


def test_vector_env__step_before_reset_and_after_close_raises():
    vec = make_vec(2, scenario="tiny")
    actions = np.zeros((2, 9), np.int64)
    with pytest.raises(RuntimeError, match="reset"):
        vec.step(actions)
    vec.reset(seed=0)
    vec.step(actions)
    vec.close()
    with pytest.raises(RuntimeError, match="after close"):
        vec.step(actions)
    with pytest.raises(RuntimeError, match="after close"):  # a closed vector env stays closed
        vec.reset(seed=0)


@pytest.mark.parametrize("actions", [
    np.zeros((2, 9)), np.zeros((2, 9), bool), np.zeros((2, 8), np.int64), np.zeros(9, np.int64),
    np.zeros((3, 9), np.int64), np.full((2, 9), -1), np.array([[0, 0, 4] * 3] * 2), np.array([[2, 0, 0] * 3] * 2),
    "0", None,
])
def test_vector_env__actions_outside_the_space_raise_naming_actions(actions):
    for retraining in ("aret", "ekya"):
        vec = make_vec(2, scenario="tiny", retraining=retraining)
        vec.reset(seed=0)
        with pytest.raises(ValueError, match=r"(?s)actions.*invalid"):
            vec.step(actions)


@pytest.mark.parametrize("kwargs", [
    {"retraining": "sometimes"}, {"instance_seed": -1}, {"instance_seed": 1.5}, {"resample_instance": "yes"},
    {"scenario": "nope"}, {"scenario_overrides": {"num_devices": 0}}, {"psi": -1.0}, {"observation": "full"},
    {"retraining_share": 1.5}, {"drain_max_slots": -1},
])
def test_vector_env__bad_kwargs_raise_the_single_env_error(kwargs):
    with pytest.raises(ValueError) as single_error:
        OINCEnv(**kwargs)
    with pytest.raises(ValueError, match=re.escape(str(single_error.value))):
        make_vec(2, **kwargs)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), width=st.sampled_from([1, 7, 8, 12, 17, 40, 140]))
def test_subset_sum_is_numpys_sum_of_the_subset_bit_for_bit(seed, width):
    rng = np.random.default_rng(seed)
    values = rng.random((6, width)) * 10.0 ** rng.integers(-6, 6, (6, width))
    mask = rng.random((6, width)) < rng.random((6, 1)) * 1.2
    sums = _subset_sum(values, mask)
    for r in range(6):
        assert sums[r] == values[r][mask[r]].sum()


def test_vector_env__works_with_gymnasium_vector_wrappers():
    vec = gym.wrappers.vector.RecordEpisodeStatistics(make_vec(3, scenario="tiny"))
    vec.reset(seed=0)
    returns = []
    for _ in range(45):
        _, _, _, _, infos = vec.step(vec.action_space.sample())
        if "episode" in infos:
            returns.extend(infos["episode"]["r"][infos["_episode"]])
    assert len(returns) >= 3
