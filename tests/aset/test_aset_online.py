"""ASET's non-anticipative online reference (offline/aset/online.py) and the env's ``fork`` it simulates on."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest

import offline.aset  # noqa: F401  (registers the policies)
from envs.aset.env import ASETEnvV1
from offline.aset.online import ASET_ROLLOUT, AsetRolloutPolicy
from offline.aset.policies import ENV_IDS
from offline.protocol import PolicyView, run_episode
from offline.registry import available_policies, make_policy


def _env(horizon: int = 8, lam: float = 60.0) -> ASETEnvV1:
    return ASETEnvV1(topology="dc-cloud", lam=lam, theta=0.0, horizon=horizon, instance_seed=3)


def _played(env: ASETEnvV1, windows: int, seed: int = 5) -> ASETEnvV1:
    env.reset(seed=seed)
    for w in range(windows):
        env.step(w % 7)
    return env


def _streams(env: ASETEnvV1) -> dict[str, np.ndarray]:
    s = env.state.streams
    return {name: getattr(s, name).copy() for name in s.FIELDS}


def test_fork_keeps_the_present_and_past() -> None:
    env = _played(_env(), 4)
    before = _streams(env)
    twin = env.fork(np.random.default_rng(0))
    assert twin is not env and twin.instance is env.instance
    assert twin.state.window == env.state.window == 4
    after = _streams(twin)
    assert len(after["rate"]) == len(before["rate"]) > 0
    for name in ("scheduler", "app", "rate", "worker", "start_sub", "base_ms", "class_bin"):
        np.testing.assert_array_equal(after[name], before[name])
    # the remaining lives are redrawn, but every live stream is still alive now
    assert (after["end_sub"] >= twin.state.window * env.instance.sub_windows).all()
    assert not np.array_equal(after["end_sub"], before["end_sub"])
    # forking leaves the env untouched: it plays on exactly as an untouched copy does
    reference = copy.deepcopy(env)
    for action in (6, 2):
        a, b = env.step(action), reference.step(action)
        np.testing.assert_array_equal(a[0], b[0])
        assert a[1] == b[1]


def test_fork_future_differs_from_the_realised_one() -> None:
    env = _played(_env(), 3)
    twin = env.fork(np.random.default_rng(1))
    real, forked = env.step(6), twin.step(6)
    assert real[4]["arrivals"] != forked[4]["arrivals"] or not np.array_equal(real[0], forked[0])


def test_forks_from_the_same_rng_state_are_identical() -> None:
    env = _played(_env(), 3)
    a, b = env.fork(np.random.default_rng(7)), env.fork(np.random.default_rng(7))
    np.testing.assert_array_equal(a.state.streams.end_sub, b.state.streams.end_sub)
    for action in (6, 4, 1):  # random_latency and load_balancing draw from the choice stream
        out_a, out_b = a.step(action), b.step(action)
        np.testing.assert_array_equal(out_a[0], out_b[0])
        assert out_a[1] == out_b[1]


def test_fork_rejects_bad_input() -> None:
    env = _env()
    with pytest.raises(RuntimeError, match="reset"):
        env.fork(np.random.default_rng(0))
    env.reset(seed=0)
    with pytest.raises(ValueError, match="rng="):
        env.fork(0)  # type: ignore[arg-type]


@pytest.mark.parametrize("kwargs, name", [({"horizon": 0}, "horizon"), ({"samples": 0}, "samples"),
                                          ({"samples": 1.5}, "samples"), ({"base": "closest"}, "base"),
                                          ({"horizon": True}, "horizon"), ({"min_gain": -0.1}, "min_gain"),
                                          ({"actions": ("fastest",)}, "actions"), ({"actions": ()}, "actions")])
def test_bad_parameters_raise(kwargs: dict[str, Any], name: str) -> None:
    with pytest.raises(ValueError, match=f"{name}="):
        AsetRolloutPolicy(**kwargs)


def test_registered_for_every_version() -> None:
    for env_id in ENV_IDS:
        assert ASET_ROLLOUT in available_policies(env_id)


class _Recorder(AsetRolloutPolicy):
    """The rollout, recording what it was handed and every action it took."""

    def reset(self, env: Any, seed: int | None = None) -> None:
        self.handed = env
        self.actions: list[int] = []
        super().reset(env, seed)

    def act(self, obs: Any, info: dict[str, Any]) -> int:
        action = super().act(obs, info)
        self.actions.append(action)
        return action


@pytest.mark.parametrize("base", ["threshold_switch", "periodic_switch", "both"])
def test_plays_through_a_policy_view_valid_and_deterministic(base: str) -> None:
    env = _env(horizon=6)
    runs = []
    for _ in range(2):
        policy = _Recorder(horizon=2, samples=2, base=base)
        run_episode(env, policy, seed=11)
        assert type(policy.handed) is PolicyView  # not clairvoyant: it never gets the env
        with pytest.raises(AttributeError):
            policy.handed.np_random  # noqa: B018
        assert all(env.action_space.contains(a) for a in policy.actions)
        runs.append(policy.actions)
    assert runs[0] == runs[1] and len(runs[0]) == 6


def test_registered_factory_plays() -> None:
    env = _env(horizon=3)
    policy = make_policy("ASET-v1", ASET_ROLLOUT, env, horizon=1, samples=1)
    result = run_episode(env, policy, seed=2, time_decisions=True)
    assert result.decisions == 3 and len(result.decision_seconds) == 3
    simulated = policy.last_scores[~np.isnan(policy.last_scores)]
    assert policy.last_scores.shape == (7,) and simulated.size >= 4 and ((simulated >= 0) & (simulated <= 1)).all()


def test_keeps_the_base_action_unless_another_gains_min_gain() -> None:
    """With min_gain = 1 no simulated gain is enough: the rollout plays exactly its base (threshold_switch)."""
    env = _env(horizon=5)
    rollout = AsetRolloutPolicy(horizon=1, samples=1, min_gain=1.0, base="threshold_switch")
    base = make_policy("ASET-v1", "threshold_switch", env)
    actions = []
    for policy in (rollout, base):
        seen: list[int] = []
        run_episode(env, policy, seed=4, on_step=lambda info, seen=seen: seen.append(info["policy"]))
        actions.append(seen)
    assert actions[0] == actions[1]
