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


def test_uec_action_scorer_shares_weights_across_ssps_and_reads_the_layout_from_the_env(tmp_path):
    """The per-SSP score depends on SSP (k, l)'s own inputs only through shared weights: permuting two
    servers' features permutes their scores. The head is saved with the model and loads back."""
    from agents.uec.sac_head import UECActionScorer
    from offline.uec.features import LPFeatures

    env = gym.make("UEC-v0")
    kwargs = resolve_policy_kwargs({"head": "agents.uec.sac_head:UECActionScorer", "net_arch": [16, 16]}, env)
    assert kwargs["head_kwargs"] == {"num_servers": 4, "num_devices": 14, "num_profiles": 4, "lp_features": False,
                                    "score_features": False}
    assert UECActionScorer.kwargs_for_env(LPFeatures(gym.make("UEC-v0")))["lp_features"] is True
    net = UECActionScorer(91, 17, [16, 16], th.nn.ReLU, **kwargs["head_kwargs"])
    obs = th.as_tensor(env.reset(seed=0)[0])[None]
    layout = net.layout
    swapped = obs.clone()
    servers = swapped[0, layout.slices["servers"]].reshape(4, 5)
    swapped[0, layout.slices["servers"]] = servers[[1, 0, 2, 3]].reshape(-1)
    budget = swapped[0, layout.slices["task"]][2:]
    swapped[0, layout.slices["task"].start + 2:layout.slices["task"].stop] = budget[[1, 0, 2, 3]]
    for part in ("ssp_profit", "ssp_duration"):
        block = swapped[0, layout.slices[part]].reshape(4, 4)
        swapped[0, layout.slices[part]] = block[[1, 0, 2, 3]].reshape(-1)
    with th.no_grad():
        a, b = net(obs)[0, 1:].reshape(4, 4), net(swapped)[0, 1:].reshape(4, 4)
    assert th.allclose(a[[1, 0, 2, 3]], b, atol=1e-6)
    with pytest.raises(ValueError, match="expects"):
        UECActionScorer(90, 17, [16], th.nn.ReLU, **kwargs["head_kwargs"])

    model = DiscreteSAC("MlpPolicy", env, mask_dim=17, device="cpu", learning_starts=10, batch_size=8,
                        policy_kwargs=kwargs)
    model.learn(30)
    model.save(tmp_path / "m")
    loaded = DiscreteSAC.load(tmp_path / "m.zip", device="cpu")
    o = env.reset(seed=3)[0]
    assert model.predict(o, deterministic=True)[0] == loaded.predict(o, deterministic=True)[0]
    assert isinstance(loaded.policy.actor.logits_net, UECActionScorer)
