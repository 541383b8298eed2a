"""UEC-v0 as a Gymnasium env: checkers, registration, seeding, pickling, reset options, bad input."""

from __future__ import annotations

import pickle
import subprocess
import sys
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from stable_baselines3.common.env_checker import check_env as sb3_check_env

import envs  # noqa: F401
from envs.uec.env import UECEnv
from envs.uec.generator import PRESETS, Scenario, generate_instance

from tests_helpers_uec import random_feasible_rollout

ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("kwargs", [{}, {"scenario": "tiny"}, {"scenario": "fig3"}, {"scenario": "tiny", "resample_instance": True}])
def test_uec__passes_gymnasium_and_sb3_checkers_without_warnings(kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning from the checkers fails the test
        check_env(gym.make("UEC-v0", **kwargs).unwrapped)
        sb3_check_env(gym.make("UEC-v0", **kwargs).unwrapped, warn=True)


def test_uec__make_with_module_prefix_works_in_a_fresh_interpreter():
    code = "import gymnasium as gym; env = gym.make('envs:UEC-v0'); print(env.reset(seed=1)[0].shape)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip().startswith("(")


def test_uec__two_envs_with_the_same_seed_roll_out_identically():
    a, b = gym.make("UEC-v0"), gym.make("UEC-v0")
    trace_a = random_feasible_rollout(a, seed=11, policy_seed=5)
    trace_b = random_feasible_rollout(b, seed=11, policy_seed=5)
    assert len(trace_a) == len(trace_b) > 10
    for (obs_a, r_a, info_a), (obs_b, r_b, info_b) in zip(trace_a, trace_b):
        np.testing.assert_array_equal(obs_a, obs_b)
        assert r_a == r_b and info_a["time"] == info_b["time"]


def test_uec__different_seeds_give_different_episodes_on_the_same_instance():
    env = gym.make("UEC-v0")
    env.reset(seed=1)
    first = env.unwrapped._arrival_slots.copy()
    inst = env.unwrapped.instance
    env.reset(seed=2)
    assert env.unwrapped.instance is inst
    assert not np.array_equal(first, env.unwrapped._arrival_slots)


def test_uec__pickle_round_trip_mid_episode_continues_identically():
    env = UECEnv(scenario="paper")
    obs, info = env.reset(seed=3)
    for _ in range(5):
        obs, _, _, _, info = env.step(int(np.flatnonzero(info["action_mask"])[-1]))
    clone = pickle.loads(pickle.dumps(env))
    for _ in range(40):
        action = int(np.flatnonzero(info["action_mask"])[-1])
        out_a, out_b = env.step(action), clone.step(action)
        np.testing.assert_array_equal(out_a[0], out_b[0])
        assert out_a[1:4] == out_b[1:4]
        info = out_a[4]
        if out_a[2]:
            break


def test_uec__observation_is_fresh_float32_inside_its_space_with_the_mask_last():
    env = UECEnv(scenario="paper")
    obs, info = env.reset(seed=0)
    obs2, *_ = env.step(0)
    assert obs.dtype == np.float32 and obs2.dtype == np.float32 and obs is not obs2
    assert env.observation_space.contains(obs)
    parts = env.layout.split(obs)
    np.testing.assert_array_equal(parts["action_mask"], info["action_mask"])
    np.testing.assert_array_equal(obs[-env.action_space.n :], info["action_mask"])
    assert parts["device"].sum() == 1.0 and parts["servers"].shape == (4, 5)
    assert isinstance(env.step(0)[1], float)


def test_uec__reset_can_pin_or_resample_the_instance():
    env = UECEnv(scenario="tiny")
    pinned = generate_instance("tiny", np.random.default_rng(123))
    env.reset(seed=0, options={"instance": pinned})
    assert env.instance is pinned
    env.reset(seed=1)
    assert env.instance is pinned  # kept by default
    env.reset(seed=2, options={"resample": True})
    assert env.instance is not pinned
    again = UECEnv(scenario="tiny", resample_instance=True)
    again.reset(seed=5)
    first = again.instance
    again.reset(seed=6)
    assert again.instance is not first and again.instance.num_servers == first.num_servers


def test_uec__same_instance_seed_gives_the_same_instance():
    a, b = UECEnv(instance_seed=7), UECEnv(instance_seed=7)
    np.testing.assert_array_equal(a.instance.expected_profit, b.instance.expected_profit)
    assert not np.array_equal(a.instance.capacity, UECEnv(instance_seed=8).instance.capacity)


# --- bad input -----------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("overrides", "parameter"),
    [
        ({"num_servers": 0}, "num_servers"),
        ({"num_servers": 2.5}, "num_servers"),
        ({"num_devices": 0}, "num_devices"),
        ({"num_profiles": 9}, "num_profiles"),
        ({"horizon": 1}, "horizon"),
        ({"slot_seconds": 0}, "slot_seconds"),
        ({"capacity_range": (10, 5)}, "capacity_range"),
        ({"capacity_jitter": 0.95}, "capacity_jitter"),
        ({"weight_range": (-1, 2)}, "weight_range"),
        ({"sla_range": (0, 5)}, "sla_range"),
        ({"upload_mb_range": (-1, 2)}, "upload_mb_range"),
        ({"download_mb_range": (3, 1)}, "download_mb_range"),
        ({"distance_km_range": (0, 1)}, "distance_km_range"),
        ({"bandwidth_hz": 0}, "bandwidth_hz"),
        ({"tx_power_w": 0}, "tx_power_w"),
        ({"channel": "magic"}, "channel"),
        ({"alpha0_range": (0.5, 1.2)}, "alpha0_range"),
        ({"alpha_max": 0}, "alpha_max"),
        ({"decay_range": (0, 2)}, "decay_range"),
        ({"perf_scale_range": (-1, 1)}, "perf_scale_range"),
        ({"perf_rate_range": (1, 0)}, "perf_rate_range"),
        ({"duration_family": "gamma"}, "duration_family"),
        ({"duration_mean_range": (0.5, 3)}, "duration_mean_range"),
        ({"mean_arrival_prob": 1.5}, "mean_arrival_prob"),
        ({"arrival_amplitude": -0.1}, "arrival_amplitude"),
        ({"num_reserved": -1}, "num_reserved"),
        ({"reserved_density": 0.0}, "reserved_density"),
        ({"reserved_demand": 1.0}, "reserved_demand"),
        ({"over_provisioning": -0.1}, "over_provisioning"),
        ({"no_such_field": 1}, "valid parameters"),
    ],
)
def test_uec__scenario_parameter_out_of_range_raises_naming_it(overrides, parameter):
    with pytest.raises(ValueError, match=parameter) as excinfo:
        UECEnv(scenario_overrides=overrides)
    message = str(excinfo.value)
    assert "expected" in message or "allowed" in message or "valid" in message


def test_uec__density_demand_pair_that_cannot_be_over_provisioned_raises():
    with pytest.raises(ValueError, match=r"reserved_demand=0.3 .*reserved_density=0.1.*allowed values"):
        PRESETS["paper"].replace(reserved_density=0.1, reserved_demand=0.3)


def test_uec__indistinguishable_profiles_raise_naming_the_mean_range():
    with pytest.raises(ValueError, match=r"duration_mean_range=\(1.0, 1.5\) is too narrow"):
        UECEnv(scenario_overrides={"num_profiles": 3, "duration_mean_range": (1.0, 1.5), "duration_family": "uniform"})


def test_uec__empty_server_set_and_unknown_preset_raise():
    with pytest.raises(ValueError, match=r"num_servers=0 .*\[1, 64\]"):
        Scenario(num_servers=0)
    with pytest.raises(ValueError, match=r"scenario='huge'.*\['paper', 'tiny', 'theorem2', 'fig3'\]"):
        UECEnv(scenario="huge")


@pytest.mark.parametrize("action", [1.5, "1", None, -1, 10_000, np.float32(2.0)])
def test_uec__non_integer_or_out_of_space_action_raises_value_error(action):
    env = UECEnv()
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"action=.* expected an integer in \[0, 16\]"):
        env.step(action)


def test_uec__numpy_integer_actions_are_accepted():
    env = UECEnv()
    env.reset(seed=0)
    env.step(np.int64(0))
    env.step(np.array(0))


def test_uec__bad_constructor_and_reset_arguments_raise():
    with pytest.raises(ValueError, match="render_mode"):
        UECEnv(render_mode="human")
    with pytest.raises(ValueError, match="instance_seed"):
        UECEnv(instance_seed=-1)
    with pytest.raises(ValueError, match="resample_instance"):
        UECEnv(scenario="fig3", resample_instance=True)
    env = UECEnv(scenario="tiny")
    with pytest.raises(ValueError, match="valid options"):
        env.reset(options={"bogus": 1})
    with pytest.raises(ValueError, match=r"\(K, J, L\)"):
        env.reset(options={"instance": generate_instance("paper", np.random.default_rng(0))})
