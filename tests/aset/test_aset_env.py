"""ASET-v0: Gymnasium/SB3 conformity, accounting invariants, capacity, determinism and bad input."""

from __future__ import annotations

import warnings
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

import envs  # noqa: F401  (registers the ids)
from envs.aset.dynamics import observation_features
from envs.aset.env import ASETEnv
from envs.aset.generator import TOPOLOGIES, TOPOLOGY_DIR, Scenario, build_instance
from envs.aset.types import POLICY_NAMES


def test_aset__passes_gymnasium_and_sb3_env_checkers_without_warnings():
    from gymnasium.utils.env_checker import check_env as gym_check
    from stable_baselines3.common.env_checker import check_env as sb3_check

    for topology in ("dc-cloud", "full-edge"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            gym_check(ASETEnv(topology=topology, horizon=5).unwrapped, skip_render_check=True)
            sb3_check(ASETEnv(topology=topology, horizon=5), warn=True)


def test_aset__gym_make_uses_the_registered_entry_point():
    env = gym.make("ASET-v0", topology="dc-cloud", horizon=3)
    obs, info = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    assert info["action_mask"].dtype == np.int8 and info["action_mask"].tolist() == [1] * 7
    assert env.unwrapped.action_masks().tolist() == [1] * 7


@settings(max_examples=8)
@given(
    topology=st.sampled_from(TOPOLOGIES),
    seed=st.integers(0, 10_000),
    actions=st.lists(st.integers(0, 6), min_size=4, max_size=10),
    lam=st.sampled_from([30.0, 60.0, 100.0]),
)
def test_aset__fractions_sum_to_one_and_no_worker_exceeds_capacity(topology, seed, actions, lam):
    env = ASETEnv(topology=topology, lam=lam, theta=0.0, horizon=50)
    obs, _ = env.reset(seed=seed)
    inst = env.instance
    for action in actions:
        obs, reward, terminated, truncated, info = env.step(action)
        assert isinstance(reward, float) and isinstance(terminated, bool) and isinstance(truncated, bool)
        assert obs.dtype == np.float32 and env.observation_space.contains(obs)
        assert info["success"] + info["failed"] + info["rejected"] == pytest.approx(1.0, abs=1e-9)
        assert reward == pytest.approx(info["success"])
        res = env.last_result
        q, s, f, r = res.totals
        assert s + f + r == pytest.approx(q, rel=1e-9)
        np.testing.assert_allclose(res.sub_succeeded + res.sub_failed + res.sub_rejected, res.sub_queries)
        np.testing.assert_allclose(res.app_succeeded + res.app_failed + res.app_rejected, res.app_queries)
        for arr in (res.app_succeeded, res.app_failed, res.app_rejected):
            assert (arr >= -1e-9).all()
        # capacity: served rate <= capacity; and the bound load respects constraint (2) too
        assert (res.served_kw <= inst.worker_capacity_qps[None, :] * (1 + 1e-9)).all()
        assert (res.load_kw <= inst.worker_capacity_qps[None, :] * (1 + 1e-9)).all()
        mask_frac = info["class_success"] + info["class_failed"] + info["class_rejected"]
        np.testing.assert_allclose(mask_frac[info["class_queries"] > 0], 1.0)
        assert info["policy"] == POLICY_NAMES[action]


def test_aset__same_seed_same_trajectory_and_common_random_arrivals():
    a, b = ASETEnv(topology="co-dc-cloud", theta=0.0), ASETEnv(topology="co-dc-cloud", theta=0.0)
    a.reset(seed=3)
    b.reset(seed=3)
    for action in (0, 3, 6, 5):
        oa, ra, *_ = a.step(action)
        ob, rb, *_ = b.step(action)
        assert ra == rb
        np.testing.assert_array_equal(oa, ob)
    # a different policy sees the same arrivals (common random numbers)
    c, d = ASETEnv(topology="co-dc-cloud", theta=0.0), ASETEnv(topology="co-dc-cloud", theta=0.0)
    c.reset(seed=9)
    d.reset(seed=9)
    for _ in range(3):
        _, _, _, _, ic = c.step(0)
        _, _, _, _, id_ = d.step(6)
        assert ic["arrivals"] == id_["arrivals"]
        np.testing.assert_allclose(ic["class_queries"], id_["class_queries"])


def test_aset__reset_starts_empty_and_episode_ends_at_horizon_or_theta():
    env = ASETEnv(topology="dc-cloud", horizon=4, theta=0.0)
    obs, info = env.reset(seed=0)
    assert not obs.any() and len(env.state.streams) == 0 and info["window"] == 0
    flags = [env.step(1)[2:4] for _ in range(4)]
    assert flags[-1] == (False, True) and all(f == (False, False) for f in flags[:-1])
    strict = ASETEnv(topology="dc-cloud", horizon=360, theta=1.0)
    strict.reset(seed=0)
    for _ in range(40):
        _, reward, terminated, truncated, _ = strict.step(3)
        if terminated:
            assert reward < 1.0 and not truncated
            break
    else:
        pytest.fail("theta = 1 never terminated")


def test_aset__observation_encodes_worker_features_and_classes():
    env = ASETEnv(topology="full-edge", theta=0.0, obs_layout="2d")
    flat = ASETEnv(topology="full-edge", theta=0.0)
    env.reset(seed=1)
    flat.reset(seed=1)
    for _ in range(5):
        obs, *_ = env.step(1)
        flat_obs, *_ = flat.step(1)
    inst, res = env.instance, env.last_result
    n_w = inst.num_workers
    assert obs.shape == (3 * n_w + 16, inst.sub_windows) == env.state_shape
    np.testing.assert_array_equal(flat_obs.reshape(flat.state_shape), obs)
    np.testing.assert_allclose(obs[2 * n_w : 3 * n_w], (res.load_kw / inst.worker_capacity_qps).T, rtol=1e-5)
    np.testing.assert_allclose(obs[3 * n_w :].sum(0), res.class_rate_kc.sum(1) / inst.worker_capacity_qps.sum(), rtol=1e-5)
    np.testing.assert_array_equal(observation_features(inst, res), obs)


def test_aset__instances_resample_and_can_be_pinned():
    scenario = {"rate_variation": 0.5, "app_mix_concentration": 2.0}
    env = ASETEnv(topology="dc-cloud", scenario_overrides=scenario, instance_seed=1)
    first = env.instance
    env.reset(seed=0, options={"resample": True})
    assert not np.allclose(first.rate_phase, env.instance.rate_phase)
    env.reset(seed=0, options={"instance": first})
    assert env.instance is first
    same = build_instance("dc-cloud", Scenario(**scenario).validate(), np.random.default_rng(1))
    np.testing.assert_allclose(same.app_probs, first.app_probs)


def test_aset__custom_topology_file(tmp_path):
    data = yaml.safe_load(Path(TOPOLOGY_DIR / "full-edge.yaml").read_text())
    data["name"] = "mine"
    data["layout"] = {"central_offices": 2, "antennas_per_co": 2}
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(data))
    env = ASETEnv(topology=str(path), theta=0.0)
    env.reset(seed=0)
    assert env.instance.num_schedulers == 4 and env.instance.topology == "mine"
    env.step(0)


@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [
        ({"topology": "edge-only"}, "topology"),
        ({"lam": 0.0}, "lam"),
        ({"lam": 500.0}, "lam"),
        ({"horizon": 0}, "horizon"),
        ({"theta": 1.5}, "theta"),
        ({"obs_layout": "image"}, "obs_layout"),
        ({"scenario_overrides": {"bogus": 1}}, "scenario_overrides key"),
        ({"scenario_overrides": {"rate_variation": 2.0}}, "rate_variation"),
        ({"scenario_overrides": {"frame_kb": [300, 100]}}, "frame_kb"),
        ({"scenario_overrides": {"queueing": "fifo"}}, "queueing"),
        ({"scenario_overrides": {"capacity_scale": 0.0}}, "capacity_scale"),
    ],
)
def test_aset__bad_arguments_raise_value_error_naming_the_parameter(kwargs, parameter):
    with pytest.raises(ValueError, match=parameter) as err:
        ASETEnv(**kwargs)
    assert "expected" in str(err.value)


def test_aset__bad_topology_names_allowed_values():
    with pytest.raises(ValueError, match=r"topology='edge-only' is invalid: expected one of \['dc-cloud'"):
        ASETEnv(topology="edge-only")


@pytest.mark.parametrize("action", [7, -1, 2.5, "closest", None])
def test_aset__bad_action_raises_value_error(action):
    env = ASETEnv(topology="dc-cloud")
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"action=.* expected an integer in \[0, 6\]"):
        env.step(action)


def test_aset__numpy_integer_actions_are_accepted():
    env = ASETEnv(topology="dc-cloud")
    env.reset(seed=0)
    env.step(np.int64(2))
    env.step(np.array(4))


def test_aset__capacity_scale_multiplies_every_capacity_and_nothing_else():
    """Issue 17's calibration knob: at scale 1 the instance is the profiles' (ASET-v0 unchanged)."""
    base = build_instance("full-edge", Scenario(), np.random.default_rng(0))
    same = build_instance("full-edge", Scenario(capacity_scale=1.0), np.random.default_rng(0))
    scaled = build_instance("full-edge", Scenario(capacity_scale=1.7), np.random.default_rng(0))
    np.testing.assert_array_equal(same.worker_capacity_qps, base.worker_capacity_qps)
    np.testing.assert_allclose(scaled.worker_capacity_qps, 1.7 * base.worker_capacity_qps)
    np.testing.assert_allclose(scaled.replica_capacity_qps, 1.7 * base.replica_capacity_qps)
    np.testing.assert_array_equal(scaled.delay_ms, base.delay_ms)
    np.testing.assert_array_equal(scaled.worker_replicas, base.worker_replicas)


def _offered_share(env: ASETEnv, windows: int = 60, warmup: int = 60) -> float:
    """Queries per second issued in steady state (after ``warmup`` windows) over the total capacity."""
    env.reset(seed=0)
    for _ in range(warmup):
        env.step(1)
    queries = sum(env.step(1)[4]["queries"] for _ in range(windows))
    return queries / (windows * env.instance.window_s) / float(env.instance.worker_capacity_qps.sum())


def test_aset_v1__defaults_and_calibration_lambda_100_loads_v1_as_lambda_60_loads_v0():
    """ASET-v1's capacities x 5/3: the paper's stress load lambda = 100 fits (v0: it exceeds the capacity)."""
    from envs.aset.env import ASETEnvV1

    v0, v1 = ASETEnv(theta=0.0), ASETEnvV1(theta=0.0)
    assert (v0.scenario.queueing, v0.scenario.capacity_scale) == ("pooled", 1.0)  # ASET-v0 unchanged
    assert (v1.scenario.queueing, v1.scenario.service_headroom) == ("per_replica", 1.0)
    np.testing.assert_allclose(v1.instance.worker_capacity_qps, 5.0 / 3.0 * v0.instance.worker_capacity_qps)
    assert ASETEnvV1(scenario_overrides={"capacity_scale": 1.0}).instance.worker_capacity_qps.sum() == \
        v0.instance.worker_capacity_qps.sum()  # overrides win over the version's defaults
    share_v0_60 = _offered_share(ASETEnv(lam=60.0, theta=0.0))
    share_v1_100 = _offered_share(ASETEnvV1(lam=100.0, theta=0.0))
    share_v0_100 = _offered_share(ASETEnv(lam=100.0, theta=0.0))
    assert 0.80 < share_v0_60 < 0.95 and 0.80 < share_v1_100 < 0.95  # measured 0.88 for both
    assert share_v0_100 > 1.3  # ASET-v0 cannot carry lambda = 100 (measured 1.47)
    assert gym.make("ASET-v1").unwrapped.env_id == "ASET-v1"


def test_aset_v1__best_static_hindsight_replays_on_the_same_version():
    from envs.aset.env import ASETEnvV1
    from offline.registry import make_policy

    env = ASETEnvV1(topology="dc-cloud", horizon=4, theta=0.0)
    policy = make_policy("ASET-v1", "best_static_hindsight", env)
    env.reset(seed=5)
    policy.reset(env, seed=5)
    chosen = POLICY_NAMES[policy.choice]
    expected = {}
    for index, name in enumerate(POLICY_NAMES):
        env.reset(seed=5)
        queries = succeeded = 0.0
        for _ in range(4):
            info = env.step(index)[4]
            queries += info["queries"]
            succeeded += info["success"] * info["queries"]
        expected[name] = succeeded / queries
    assert policy.success_by_policy == pytest.approx(expected)
    assert expected[chosen] == max(expected.values())
