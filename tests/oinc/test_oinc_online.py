"""OINC's non-anticipative online reference (offline/oinc/online.py) and the env's ``fork`` it simulates on."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest

import offline.oinc  # noqa: F401  (registers the policies)
from envs.common.clairvoyance import episode_draws
from envs.oinc.env import OINCEnv
from offline.oinc.evaluation import resolve_pair
from offline.oinc.heuristics import pair_defaults
from offline.oinc.online import OINC_ROLLOUT, ROLLOUT_PAIR, OincRolloutPolicy
from offline.protocol import PolicyView, run_episode
from offline.registry import available_policies, make_policy

DRAWS = ("data_bits", "cycles", "drift_u", "job_cycles", "job_slack_s")


def _played(slots: int, retraining: str = "ekya", seed: int = 4) -> OINCEnv:
    env = OINCEnv(scenario="tiny", retraining=retraining, scenario_overrides={"drift_prob": 0.4})
    env.reset(seed=seed)
    for _ in range(slots):
        env.step(env.action_space.sample())
    return env


def test_fork_keeps_the_present_and_past_and_redraws_the_future() -> None:
    env = _played(5)
    t = env.t
    real = episode_draws(env)
    twin = env.fork(np.random.default_rng(0))
    assert twin is not env and twin.instance is env.instance and twin.t == t
    forked = episode_draws(twin)
    for name in DRAWS:
        np.testing.assert_array_equal(getattr(forked, name)[: t + 1], getattr(real, name)[: t + 1])
        assert not np.array_equal(getattr(forked, name)[t + 1:], getattr(real, name)[t + 1:])
    # the synthetic series stays in the scenario's ranges
    sc = env.scenario
    assert (forked.data_bits >= sc.data_mb[0] * sc.bits_per_data_unit - 1e-6).all()
    assert (forked.cycles <= sc.megacycles[1] * 1e6 + 1e-3).all()
    np.testing.assert_array_equal(twin.observation_as("extended"), env.observation_as("extended"))
    assert twin.jobs.count == env.jobs.count > 0
    np.testing.assert_array_equal(twin.jobs.remaining, env.jobs.remaining)
    np.testing.assert_array_equal(twin.inference_share, env.inference_share)
    # forking leaves the env untouched: it plays on exactly as an untouched copy does
    reference = copy.deepcopy(env)
    action = env.action_space.sample()
    a, b = env.step(action), reference.step(action)
    np.testing.assert_array_equal(a[0], b[0])
    assert a[1] == b[1]


def test_forks_from_the_same_rng_state_are_identical() -> None:
    env = _played(3, retraining="aret")
    a, b = env.fork(np.random.default_rng(9)), env.fork(np.random.default_rng(9))
    for name in DRAWS:
        np.testing.assert_array_equal(getattr(episode_draws(a), name), getattr(episode_draws(b), name))
    rng = np.random.default_rng(0)
    for _ in range(5):
        action = rng.integers(0, env.action_space.nvec)
        out_a, out_b = a.step(action), b.step(action)
        np.testing.assert_array_equal(out_a[0], out_b[0])
        assert out_a[1] == out_b[1]


def test_fork_rejects_bad_input() -> None:
    env = OINCEnv(scenario="tiny")
    with pytest.raises(RuntimeError, match="reset"):
        env.fork(np.random.default_rng(0))
    env.reset(seed=0)
    with pytest.raises(ValueError, match="rng="):
        env.fork(3)  # type: ignore[arg-type]


@pytest.mark.parametrize("kwargs, name", [({"horizon": 0}, "horizon"), ({"samples": 0}, "samples"),
                                          ({"samples": 2.0}, "samples"), ({"miss_weight": -1.0}, "miss_weight"),
                                          ({"margins": (0.1, 9.0)}, "margins"), ({"slo_margin": -1.0}, "slo_margin")])
def test_bad_parameters_raise(kwargs: dict[str, Any], name: str) -> None:
    with pytest.raises(ValueError, match=f"{name}="):
        OincRolloutPolicy(**kwargs)


class _Recorder(OincRolloutPolicy):
    def reset(self, env: Any, seed: int | None = None) -> None:
        self.handed = env
        self.actions: list[list[int]] = []
        super().reset(env, seed)

    def act(self, obs: Any, info: dict[str, Any]) -> np.ndarray:
        action = super().act(obs, info)
        self.actions.append(np.asarray(action).tolist())
        return action


@pytest.mark.parametrize("retraining", ["ekya", "aret"])
def test_plays_through_a_policy_view_valid_and_deterministic(retraining: str) -> None:
    env = OINCEnv(scenario="tiny", retraining=retraining, scenario_overrides={"horizon": 8})
    runs = []
    for _ in range(2):
        policy = _Recorder(horizon=2, samples=2)
        run_episode(env, policy, seed=13)
        assert type(policy.handed) is PolicyView  # not clairvoyant: it never gets the env
        with pytest.raises(AttributeError):
            policy.handed.episode_draws()
        assert all(env.action_space.contains(np.asarray(a, dtype=env.action_space.dtype)) for a in policy.actions)
        runs.append(policy.actions)
    assert runs[0] == runs[1] and len(runs[0]) == 8


def test_never_worse_than_its_first_candidate_on_the_slot_cost_under_ekya() -> None:
    """Under Ekya the forks agree after the first slot, so the pick is the cheapest candidate of the slot: its cost
    is at most slo_liu_ls's (the first candidate)."""
    env = OINCEnv(scenario="tiny", retraining="ekya", scenario_overrides={"horizon": 6})
    policy = OincRolloutPolicy(horizon=2, samples=2)
    obs, info = env.reset(seed=21)
    policy.reset(PolicyView(env), seed=0)
    for _ in range(5):
        action = policy.act(obs, info)
        assert policy.last_costs.min() <= policy.last_costs[0]
        obs, _, _, _, info = env.step(action)


def test_registered_and_paired() -> None:
    assert OINC_ROLLOUT in available_policies("OINC-v0")
    label, controller, inference, _ = resolve_pair(ROLLOUT_PAIR, None)
    assert (controller, inference) == ("ekya", OINC_ROLLOUT)
    assert set(pair_defaults(label)) == {"retraining_share", "slo_margin"}
    env = OINCEnv(scenario="tiny", retraining="ekya", scenario_overrides={"horizon": 3})
    policy = make_policy("OINC-v0", OINC_ROLLOUT, env, horizon=1, samples=1)
    assert run_episode(env, policy, seed=1).decisions == 3
