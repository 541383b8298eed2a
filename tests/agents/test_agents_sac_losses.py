"""Discrete SAC: the losses against hand computations, and what masks do to them."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch as th
from gymnasium import spaces

from agents.sac import (
    DiscreteSAC,
    HeadLayout,
    actor_loss,
    critic_loss,
    critic_target,
    masked_log_softmax,
    policy_entropy,
    soft_state_value,
    target_entropy,
    temperature_loss,
)

# One state, three actions, action 2 infeasible. Next-state logits (0, ln 3, 5) -> the feasible
# probabilities are softmax(0, ln 3) = (1/4, 3/4) and the huge logit of action 2 must not matter.
NEXT_LOGITS = th.tensor([[[0.0, math.log(3.0), 5.0]]])
VALID = th.tensor([[[True, True, False]]])
P = np.array([0.25, 0.75])
H = float(-(P * np.log(P)).sum())  # entropy of (1/4, 3/4) = 0.5623 nats
ALPHA = 0.5


def test_sac__masked_softmax_gives_zero_probability_to_infeasible_actions():
    probs, log_probs = masked_log_softmax(NEXT_LOGITS, VALID)
    assert probs[0, 0].tolist() == pytest.approx([0.25, 0.75, 0.0])
    assert probs[0, 0, 2].item() == 0.0 and log_probs[0, 0, 2].item() == 0.0  # no -inf, no NaN downstream
    assert policy_entropy(probs, log_probs).item() == pytest.approx(H)


def test_sac__critic_target_matches_hand_computation():
    probs, log_probs = masked_log_softmax(NEXT_LOGITS, VALID)
    q1_next = th.tensor([[[1.0, 2.0, 100.0]]])
    q2_next = th.tensor([[[2.0, 1.0, -100.0]]])
    min_q = th.min(q1_next, q2_next)  # (1, 1, -100); action 2 is infeasible and must not count
    value = soft_state_value(probs, log_probs, min_q, ALPHA)
    hand_value = 0.25 * 1.0 + 0.75 * 1.0 + ALPHA * H
    assert value.item() == pytest.approx(hand_value)
    rewards, gamma = th.tensor([[1.0], [1.0]]), 0.9
    dones = th.tensor([[0.0], [1.0]])
    target = critic_target(rewards, dones, gamma, value.expand(2))
    assert target.tolist() == pytest.approx([1.0 + 0.9 * hand_value, 1.0])  # terminal: no bootstrap


def test_sac__critic_loss_matches_hand_computation():
    q1 = th.tensor([[[0.5, 3.0, 9.0]], [[1.0, 1.0, 1.0]]])
    q2 = th.tensor([[[1.5, 2.0, 9.0]], [[0.0, 4.0, 1.0]]])
    actions = th.tensor([[1], [0]])
    target = th.tensor([2.0, -1.0])
    # taken actions: q1 = (3, 1), q2 = (2, 0); errors q1: (1, 2), q2: (0, 1)
    hand = 0.5 * ((1.0**2 + 2.0**2) / 2 + (0.0**2 + 1.0**2) / 2)
    assert critic_loss([q1, q2], actions, target).item() == pytest.approx(hand)


def test_sac__actor_and_temperature_losses_match_hand_computation():
    probs, log_probs = masked_log_softmax(NEXT_LOGITS, VALID)
    min_q = th.tensor([[[1.0, 3.0, 1000.0]]])  # the infeasible action's Q must be ignored
    hand_actor = 0.25 * (ALPHA * math.log(0.25) - 1.0) + 0.75 * (ALPHA * math.log(0.75) - 3.0)
    assert actor_loss(probs, log_probs, min_q, ALPHA).item() == pytest.approx(hand_actor)

    ratio = 0.6
    target_h = target_entropy(VALID, ratio)
    assert target_h.item() == pytest.approx(ratio * math.log(2))  # scaled to the 2 feasible actions
    log_alpha = th.tensor(math.log(ALPHA), requires_grad=True)
    loss = temperature_loss(log_alpha, policy_entropy(probs, log_probs), target_h)
    assert loss.item() == pytest.approx(math.log(ALPHA) * (H - ratio * math.log(2)))
    loss.backward()
    assert log_alpha.grad.item() == pytest.approx(H - ratio * math.log(2))  # H > target: alpha decreases


def test_sac__infeasible_actions_get_no_gradient_and_do_not_change_the_losses():
    logits = NEXT_LOGITS.clone().requires_grad_(True)
    probs, log_probs = masked_log_softmax(logits, VALID)
    q_a = th.tensor([[[1.0, 3.0, -5.0]]])
    q_b = th.tensor([[[1.0, 3.0, 5e6]]])
    loss = actor_loss(probs, log_probs, q_a, ALPHA)
    assert loss.item() == pytest.approx(actor_loss(probs, log_probs, q_b, ALPHA).item())
    assert soft_state_value(probs, log_probs, q_a, ALPHA).item() == pytest.approx(
        soft_state_value(probs, log_probs, q_b, ALPHA).item()
    )
    loss.backward()
    assert logits.grad[0, 0, 2].item() == 0.0
    assert th.isfinite(logits.grad).all()


def test_sac__one_feasible_action_has_zero_entropy_target():
    valid = th.tensor([[[True, False, False]]])
    probs, log_probs = masked_log_softmax(th.randn(1, 1, 3), valid)
    assert probs[0, 0].tolist() == [1.0, 0.0, 0.0]
    assert target_entropy(valid, 0.8).item() == 0.0
    assert policy_entropy(probs, log_probs).item() == 0.0


def test_sac__multidiscrete_heads_are_grouped_by_size_without_padding_and_factorised():
    layout = HeadLayout([2, 3, 2])  # heads 0 and 2 share a size: one group of two heads, one of one
    flat = th.tensor([[10.0, 11.0, 20.0, 21.0, 22.0, 30.0, 31.0]])
    groups = layout.split(flat)
    assert [g.shape for g in groups] == [(1, 2, 2), (1, 1, 3)]
    assert groups[0][0].tolist() == [[10.0, 11.0], [30.0, 31.0]] and groups[1][0, 0].tolist() == [20.0, 21.0, 22.0]
    valid = layout.valid_masks(None, 1, flat.device)
    probs, log_probs = zip(*(masked_log_softmax(th.zeros_like(g), v) for g, v in zip(groups, valid)))
    # joint entropy of three independent uniform heads = log 2 + log 3 + log 2 = log 12
    assert policy_entropy(probs, log_probs).item() == pytest.approx(math.log(12))
    assert target_entropy(valid, 0.5).item() == pytest.approx(0.5 * math.log(12))
    # a head whose mask is all zero falls back to all of its actions
    flat_mask = th.tensor([[False, False, True, False, True, False, True]])
    masks = layout.valid_masks(flat_mask, 1, flat.device)
    assert masks[0][0].tolist() == [[True, True], [False, True]] and masks[1][0].tolist() == [[True, False, True]]
    # taken actions go to their group and back in head order
    actions = th.tensor([[1, 2, 0]])
    assert [a.tolist() for a in layout.split_actions(actions)] == [[[1, 0]], [[2]]]
    assert layout.merge_actions(layout.split_actions(actions)).tolist() == [[1, 2, 0]]


def test_sac__grouped_losses_equal_the_padded_computation():
    """Splitting heads into groups changes no number: compare with one padded [B, H, max n] tensor."""
    gen = th.Generator().manual_seed(0)
    dims = [4, 2, 4, 3]
    layout = HeadLayout(dims)
    batch, width = 5, max(dims)
    logits, q = th.randn(batch, sum(dims), generator=gen), th.randn(batch, sum(dims), generator=gen)
    feasible = th.rand(batch, sum(dims), generator=gen) < 0.7
    actions = th.stack([th.randint(0, n, (batch,), generator=gen) for n in dims], dim=1)
    target = th.randn(batch, generator=gen)

    def padded(flat, fill):
        out = th.full((batch, len(dims), width), fill, dtype=flat.dtype)
        for h, (start, n) in enumerate(zip(np.cumsum([0, *dims[:-1]]), dims)):
            out[:, h, :n] = flat[:, start:start + n]
        return out

    valid_pad = padded(feasible, False)
    valid_pad = valid_pad | (~valid_pad.any(-1, keepdim=True) & padded(th.ones_like(feasible), False))
    p_pad, lp_pad = masked_log_softmax(padded(logits, 0.0), valid_pad)
    q_pad = padded(q, 0.0)
    valid = layout.valid_masks(feasible, batch, logits.device)
    p, lp = zip(*(masked_log_softmax(g, v) for g, v in zip(layout.split(logits), valid)))
    q_groups = layout.split(q)
    assert th.allclose(soft_state_value(p, lp, q_groups, ALPHA), soft_state_value(p_pad, lp_pad, q_pad, ALPHA))
    assert th.allclose(actor_loss(p, lp, q_groups, ALPHA), actor_loss(p_pad, lp_pad, q_pad, ALPHA))
    assert th.allclose(target_entropy(valid, 0.6), target_entropy(valid_pad, 0.6))
    assert th.allclose(critic_loss([q_groups], layout.split_actions(actions), target),
                       critic_loss([q_pad], actions, target))


def test_sac__policy_never_picks_a_masked_action():
    import gymnasium as gym

    class MaskOnlyEnv(gym.Env):
        observation_space = spaces.Box(0.0, 1.0, (6,), np.float32)
        action_space = spaces.Discrete(4)

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            return np.zeros(6, np.float32), {}

        def step(self, action):
            return np.zeros(6, np.float32), 0.0, True, False, {}

    model = DiscreteSAC("MlpPolicy", MaskOnlyEnv(), mask_dim=4, seed=0, device="cpu",
                        policy_kwargs={"net_arch": [16]})
    rng = np.random.default_rng(0)
    obs = rng.random((500, 6)).astype(np.float32)
    mask = rng.random((500, 4)) < 0.5
    mask[:, 0] = True
    obs[:, 2:] = mask
    for deterministic in (True, False):
        actions, _ = model.predict(obs, deterministic=deterministic)
        assert mask[np.arange(500), actions].all()
    with th.no_grad():
        probs, _, _ = model.policy.distribution(th.as_tensor(obs))
    assert (probs[0][:, 0][~th.as_tensor(mask)] == 0).all()


def test_sac__multidiscrete_env_trains_and_acts_within_each_head(tmp_path):
    import gymnasium as gym

    class TwoHeadEnv(gym.Env):
        """Reward 1 when head 0 picks the observed index and head 1 picks 2, else 0."""

        observation_space = spaces.Box(0.0, 1.0, (3,), np.float32)
        action_space = spaces.MultiDiscrete([3, 4])

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            self._target, self._t = int(self.np_random.integers(3)), 0
            return self._obs(), {}

        def _obs(self):
            return np.eye(3, dtype=np.float32)[self._target]

        def step(self, action):
            assert action.shape == (2,) and 0 <= action[0] < 3 and 0 <= action[1] < 4
            reward = float(action[0] == self._target and action[1] == 2)
            self._t += 1
            self._target = int(self.np_random.integers(3))
            return self._obs(), reward, self._t >= 10, False, {}

    env = TwoHeadEnv()
    model = DiscreteSAC("MlpPolicy", env, seed=0, device="cpu", learning_starts=50, batch_size=32,
                        learning_rate=3e-3, gamma=0.0, policy_kwargs={"net_arch": [32]})
    model.learn(600)
    obs = np.eye(3, dtype=np.float32)
    actions, _ = model.predict(obs, deterministic=True)
    assert actions.shape == (3, 2)
    assert actions[:, 0].tolist() == [0, 1, 2] and (actions[:, 1] == 2).all()  # learned both heads
    model.save(tmp_path / "m")
    loaded = DiscreteSAC.load(tmp_path / "m.zip", device="cpu")
    assert np.array_equal(loaded.predict(obs, deterministic=True)[0], actions)


def test_sac__multidiscrete_soft_value_uses_the_mean_head_entropy():
    """V = mean_h [E_π_h Q_h + α H(π_h)]: the bonus stays on one head's scale however many heads there are."""
    layout = HeadLayout([2, 2, 3])
    logits = layout.split(th.tensor([[0.0, math.log(3.0), 0.0, 0.0, 0.0, 0.0, 0.0]]))
    valid = layout.valid_masks(None, 1, logits[0].device)
    probs, log_probs = zip(*(masked_log_softmax(g, v) for g, v in zip(logits, valid)))
    q = layout.split(th.tensor([[1.0, 3.0, 2.0, 4.0, 0.0, 3.0, 6.0]]))
    heads = [([0.25, 0.75], [1.0, 3.0]), ([0.5, 0.5], [2.0, 4.0]), ([1 / 3] * 3, [0.0, 3.0, 6.0])]
    per_head = [sum(p * x for p, x in zip(ps, qs)) - ALPHA * sum(p * math.log(p) for p in ps) for ps, qs in heads]
    assert soft_state_value(probs, log_probs, q, ALPHA).item() == pytest.approx(sum(per_head) / 3)


def test_sac__with_a_prior_policy_the_entropy_terms_become_minus_kl_to_it():
    """With a head that defines ``prior_logits`` (a heuristic's scores), log π is replaced by log π − log π₀:
    the soft value's bonus is −α·KL(π‖π₀) (0 when π = π₀), and the actor loss pulls π toward π₀ ∝ exp(Q/α)·π₀."""
    probs, log_probs = masked_log_softmax(NEXT_LOGITS, VALID)
    prior_logits = th.tensor([[[math.log(3.0), 0.0, -7.0]]])  # π₀ = (3/4, 1/4) on the feasible actions
    _, prior_log_probs = masked_log_softmax(prior_logits, VALID)
    log_ratio = log_probs - prior_log_probs
    kl = float((P * np.log(P / np.array([0.75, 0.25]))).sum())
    assert -policy_entropy(probs, log_ratio).item() == pytest.approx(kl)
    q = th.tensor([[[1.0, 3.0, 9.0]]])
    value = soft_state_value(probs, log_ratio, q, ALPHA).item()
    assert value == pytest.approx(0.25 * 1 + 0.75 * 3 - ALPHA * kl)
    assert -policy_entropy(probs, log_probs - log_probs).item() == 0.0
    # the actor loss is minimised by π ∝ π₀·exp(Q/α): (3/4·e²)/(3/4·e² + 1/4·e⁶) on action 0
    best = np.array([0.75 * math.exp(1 / ALPHA), 0.25 * math.exp(3 / ALPHA)])
    best /= best.sum()
    logits = th.tensor([[[math.log(best[0]), math.log(best[1]), 0.0]]], requires_grad=True)
    p, lp = masked_log_softmax(logits, VALID)
    actor_loss(p, lp - prior_log_probs, q, ALPHA).backward()
    assert logits.grad[0, 0, :2].abs().max().item() < 1e-6


def test_sac__a_head_that_starts_as_lp_bid_price_trains_with_the_kl_temperature():
    """SAC on UEC-v0 under NetScoreFeatures with the per-action head: the untrained greedy policy is the
    heuristic's, the temperature tracks target_kl, and the head saves and loads."""
    import gymnasium as gym

    import envs  # noqa: F401
    from agents.registry import resolve_policy_kwargs
    from offline.uec.features import NetScoreFeatures

    env = NetScoreFeatures(gym.make("UEC-v0", scenario="tiny"))
    kwargs = resolve_policy_kwargs({"head": "agents.uec.sac_head:UECActionScorer", "net_arch": [16]}, env)
    assert kwargs["head_kwargs"]["score_features"] is True
    model = DiscreteSAC("MlpPolicy", env, mask_dim=env.layout.sizes["action_mask"], device="cpu",
                        learning_starts=16, batch_size=8, target_kl=0.01, policy_kwargs=kwargs, seed=0)
    assert model.policy.has_prior
    obs, info = env.reset(seed=1)
    expected = env.heuristic.act(obs, info)
    assert int(model.predict(obs, deterministic=True)[0]) == expected
    model.learn(64)
    assert model.logger.name_to_value["train/target_entropy"] == pytest.approx(-0.01)
    with pytest.raises(ValueError, match="target_kl"):
        DiscreteSAC("MlpPolicy", env, mask_dim=1, target_kl=0.0, policy_kwargs=kwargs)
