"""agents.vec_env: UEC-v0's native vector env as an SB3 VecEnv (sanity, equality with DummyVecEnv, learning)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported
from stable_baselines3 import DQN
from stable_baselines3.common.vec_env import DummyVecEnv, VecMonitor

import envs  # noqa: F401
from agents.vec_env import GymnasiumVectorToSB3, make_vec_env


def test_vec_env_adapter__behaves_as_an_sb3_vec_env():
    venv = make_vec_env("UEC-v0", 4, scenario="tiny")
    assert venv.num_envs == 4 and venv.render_mode is None
    venv.seed(0)
    obs = venv.reset()  # observations only
    assert isinstance(obs, np.ndarray) and obs.shape == (4, *venv.observation_space.shape)
    assert obs.dtype == venv.observation_space.dtype and len(venv.reset_infos) == 4
    assert is_masking_supported(venv) and get_action_masks(venv).shape == (4, venv.action_space.n)
    rng, finished = np.random.default_rng(0), 0
    for _ in range(40):
        masks = get_action_masks(venv)
        np.testing.assert_array_equal(masks, obs[:, -venv.action_space.n:] > 0.5)  # the mask ends the observation
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
        obs, rewards, dones, infos = venv.step(actions)
        assert rewards.shape == dones.shape == (4,) and rewards.dtype == np.float32 and dones.dtype == np.bool_
        assert isinstance(infos, list) and len(infos) == 4
        for i, info in enumerate(infos):
            assert venv.observation_space.contains(obs[i])
            assert info["TimeLimit.truncated"] is False
            if dones[i]:
                finished += 1
                assert venv.observation_space.contains(info["terminal_observation"])
                assert info["reserved_completed"] == info["reserved_total"]
                assert not np.array_equal(info["terminal_observation"], obs[i])  # obs[i] is the next episode's
            else:
                assert "terminal_observation" not in info
    assert finished >= 4
    venv.close()


def test_vec_env_adapter__equals_dummy_vec_env_over_gym_make():
    kwargs = {"scenario": "tiny", "reserved_priority": "mask"}
    native = make_vec_env("UEC-v0", 3, **kwargs)
    dummy = DummyVecEnv([lambda: gym.make("UEC-v0", **kwargs) for _ in range(3)])
    native.seed(11)
    dummy.seed(11)
    obs_n, obs_d = native.reset(), dummy.reset()
    rng, episodes = np.random.default_rng(3), 0
    for _ in range(80):
        np.testing.assert_array_equal(obs_n, obs_d)
        np.testing.assert_array_equal(get_action_masks(native), get_action_masks(dummy))
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in get_action_masks(dummy)])
        obs_n, rew_n, done_n, info_n = native.step(actions)
        obs_d, rew_d, done_d, info_d = dummy.step(actions)
        np.testing.assert_array_equal(rew_n, rew_d)
        np.testing.assert_array_equal(done_n, done_d)
        for a, b in zip(info_n, info_d):
            assert a.keys() == b.keys()
            for key, value in b.items():  # every info, terminal_observation included
                np.testing.assert_array_equal(a[key], value, err_msg=key)
            episodes += "terminal_observation" in b
    assert episodes >= 3


def test_vec_env_adapter__rejects_a_next_step_vector_env():
    with pytest.raises(ValueError, match="SAME_STEP"):
        GymnasiumVectorToSB3(gym.make_vec("UEC-v0", num_envs=2, vectorization_mode="vector_entry_point"))


def test_vec_env_adapter__maskable_ppo_learns_on_it():
    venv = VecMonitor(make_vec_env("UEC-v0", 4, scenario="tiny"))
    model = MaskablePPO("MlpPolicy", venv, n_steps=64, batch_size=64, n_epochs=1, seed=0, device="cpu")
    model.learn(total_timesteps=512)
    assert model.num_timesteps >= 512 and len(model.ep_info_buffer) > 0


def test_vec_env_adapter__dqn_learns_on_it():
    venv = make_vec_env("UEC-v0", 4, scenario="tiny")
    model = DQN("MlpPolicy", venv, learning_starts=64, buffer_size=1_000, train_freq=4, seed=0, device="cpu")
    model.learn(total_timesteps=400)
    assert model.num_timesteps >= 400 and model.replay_buffer.size() > 0
