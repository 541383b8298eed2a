"""The UEC-v0 prior dispatcher (agents/uec/prior.py): the untrained policy IS its heuristic, the REINFORCE loss
by hand, save/load round trips through the corais_uec trainer and a tiny training run through train.py."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch

import envs  # noqa: F401  (registers UEC-v0)
from agents.uec.prior import PriorModelConfig, PriorNet, PriorPolicy, reinforce_loss
from agents.uec.trainer import TrainConfig, load_policy, save_model
from offline.protocol import run_episode
from offline.registry import make_policy


def _actions(env: gym.Env, policy, seed: int) -> list[int]:
    obs, info = env.reset(seed=seed)
    policy.reset(env, seed=seed)
    actions, done = [], False
    while not done:
        action = policy.act(obs, info)
        actions.append(action)
        obs, _, done, _, info = env.step(action)
    return actions


def _prior_model(env: gym.Env, prior: str = "lp_bid_price") -> PriorNet:
    layout = env.unwrapped.layout
    weight = make_policy("UEC-v0", prior, env).weight
    torch.manual_seed(0)
    return PriorNet(PriorModelConfig(layout.num_servers, layout.num_devices, layout.num_profiles, prior, weight,
                                     hidden=16))


@pytest.mark.parametrize("prior", ["lp_bid_price", "opportunity_greedy"])
def test_uec_v0__untrained_prior_policy_acts_exactly_like_its_heuristic(prior: str):
    env = gym.make("UEC-v0", scenario="tiny")
    heuristic = make_policy("UEC-v0", prior, env)
    policy = PriorPolicy(_prior_model(env, prior))
    for seed in range(3):
        expected = _actions(env, heuristic, seed)
        assert _actions(env, policy, seed) == expected
        assert any(a > 0 for a in expected)


def test_uec_v0__prior_logits_are_alpha_times_score_on_allowed_actions():
    model = PriorNet(PriorModelConfig(1, 1, 2, temperature=0.5))
    tokens = torch.randn(1, 3, model.cfg.token_features)
    score = torch.tensor([[0.0, 1.0, 2.0]], dtype=torch.float64)
    allowed = torch.tensor([[True, True, False]])
    logits = model(tokens, score, allowed)
    assert logits[0, 2] == float("-inf")
    assert torch.allclose(logits[0, :2], torch.tensor([0.0, 2.0], dtype=torch.float64))


def test_uec_v0__prior_reinforce_loss_matches_a_hand_computation():
    # two seeds x two samples; episode e made decisions index==e; log pi of the chosen actions known
    log_p = torch.log(torch.tensor([[0.5, 0.5], [0.25, 0.75], [0.5, 0.5], [0.1, 0.9]], dtype=torch.float64))
    allowed = torch.ones(4, 2, dtype=torch.bool)
    actions = torch.tensor([0, 1, 1, 0])
    index = torch.tensor([0, 1, 2, 3])
    profit = np.array([10.0, 12.0, 5.0, 5.0])  # advantages -1, +1, 0, 0
    loss, entropy = reinforce_loss(log_p, allowed, actions, index, profit, samples=2, normalize=False)
    chosen = np.log([0.5, 0.75, 0.5, 0.1])
    assert loss.item() == pytest.approx(-np.mean(np.array([-1.0, 1.0, 0.0, 0.0]) * chosen))
    h = [-(p * np.log(p)).sum() for p in ([0.5, 0.5], [0.25, 0.75], [0.5, 0.5], [0.1, 0.9])]
    assert entropy.item() == pytest.approx(np.mean(h))
    loss_h, _ = reinforce_loss(log_p, allowed, actions, index, profit, samples=2, entropy_coef=0.1, normalize=False)
    assert loss_h.item() == pytest.approx(loss.item() - 0.1 * np.mean(h))


def test_uec_v0__prior_model_save_load_round_trip_keeps_actions(tmp_path: Path):
    env = gym.make("UEC-v0", scenario="tiny")
    model = _prior_model(env)
    with torch.no_grad():  # a non-zero correction, so the round trip is not trivially the heuristic
        model.correction[-1].weight.normal_(0.0, 1.0)
    save_model(tmp_path / "model.pt", model)
    loaded = load_policy(tmp_path, env)
    assert isinstance(loaded, PriorPolicy)
    assert loaded.model.cfg == model.cfg
    original = PriorPolicy(model)
    for seed in range(2):
        assert _actions(env, loaded, seed) == _actions(env, original, seed)


def test_uec_v0__prior_config_validation():
    assert TrainConfig.from_dict({"prior": "lp_bid_price"}).prior == "lp_bid_price"
    with pytest.raises(ValueError, match="prior"):
        TrainConfig.from_dict({"prior": "rescue"})
    with pytest.raises(ValueError, match="overlaps"):
        TrainConfig.from_dict({"prior": "lp_bid_price", "instance_pool_base": 95, "train_instances": 10})


def test_uec_v0__uec_prior_train_py_tiny_budget_writes_a_loadable_model(tmp_path: Path):
    from hydra import compose, initialize_config_dir

    from edge_sched_gym import train

    overrides = ["env=uec-v0", "algo=uec_prior", "env.kwargs.scenario=tiny", "steps=300", f"out={tmp_path}",
                 "algo.seeds_per_batch=2", "algo.samples=2", "algo.eval_every=2", "algo.eval_episodes=2",
                 "algo.train_instances=1", "algo.prior_hidden=8", "progress=false"]
    with initialize_config_dir(config_dir=str(train.CONF_DIR), version_base="1.3"):
        cfg = compose("config", overrides=overrides)
    run_dir = train.run(cfg, overrides=overrides)
    assert (run_dir / "model.pt").is_file() and (run_dir / "model_best.pt").is_file()
    assert (run_dir / "curve.csv").read_text().startswith("batch,decisions")
    from benchmarks.plot_curves import load_scalars

    scalars = load_scalars(run_dir)  # the curve in TensorBoard too: greedy evaluation beside the prior's
    assert scalars["eval/mean_reward"][0][0] == 0 and "reference/mean_reward" in scalars
    env = gym.make("UEC-v0", scenario="tiny")
    policy = load_policy(run_dir, env)
    assert isinstance(policy, PriorPolicy)
    twice = [[run_episode(env, policy, seed=s).total_reward for s in range(2)] for _ in range(2)]
    assert twice[0] == twice[1]



def test_uec_v0__action_values_leave_the_env_as_it_was_and_match_a_replay():
    from agents.uec.prior import action_values

    env = gym.make("UEC-v0", scenario="tiny")
    heuristic = make_policy("UEC-v0", "lp_bid_price", env)
    obs, info = env.reset(seed=4)
    heuristic.reset(env, seed=4)
    for _ in range(2):
        obs, _, _, _, info = env.step(heuristic.act(obs, info))
    allowed = np.r_[True, heuristic.candidates(info)]
    q = action_values(env.unwrapped, obs, info, heuristic, allowed)
    assert np.isnan(q[~allowed]).all() and np.isfinite(q[allowed]).all()
    first = heuristic.act(obs, info)  # the untouched env, continued by the heuristic, earns exactly Q̂(s, first)
    rest, action, done = 0.0, first, False
    while not done:
        obs, reward, done, _, info = env.step(action)
        rest += reward
        action = heuristic.act(obs, info) if not done else 0
    assert rest == pytest.approx(q[first])


def test_uec_v0__prior_rollout_q_trains_a_loadable_model(tmp_path: Path):
    from agents.uec.trainer import train

    algo = {"prior": "lp_bid_price", "prior_method": "rollout_q", "max_minutes": 0.05, "eval_every": 1,
            "eval_episodes": 2, "prior_hidden": 8, "q_batch": 32}
    path = train({"id": "UEC-v0", "kwargs": {"scenario": "tiny"}}, algo, run_dir=tmp_path, seed=0, steps=10**6)
    assert path.is_file() and (tmp_path / "curve.csv").read_text().startswith("round,epoch")
    assert isinstance(load_policy(tmp_path, gym.make("UEC-v0", scenario="tiny")), PriorPolicy)


def test_uec_prior__a_checkpoint_file_of_a_custom_run_loads_that_file(tmp_path):
    """resolve_policy('<run>/model_best.pt') loaded model.pt for custom trainers: the checkpoint was dropped."""
    from hydra import compose, initialize_config_dir

    from agents.loading import resolve_policy
    from edge_sched_gym import train

    overrides = ["env=uec-v0", "algo=corais_uec", "env.kwargs.scenario=tiny", "steps=200", f"out={tmp_path}",
                 "algo.seeds_per_batch=2", "algo.samples=2", "algo.eval_every=100", "algo.eval_episodes=1",
                 "algo.model.embed_dim=8", "algo.model.heads=2", "progress=false"]
    with initialize_config_dir(config_dir=str(train.CONF_DIR), version_base="1.3"):
        run_dir = train.run(compose("config", overrides=overrides), overrides=overrides)
    (run_dir / "model_best.pt").write_bytes(b"not a model")  # loading it must fail, not fall back to model.pt
    env = gym.make("UEC-v0", scenario="tiny")
    resolve_policy("UEC-v0", str(run_dir), env)
    with pytest.raises(ValueError, match=r"model_best\.pt"):
        resolve_policy("UEC-v0", str(run_dir / "model_best.pt"), env)
