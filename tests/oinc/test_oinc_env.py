"""OINC-v0: env conventions, feasibility of every action, the reward and metric identities, inputs."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import envs  # noqa: F401  (registers the ids)
from envs.common.radio import CHANNEL_PRESETS, shannon_rate_bps
from envs.oinc.env import OINCEnv
from envs.oinc.generator import PRESETS, SWEEPS, Scenario, make_scenario, sweep_scenarios
from envs.oinc.retraining import CONTROLLERS


def _play(env: OINCEnv, seed: int, policy_seed: int = 0) -> tuple[list[float], dict]:
    rng = np.random.default_rng(policy_seed)
    env.reset(seed=seed)
    rewards, done, info = [], False, {}
    while not done:
        _, reward, terminated, truncated, info = env.step(rng.integers(0, env.action_space.nvec))
        rewards.append(reward)
        done = terminated or truncated
    return rewards, info


@pytest.mark.parametrize("observation", ["paper", "extended"])
def test_oinc_v0__passes_both_env_checkers_without_warnings(observation: str) -> None:
    from gymnasium.utils.env_checker import check_env as gym_check
    from stable_baselines3.common.env_checker import check_env as sb3_check

    env = gym.make("OINC-v0", scenario="tiny", observation=observation)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gym_check(env.unwrapped)
        sb3_check(env.unwrapped, warn=True)
    paper_env = gym.make("OINC-v0", observation=observation).unwrapped
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gym_check(paper_env)
        sb3_check(paper_env, warn=True)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), ctrl=st.sampled_from(sorted(CONTROLLERS)), steps=st.integers(1, 30))
def test_oinc_v0__any_action_yields_feasible_shares(seed: int, ctrl: str, steps: int) -> None:
    env = OINCEnv(scenario="paper", scenario_overrides={"num_devices": 8, "num_edges": 3}, retraining=ctrl)
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    n_i, n_j = env.instance.num_devices, env.instance.num_edges
    for _ in range(steps):
        action = rng.integers(0, env.action_space.nvec)
        f_t = env.inference_share.copy()
        share = env.controller.share.copy()
        assert np.all((f_t >= 0.1 - 1e-12) & (f_t <= 1.0))
        assert np.all((share >= 0.0) & (share <= 0.9 + 1e-12))
        _, _, _, truncated, _ = env.step(action)
        alloc = env.last_allocation
        edge, z, v, paused = alloc["edge"], alloc["compute_share"], alloc["bandwidth_share"], alloc["paused"]
        assert edge.shape == (n_i,) and np.all(edge == action.reshape(n_i, 3)[:, 0])  # (1b): one edge per task
        assert np.all(z > 0) and np.all(v > 0)
        z_sum = np.bincount(edge, weights=z, minlength=n_j)
        v_sum = np.bincount(edge, weights=v, minlength=n_j)
        assert np.all(z_sum <= np.where(paused, 1.0, f_t) + 1e-9)  # (3a); a paused edge is all inference
        assert np.all(v_sum <= 1.0 + 1e-9)  # (1c)
        retraining = np.where(paused, 0.0, share)
        assert np.all(z_sum + retraining <= 1.0 + 1e-9)  # (1f)
        if truncated:
            break


def test_oinc_v0__reward_is_eq4_of_the_hand_computed_latency() -> None:
    env = OINCEnv(scenario="tiny", psi=3.0, retraining="ekya")  # ekya never pauses retraining
    env.reset(seed=5)
    inst = env.instance
    d, c = (x.copy() for x in env.current_tasks)
    f_t = env.inference_share.copy()
    action = np.array([0, 3, 0, 0, 1, 2, 1, 0, 1])  # devices 0, 1 on edge 0; device 2 on edge 1
    _, reward, _, _, info = env.step(action)
    z = np.array([8 / 10 * f_t[0], 2 / 10 * f_t[0], 1.0 * f_t[1]])
    v = np.array([1 / 5, 4 / 5, 1.0])
    edge = np.array([0, 0, 1])
    rate = v * inst.full_rate_bps[np.arange(3), edge]
    tau = d / rate + c / (z * inst.cpu_hz[edge])
    assert info["paused_edges"] == 0
    expected = np.mean(np.where(tau <= inst.slo_s, -tau, -(tau + 3.0)))
    assert reward == pytest.approx(expected, rel=1e-12)
    assert info["latency_mean_s"] == pytest.approx(tau.mean(), rel=1e-12)


def test_oinc_v0__same_seed_same_episode_and_types() -> None:
    env_a, env_b = OINCEnv(scenario="tiny"), OINCEnv(scenario="tiny")
    rewards_a, info_a = _play(env_a, seed=11)
    rewards_b, info_b = _play(env_b, seed=11)
    assert rewards_a == rewards_b
    assert all(type(r) is float for r in rewards_a)
    assert info_a["weighted_sum"] == info_b["weighted_sum"]
    rewards_c, _ = _play(env_a, seed=12)
    assert rewards_c != rewards_a


@pytest.mark.parametrize("ctrl", sorted(CONTROLLERS))
def test_oinc_v0__final_metrics_identities(ctrl: str) -> None:
    env = OINCEnv(scenario="tiny", scenario_overrides={"horizon": 40}, retraining=ctrl)
    _, info = _play(env, seed=3)
    jobs = env.jobs
    n = jobs.count
    assert n == info["jobs_total"] > 0
    assert info["jobs_censored"] == 0
    assert np.all(jobs.finish_s[:n] > jobs.arrival_s[:n])
    assert np.all(jobs.remaining[:n] == 0)
    completion = jobs.finish_s[:n] - jobs.arrival_s[:n]
    assert info["retraining_completion_s"] == pytest.approx(completion.mean())
    assert info["weighted_sum"] == pytest.approx(info["inference_latency_s"] + info["retraining_completion_s"])
    tasks = 40 * env.instance.num_devices
    on_time = np.count_nonzero(jobs.finish_s[:n] <= jobs.deadline_s[:n])
    hits = info["slo_hit_rate"] * tasks
    assert info["success_rate"] == pytest.approx((hits + on_time) / (tasks + n))
    # at most one outstanding job per device
    for i in range(env.instance.num_devices):
        mine = np.flatnonzero(jobs.device[:n] == i)
        assert np.all(jobs.arrival_s[mine][1:] >= jobs.finish_s[mine][:-1] - 1e-9)


def test_oinc_v0__channel_presets_and_paper_scale() -> None:
    inst_paper = OINCEnv().instance
    inst_phys = OINCEnv(scenario_overrides={"channel": "physical"}).instance
    assert set(CHANNEL_PRESETS) == {"paper", "physical"}
    # same draws, different channel readings; the literal reading gives an SNR near 80 dB
    assert np.allclose(inst_paper.distance_km, inst_phys.distance_km)
    snr_db = 10 * np.log10(2 ** (inst_paper.full_rate_bps / inst_paper.bandwidth_hz[None, :]) - 1)
    assert 70 < snr_db.mean() < 90
    assert np.all(inst_phys.full_rate_bps < inst_paper.full_rate_bps)
    rate = shannon_rate_bps(inst_paper.bandwidth_hz[None, :], inst_paper.tx_power_w[:, None], inst_paper.distance_km,
                            CHANNEL_PRESETS["paper"])
    assert np.allclose(rate, inst_paper.full_rate_bps)


def test_oinc_v0__synthetic_workload_in_range_and_bursty() -> None:
    env = OINCEnv()
    env.reset(seed=0)
    sc, draws = env.scenario, env._draws
    bits = sc.bits_per_data_unit
    assert draws.data_bits.shape == (200, 40)
    assert np.all((draws.data_bits >= 0.8 * bits - 1e-6) & (draws.data_bits <= 1.6 * bits + 1e-6))
    assert np.all((draws.cycles >= 100e6 - 1e-3) & (draws.cycles <= 200e6 + 1e-3))
    x = draws.cycles - draws.cycles.mean(axis=0)
    lag1 = (x[1:] * x[:-1]).sum() / (x * x).sum()
    assert lag1 > 0.5  # persistent bursts, not white noise


def test_oinc_v0__instance_pinning_and_resampling() -> None:
    env = OINCEnv(scenario="tiny")
    first = env.instance
    env.reset(seed=0, options={"resample": True})
    assert not np.allclose(env.instance.cpu_hz, first.cpu_hz)
    env.reset(seed=0, options={"instance": first})
    assert env.instance is first
    other = OINCEnv(scenario="tiny", instance_seed=0).instance
    assert np.allclose(other.cpu_hz, first.cpu_hz)


BAD_SCENARIO_VALUES = {
    "num_devices": 0,
    "num_edges": 0,
    "horizon": 0,
    "cpu_ghz": (9.0, 5.0),
    "bandwidth_mhz": (-1.0, 3.0),
    "bandwidth_scale": 0.0,
    "tx_power_mw": (0.0, 1e9),
    "distance_km": (0.0, 0.45),
    "slo_s": (0.3, 1e9),
    "data_mb": (0.0, 1.6),
    "data_unit": "GB",
    "megacycles": (200.0, 100.0),
    "channel": "fancy",
    "drift_prob": 1.5,
    "deadline_slack_s": (0.0, 10.0),
    "retrain_set_size": 0,
    "retrain_gcycles": (0.0, 1.0),
    "workload": "alibaba",
    "trace_path": None,
    "burst_prob": -0.1,
    "burst_persistence": 2.0,
    "ar_coef": 1.0,
    "noise_std": 5.0,
}


@pytest.mark.parametrize("field", sorted(BAD_SCENARIO_VALUES))
def test_oinc_v0__bad_scenario_value_raises_naming_parameter(field: str) -> None:
    overrides = {field: BAD_SCENARIO_VALUES[field]}
    if field == "trace_path":
        overrides["workload"] = "trace"
    with pytest.raises(ValueError, match=field):
        OINCEnv(scenario_overrides=overrides)


def test_oinc_v0__every_scenario_field_has_a_bad_value_test() -> None:
    assert set(BAD_SCENARIO_VALUES) == {f for f in Scenario.__dataclass_fields__}


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"retraining": "fifo"}, "retraining"),
        ({"scenario": "huge"}, "scenario"),
        ({"scenario_overrides": {"num_servers": 3}}, "scenario_overrides"),
        ({"observation": "pixels"}, "observation"),
        ({"psi": -1.0}, "psi"),
        ({"instance_seed": -1}, "instance_seed"),
        ({"drain_max_slots": -5}, "drain_max_slots"),
    ],
)
def test_oinc_v0__bad_constructor_argument_raises(kwargs: dict, name: str) -> None:
    with pytest.raises(ValueError, match=name) as err:
        OINCEnv(**kwargs)
    assert "expected" in str(err.value) or "valid" in str(err.value)


def test_oinc_v0__unknown_controller_lists_valid_names() -> None:
    with pytest.raises(ValueError, match="aret") as err:
        OINCEnv(retraining="nope")
    for name in CONTROLLERS:
        assert name in str(err.value)


def test_oinc_v0__action_outside_space_raises() -> None:
    env = OINCEnv(scenario="tiny")
    env.reset(seed=0)
    with pytest.raises(ValueError, match="action"):
        env.step(np.array([2, 0, 0, 0, 0, 0, 0, 0, 0]))  # edge 2 does not exist (J = 2)
    with pytest.raises(ValueError, match="action"):
        env.step(np.zeros(4, dtype=np.int64))
    with pytest.raises(ValueError, match="action"):
        env.step(np.full(9, 0.5))
    with pytest.raises(ValueError, match="action"):
        env.step(np.zeros(9))  # floats are rejected even when integral (as Gymnasium's MultiDiscrete does)
    env.step(np.zeros(9, dtype=np.int64))


def test_oinc_v0__deepcopy_continues_identically() -> None:
    import copy

    env = OINCEnv(scenario="tiny")
    env.reset(seed=3)
    env.step(np.zeros(9, dtype=np.int64))
    twin = copy.deepcopy(env)
    action = np.array([1, 2, 3, 0, 0, 1, 1, 3, 2])
    for _ in range(5):
        a = env.step(action)
        b = twin.step(action)
        assert np.array_equal(a[0], b[0]) and a[1] == b[1]


def test_oinc_v0__presets_and_sweeps_are_valid() -> None:
    for preset in PRESETS:
        make_scenario(preset)
    for name, (field, values) in SWEEPS.items():
        pairs = sweep_scenarios(name)
        assert [v for v, _ in pairs] == values
        assert all(getattr(sc, field) == v for v, sc in pairs)
    with pytest.raises(ValueError, match="sweep"):
        sweep_scenarios("latency")


def test_oinc_v0__extended_observation_carries_every_instance_feature_the_heuristics_read() -> None:
    """SLOs, the rate table and the edges' CPU (absolute scale: over the scenario's highest), then the queues."""
    env = OINCEnv(scenario="paper", observation="extended", resample_instance=True)
    n_i, n_j = env.scenario.num_devices, env.scenario.num_edges
    for seed in (0, 1):
        obs, _ = env.reset(seed=seed)
        inst = env.instance
        tail = obs[2 * n_i + n_j:]
        assert tail.shape == (n_i + n_i * n_j + 2 * n_j,)
        np.testing.assert_allclose(tail[:n_i], inst.slo_s / inst.slo_s.max(), rtol=1e-6)
        np.testing.assert_allclose(tail[n_i:n_i + n_i * n_j], (inst.full_rate_bps / inst.full_rate_bps.max()).ravel(),
                                   rtol=1e-6)
        np.testing.assert_allclose(tail[n_i + n_i * n_j:n_i + n_i * n_j + n_j],
                                   inst.cpu_hz / (env.scenario.cpu_ghz[1] * 1e9), rtol=1e-6)
