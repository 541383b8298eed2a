"""OINC-v0 retraining controllers: ``retraining_share`` is an explicit, validated constructor parameter of
every controller, its defaults are today's behaviour, and a set value bounds or fixes the edges' shares."""

from __future__ import annotations

import numpy as np
import pytest

from envs.oinc.env import OINCEnv
from envs.oinc.retraining import CONTROLLERS, MAX_RETRAIN_SHARE, WEIGHT_SPLIT_SHARE, make_controller

DEFAULTS = {"aret": MAX_RETRAIN_SHARE, "kalmia": MAX_RETRAIN_SHARE, "ekya": None, "dedas": 0.5, "zhang": 0.5}
CAPPED = ("aret", "kalmia")  # the share is an upper bound; the others give exactly the share


def _episode(name: str, **params: float) -> tuple[list[float], list[np.ndarray]]:
    """Rewards and p^r of one seeded episode with a fixed inference action (everything to edge 0)."""
    env = OINCEnv(retraining=name)
    env.controller = make_controller(name, **params)
    env.reset(seed=3)
    action = np.zeros(env.action_space.shape, dtype=np.int64)
    rewards, shares = [], []
    done = False
    while not done:
        _, reward, term, trunc, _ = env.step(action)
        rewards.append(reward)
        shares.append(env.controller.share.copy())
        done = term or trunc
    return rewards, shares


def test_oinc_retraining__every_controller_has_the_documented_default_share() -> None:
    assert set(DEFAULTS) == set(CONTROLLERS) and WEIGHT_SPLIT_SHARE == 0.5
    for name, default in DEFAULTS.items():
        assert make_controller(name).retraining_share == default


@pytest.mark.parametrize("name", sorted(CONTROLLERS))
@pytest.mark.parametrize("bad", [0.0, 1.0, -0.1, 1.5, float("nan"), "0.5", True])
def test_oinc_retraining__bad_share_raises_naming_the_parameter(name: str, bad: object) -> None:
    with pytest.raises(ValueError, match="retraining_share"):
        make_controller(name, retraining_share=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", sorted(CONTROLLERS))
def test_oinc_retraining__explicit_default_share_changes_nothing(name: str) -> None:
    explicit = DEFAULTS[name]
    if explicit is None:  # ekya's default is derived from the instance: 1 / (1 + I/J)
        env = OINCEnv()
        env.reset(seed=3)
        explicit = 1.0 / (1.0 + env.instance.num_devices / env.instance.num_edges)
    implicit_run = _episode(name)
    explicit_run = _episode(name, retraining_share=explicit)
    assert implicit_run[0] == explicit_run[0]
    assert all(np.array_equal(a, b) for a, b in zip(implicit_run[1], explicit_run[1]))


@pytest.mark.parametrize("name", sorted(CONTROLLERS))
def test_oinc_retraining__set_share_bounds_or_fixes_every_edge(name: str) -> None:
    _, shares = _episode(name, retraining_share=0.7)
    used = np.concatenate(shares)
    used = used[used > 0]
    assert used.size  # jobs arrived and some edge retrained
    if name in CAPPED:
        assert used.max() <= 0.7
    else:
        assert np.all(used == 0.7)


def test_env_retraining_share_reaches_the_controller_and_none_keeps_the_default():
    import gymnasium as gym

    import envs  # noqa: F401

    default = gym.make("OINC-v0", retraining="dedas").unwrapped
    explicit = gym.make("OINC-v0", retraining="dedas", retraining_share=0.7).unwrapped
    assert explicit.controller.retraining_share == 0.7
    assert default.controller.retraining_share == 0.5
    shares = {}
    for name, env in (("default", default), ("explicit", explicit)):
        env.reset(seed=0)
        env.action_space.seed(0)
        shares[name] = np.array([env.step(env.action_space.sample())[4]["retraining_share_mean"] for _ in range(8)])
    busy = shares["default"] > 0
    assert busy.any()  # Dedas' fixed share on every edge holding a job: 0.7 instead of 0.5 on the same edges
    assert np.allclose(shares["explicit"][busy] / shares["default"][busy], 0.7 / 0.5)


@pytest.mark.parametrize(("controller", "share", "expected"), [("dedas", None, 0.5), ("dedas", 0.7, 0.7),
                                                                ("zhang", 0.6, 0.6), ("aret", None, None)])
def test_episode_retraining_share_is_the_share_given_while_retraining(controller, share, expected):
    """The final info's ``retraining_share`` (evaluate.py's column) is the mean p^r over the edge-slots that
    retrained: exactly the fixed share of Dedas/Zhang, at most the 0.9 cap of A_ret."""
    import gymnasium as gym

    import envs  # noqa: F401

    env = gym.make("OINC-v0", retraining=controller, **({} if share is None else {"retraining_share": share}))
    env.reset(seed=1)
    env.action_space.seed(1)
    done, info = False, {}
    while not done:
        _, _, terminated, truncated, info = env.step(env.action_space.sample())
        done = terminated or truncated
    if expected is None:
        assert 0.0 < info["retraining_share"] <= MAX_RETRAIN_SHARE
    else:
        assert info["retraining_share"] == pytest.approx(expected)
