"""offline.uec.features.LPFeatures: RESCUE's value functions in UEC-v0's observation, the mask kept last."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import envs  # noqa: F401  (registers the ids)
from envs.problems import make
from offline.uec.features import LPFeatures
from offline.uec.values import rescue_solution


def test_uec_v0__lp_features_equal_rescue_value_functions_and_keep_the_base_observation():
    base = gym.make("UEC-v0", scenario="tiny")
    wrapped = make("UEC-v0", {"scenario": "tiny"}, ["offline.uec.features:LPFeatures"])
    solution = rescue_solution(wrapped.unwrapped.instance)
    scale = solution.activation.max()
    lay = wrapped.layout
    obs_b, info_b = base.reset(seed=5)
    obs_w, info_w = wrapped.reset(seed=5)
    steps = 0
    while True:
        parts = lay.split(obs_w)
        assert wrapped.observation_space.contains(obs_w)
        np.testing.assert_array_equal(np.delete(obs_w, np.r_[lay.slices["lp"]]), obs_b)
        if info_w["device"] >= 0:
            t, j = info_w["time"], info_w["device"]
            expected_a = np.clip(solution.activation[j, :, :, t].reshape(-1) / scale, 0, 1)
            expected_b = np.clip(solution.baseline[:, t + 1] / scale, 0, 1)
            np.testing.assert_allclose(parts["lp"], np.r_[expected_a, expected_b], rtol=1e-6, atol=1e-7)
        else:
            assert not parts["lp"].any()
        np.testing.assert_array_equal(parts["action_mask"], info_w["action_mask"])
        action = int(np.flatnonzero(info_w["action_mask"])[-1])
        obs_b, _, done_b, _, info_b = base.step(action)
        obs_w, _, done_w, _, info_w = wrapped.step(action)
        steps += 1
        assert done_b == done_w
        if done_w:
            break
    assert steps > 1


def test_uec_v0__lp_features_refuse_other_envs():
    with pytest.raises(ValueError, match="UEC-v0"):
        LPFeatures(gym.make("CoRaiS-v0", scale="tiny"))


def test_uec_v0__lp_features_kwarg_is_gone_with_a_pointer_to_the_wrapper():
    with pytest.raises(TypeError, match="lp_features"):
        gym.make("UEC-v0", lp_features=True)


def test_uec_v0__net_score_features_are_lp_bid_price_scores_and_a_head_on_them_starts_as_it():
    """NetScoreFeatures inserts lp_bid_price's R − price / max R (−1 where it may not choose) before the mask;
    the per-action head built on it picks lp_bid_price's action at every decision before any training."""
    import torch as th

    from agents.uec.sac_head import UECActionScorer
    from offline.registry import make_policy
    from offline.uec.features import NetScoreFeatures

    base = gym.make("UEC-v0")
    wrapped = NetScoreFeatures(gym.make("UEC-v0"))
    lay = wrapped.layout
    assert lay.score_features and not lay.lp_features
    head = UECActionScorer(lay.size, 1 + 16, [16], th.nn.ReLU, **UECActionScorer.kwargs_for_env(wrapped))
    policy = make_policy("UEC-v0", "lp_bid_price", base.unwrapped)
    scale = wrapped.unwrapped.instance.expected_profit.max()
    decisions = 0
    for seed in (0, 1):
        obs_b, info = base.reset(seed=seed)
        obs_w, _ = wrapped.reset(seed=seed)
        policy.reset(base.unwrapped)
        done = False
        while not done:
            assert wrapped.observation_space.contains(obs_w)
            np.testing.assert_array_equal(np.delete(obs_w, np.r_[lay.slices["score"]]), obs_b)
            score = lay.split(obs_w)["score"]
            action = policy.act(obs_b, info)
            if info["device"] >= 0:
                expected = np.where(policy.candidates(info), policy.scores(info) / scale, -1.0)
                np.testing.assert_allclose(score, np.clip(expected, -1, 1), rtol=1e-6, atol=1e-7)
                with th.no_grad():
                    logits = head(th.as_tensor(obs_w)[None])[0].numpy()
                logits[~info["action_mask"].astype(bool)] = -np.inf
                assert int(np.argmax(logits)) == action
                decisions += 1
            obs_b, _, done, _, info = base.step(action)
            obs_w, *_ = wrapped.step(action)
    assert decisions > 100
    with pytest.raises(ValueError, match="net-score greedy"):
        NetScoreFeatures(gym.make("UEC-v0"), heuristic="pickconfigs")
    with pytest.raises(ValueError, match="before NetScoreFeatures"):
        LPFeatures(NetScoreFeatures(gym.make("UEC-v0")))
