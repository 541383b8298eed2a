"""The update ratio, network presets and the fast-optimiser default shared by DiscreteSAC and MaskedDQN."""

from __future__ import annotations

import gymnasium as gym
import pytest
import torch as th

import envs  # noqa: F401
from agents.dqn import MaskedDQN
from agents.off_policy import fast_optimizer_kwargs, update_schedule
from agents.registry import NET_ARCH_PRESETS, resolve_policy_kwargs, validate_algo_config
from agents.sac import DiscreteSAC


@pytest.mark.parametrize(("ratio", "schedule"), [(1, (1, 1)), (0.25, (4, 1)), (2, (1, 2)), (1.5, (2, 3)),
                                                  (1 / 3, (3, 1)), (0.0625, (16, 1))])
def test_update_schedule_gives_the_ratio_of_gradient_steps_to_env_steps(ratio, schedule):
    train_freq, gradient_steps = update_schedule(ratio)
    assert (train_freq, gradient_steps) == schedule
    assert gradient_steps / train_freq == pytest.approx(ratio)


@pytest.mark.parametrize("ratio", [0, -1, 0.01])
def test_update_schedule_rejects_ratios_it_cannot_represent(ratio):
    with pytest.raises(ValueError, match="update_ratio"):
        update_schedule(ratio)


@pytest.mark.parametrize("cls", [DiscreteSAC, MaskedDQN])
def test_update_ratio_sets_sb3s_train_freq_and_gradient_steps(cls):
    model = cls("MlpPolicy", gym.make("CartPole-v1"), update_ratio=0.25, device="cpu", policy_kwargs={"net_arch": [8]})
    assert model.train_freq.frequency == 4 and model.gradient_steps == 1


@pytest.mark.parametrize("cls", [DiscreteSAC, MaskedDQN])
def test_adam_is_fused_by_default_and_the_caller_can_choose(cls):
    model = cls("MlpPolicy", gym.make("CartPole-v1"), device="cpu", policy_kwargs={"net_arch": [8]})
    optimizers = [model.actor.optimizer, model.critic.optimizer] if cls is DiscreteSAC else [model.policy.optimizer]
    assert all(o.defaults["fused"] for o in optimizers)
    assert fast_optimizer_kwargs(th.optim.Adam, {"foreach": True}) == {"foreach": True}
    assert fast_optimizer_kwargs(th.optim.SGD, None) == {}


def test_net_arch_presets_resolve_and_unknown_names_are_rejected_with_the_valid_ones():
    assert resolve_policy_kwargs({"net_arch": "small"})["net_arch"] == NET_ARCH_PRESETS["small"]
    algo = validate_algo_config({"name": "sac", "policy_kwargs": {"net_arch": "tiny"}})
    assert algo["policy_kwargs"]["net_arch"] == "tiny"
    with pytest.raises(ValueError, match=r"net_arch='huge' is invalid.*oinc_paper"):
        validate_algo_config({"name": "sac", "policy_kwargs": {"net_arch": "huge"}})
    with pytest.raises(ValueError, match="update_ratio"):
        validate_algo_config({"name": "dqn", "update_ratio": 0})
