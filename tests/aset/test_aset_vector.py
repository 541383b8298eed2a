"""ASET-v0 / ASET-v1's native vector env (envs.aset.vector): every sub-env is the single env.

The key property: sub-env i reset with ``seed + i`` gives exactly the observations, rewards, flags, masks
and infos of ``gym.make(id)`` reset with ``seed + i`` and stepped with the same actions, across
auto-resets (truncations and terminations), in both autoreset modes, with fixed, resampled and
seed-drawn instances, and with the reset options the single env accepts.
"""

from __future__ import annotations

import dataclasses
import re

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, VectorEnv
from hypothesis import given, settings
from hypothesis import strategies as st

import envs  # noqa: F401  (registers the ids)
from envs.aset.env import ASETEnv
from envs.aset.generator import Scenario, build_instance
from envs.aset.types import POLICY_NAMES, Instance
from envs.aset.vector import ASETVectorEnv, ASETVectorEnvV1

#: Small, fast settings: the 12-worker topology, short episodes.
FAST = {"topology": "dc-cloud", "horizon": 4}
#: A scenario in which the instance draws (per-antenna rate phases and application mixes) change the episode.
VARIED = {"rate_variation": 0.5, "app_mix_concentration": 1.0}


def make_vec(env_id: str, num_envs: int, **kwargs) -> VectorEnv:
    return gym.make_vec(env_id, num_envs=num_envs, vectorization_mode="vector_entry_point", **kwargs)


def assert_info_row(infos: dict, i: int, single: dict) -> None:
    """Row ``i`` of the batched ``infos`` is the single env's ``info`` (every key, marked present)."""
    assert {key for key in infos if not key.startswith("_") and key not in ("final_obs", "final_info")} == set(single)
    for key, value in single.items():
        assert infos["_" + key][i], key
        np.testing.assert_array_equal(infos[key][i], value, err_msg=key)


def assert_same_instance(a: Instance, b: Instance) -> None:
    """Every field of the two instances is equal (arrays elementwise)."""
    for field in dataclasses.fields(Instance):
        np.testing.assert_array_equal(getattr(a, field.name), getattr(b, field.name), err_msg=field.name)


def assert_same_as_single_envs(env_id: str, num_envs: int, seed: int, steps: int, policy_seed: int = 0,
                               autoreset_mode: AutoresetMode = AutoresetMode.NEXT_STEP, **kwargs) -> int:
    """Step the vector env and ``num_envs`` single envs with the same uniformly random actions; assert every
    sub-env matches its single env. Returns the number of finished episodes."""
    vec = make_vec(env_id, num_envs, autoreset_mode=autoreset_mode, **kwargs)
    singles = [gym.make(env_id, **kwargs) for _ in range(num_envs)]
    obs, infos = vec.reset(seed=seed)
    single = [env.reset(seed=seed + i) for i, env in enumerate(singles)]
    rng = np.random.default_rng(policy_seed)
    pending = [False] * num_envs  # NEXT_STEP: this sub-env resets at the next step
    episodes = 0
    for _ in range(steps):
        assert obs.dtype == np.float32 and vec.observation_space.contains(obs)
        for i, (s_obs, s_info) in enumerate(single):
            np.testing.assert_array_equal(obs[i], s_obs)
            assert_info_row(infos, i, s_info)
            assert_same_instance(vec.unwrapped.envs[i].instance, singles[i].unwrapped.instance)
        np.testing.assert_array_equal(vec.unwrapped.action_masks(), infos["action_mask"].astype(bool))
        actions = rng.integers(0, len(POLICY_NAMES), num_envs)
        obs, rewards, terminated, truncated, infos = vec.step(actions)
        assert rewards.dtype == np.float64 and rewards.shape == (num_envs,)
        assert terminated.dtype == truncated.dtype == np.bool_
        for i, env in enumerate(singles):
            if pending[i]:  # NEXT_STEP: the vector env resets sub-env i now, ignoring its action
                single[i] = env.reset()
                pending[i] = False
                assert rewards[i] == 0.0 and not terminated[i] and not truncated[i]
                continue
            s_obs, s_reward, s_term, s_trunc, s_info = env.step(int(actions[i]))
            assert rewards[i] == s_reward and terminated[i] == s_term and truncated[i] == s_trunc
            if s_term or s_trunc:
                episodes += 1
                if autoreset_mode == AutoresetMode.NEXT_STEP:
                    pending[i] = True
                else:
                    assert infos["_final_obs"][i] and infos["_final_info"][i]
                    np.testing.assert_array_equal(infos["final_obs"][i], s_obs)
                    assert_info_row(infos["final_info"], i, s_info)
                    s_obs, s_info = env.reset()
            elif autoreset_mode == AutoresetMode.SAME_STEP and "_final_obs" in infos:
                assert not infos["_final_obs"][i] and not infos["final_info"]["_window"][i]
            single[i] = (s_obs, s_info)
    return episodes


@settings(max_examples=10, deadline=None)
@given(
    env_id=st.sampled_from(["ASET-v0", "ASET-v1"]),
    seed=st.integers(0, 2**16),
    num_envs=st.integers(1, 4),
    instance_seed=st.sampled_from([0, 5, None]),
    resample_instance=st.booleans(),
    scenario_overrides=st.sampled_from([None, VARIED]),
    obs_layout=st.sampled_from(["flat", "2d"]),
    autoreset_mode=st.sampled_from([AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP]),
)
def test_aset_vector__sub_envs_equal_the_single_env(env_id, seed, num_envs, instance_seed, resample_instance,
                                                    scenario_overrides, obs_layout, autoreset_mode):
    episodes = assert_same_as_single_envs(
        env_id, num_envs, seed, steps=11, policy_seed=seed, autoreset_mode=autoreset_mode,
        instance_seed=instance_seed, resample_instance=resample_instance, scenario_overrides=scenario_overrides,
        obs_layout=obs_layout, **FAST,
    )
    assert episodes >= 2 * num_envs  # horizon 4: the test crosses auto-resets


@pytest.mark.parametrize("autoreset_mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
@pytest.mark.parametrize("env_id", ["ASET-v0", "ASET-v1"])
def test_aset_vector__terminations_at_theta_equal_the_single_env(env_id, autoreset_mode):
    # the stress load with a high threshold: episodes end by termination, at different windows per sub-env
    episodes = assert_same_as_single_envs(env_id, 3, seed=11, steps=10, autoreset_mode=autoreset_mode,
                                          lam=100.0, theta=0.995, horizon=50)
    assert episodes >= 3


@pytest.mark.parametrize(("instance_seed", "resample_instance"), [(3, True), (None, False)])
def test_aset_vector__instances_drawn_at_every_reset_equal_the_single_env(instance_seed, resample_instance):
    # each sub-env draws its own instance sequence (from its own copy of the instance generator, or its seed)
    assert_same_as_single_envs("ASET-v1", 3, seed=4, steps=9, autoreset_mode=AutoresetMode.SAME_STEP,
                               instance_seed=instance_seed, resample_instance=resample_instance,
                               scenario_overrides=VARIED, **FAST)


def test_aset_vector__full_edge_default_sub_envs_equal_the_single_env():
    assert_same_as_single_envs("ASET-v1", 2, seed=3, steps=4)


def test_aset_vector__matches_sync_vector_env_exactly_including_dtypes():
    kwargs = {**FAST, "lam": 100.0}
    for mode in (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP):
        native = make_vec("ASET-v1", 3, autoreset_mode=mode, **kwargs)
        sync = gym.make_vec("ASET-v1", num_envs=3, vectorization_mode="sync",
                            vector_kwargs={"autoreset_mode": mode}, **kwargs)
        outs = [native.reset(seed=2), sync.reset(seed=2)]
        rng = np.random.default_rng(0)
        for step in range(10):
            _assert_equal_nested(*outs, path=f"{mode.value} step {step}")
            actions = rng.integers(0, 7, 3)
            outs = [native.step(actions), sync.step(actions)]


def _assert_equal_nested(a, b, path: str) -> None:
    """Equal values and dtypes, recursively through tuples and info dicts (final_obs: per-entry arrays)."""
    if isinstance(a, (tuple, dict)):
        assert type(a) is type(b) and len(a) == len(b), path
        keys = a.keys() if isinstance(a, dict) else range(len(a))
        assert not isinstance(a, dict) or set(a) == set(b), (path, set(a) ^ set(b))
        for key in keys:
            _assert_equal_nested(a[key], b[key], f"{path}/{key}")
    elif path.endswith("final_obs"):
        assert all((x is None and y is None) or np.array_equal(x, y) for x, y in zip(a, b)), path
    else:
        assert np.asarray(a).dtype == np.asarray(b).dtype, path
        np.testing.assert_array_equal(a, b, err_msg=path)


def test_aset_vector__reset_options_reach_every_sub_env():
    inst = build_instance("dc-cloud", Scenario.from_overrides(60.0, None), np.random.default_rng(42))
    vec, single = make_vec("ASET-v0", 2, **FAST), gym.make("ASET-v0", **FAST)
    obs, _ = vec.reset(seed=5, options={"instance": inst})
    assert all(env.instance is inst for env in vec.unwrapped.envs)
    single.reset(seed=6, options={"instance": inst})
    actions = np.array([3, 4])
    obs, rewards, _, _, _ = vec.step(actions)
    s_obs, s_reward, *_ = single.step(4)
    np.testing.assert_array_equal(obs[1], s_obs)
    assert rewards[1] == s_reward
    vec.reset(seed=[8, 9], options={"resample": True})
    single.reset(seed=9, options={"resample": True})
    assert vec.unwrapped.envs[1].instance.rate_phase.tolist() == single.unwrapped.instance.rate_phase.tolist()
    obs, rewards, _, _, _ = vec.step(actions)
    s_obs, s_reward, *_ = single.step(4)
    np.testing.assert_array_equal(obs[1], s_obs)
    assert rewards[1] == s_reward
    with pytest.raises(ValueError, match="unknown reset option"):
        vec.reset(options={"bogus": 1})


@pytest.mark.parametrize(("env_id", "cls", "single_cls"), [("ASET-v0", ASETVectorEnv, ASETEnv),
                                                          ("ASET-v1", ASETVectorEnvV1, None)])
def test_aset_vector__make_vec_gives_the_native_batched_env(env_id, cls, single_cls):
    vec = make_vec(env_id, 5, obs_layout="2d", topology="dc-cloud")
    assert type(vec) is cls and isinstance(vec, VectorEnv)
    assert vec.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    single = gym.make(env_id, obs_layout="2d", topology="dc-cloud")
    assert vec.single_observation_space == single.observation_space
    assert vec.single_action_space == single.action_space
    assert vec.observation_space.shape == (5, *single.observation_space.shape)
    assert vec.action_space == gym.spaces.MultiDiscrete([7] * 5)
    obs, infos = vec.reset(seed=0)
    assert obs.dtype == np.float32 and vec.observation_space.contains(obs) and not obs.any()
    assert infos["action_mask"].shape == (5, 7) and infos["action_mask"].dtype == np.int8
    assert infos["_action_mask"].all() and vec.action_masks().all() and vec.action_masks().dtype == np.bool_
    same = make_vec(env_id, 2, autoreset_mode="SameStep", topology="dc-cloud")
    assert same.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    assert cls.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP  # per instance, not the class's
    if single_cls is not None:
        assert all(type(env) is single_cls for env in vec.envs)


def test_aset_vector__step_before_reset_and_after_close_raises():
    vec = make_vec("ASET-v1", 2, **FAST)
    with pytest.raises(RuntimeError, match="reset"):
        vec.step(np.zeros(2, np.int64))
    vec.reset(seed=0)
    vec.step(np.zeros(2, np.int64))
    vec.close()
    assert vec.closed and all(env._closed for env in vec.unwrapped.envs)
    with pytest.raises(RuntimeError, match="close"):
        vec.step(np.zeros(2, np.int64))
    with pytest.raises(RuntimeError, match="after close"):  # a closed vector env stays closed
        vec.reset(seed=0)


@pytest.mark.parametrize("actions", [
    np.array([0, 7]), np.array([-1, 0]), np.array([0.0, 1.0]), np.array([True, False]), np.array([0, 0, 0]),
    np.array([[0, 1]]), "0", [0, "1"], None,
])
def test_aset_vector__actions_outside_the_space_raise_naming_actions(actions):
    vec = make_vec("ASET-v1", 2, **FAST)
    vec.reset(seed=0)
    with pytest.raises(ValueError, match=r"actions.* is invalid"):
        vec.step(actions)


def test_aset_vector__python_and_numpy_integer_actions_are_accepted():
    vec = make_vec("ASET-v1", 2, **FAST)
    vec.reset(seed=0)
    vec.step([1, 2])
    vec.step(np.array([6, 0], np.uint8))


@pytest.mark.parametrize("kwargs", [
    {"topology": "nope"}, {"horizon": 0}, {"theta": 1.5}, {"instance_seed": -1}, {"resample_instance": "yes"},
    {"obs_layout": "3d"}, {"lam": 0.0}, {"scenario_overrides": {"window_s": 0.0}},
])
def test_aset_vector__bad_kwargs_raise_the_single_env_error(kwargs):
    with pytest.raises(ValueError) as single_error:
        ASETEnv(**kwargs)
    with pytest.raises(ValueError, match=re.escape(str(single_error.value))):
        make_vec("ASET-v0", 2, **kwargs)


def test_aset_vector__works_with_gymnasium_vector_wrappers():
    vec = gym.wrappers.vector.RecordEpisodeStatistics(make_vec("ASET-v1", 3, **FAST))
    vec.reset(seed=0)
    rng, lengths = np.random.default_rng(0), []
    for _ in range(10):
        _, _, _, _, infos = vec.step(rng.integers(0, 7, 3))
        if "episode" in infos:
            lengths.extend(infos["episode"]["l"][infos["_episode"]])
    assert lengths and set(lengths) == {FAST["horizon"]}
