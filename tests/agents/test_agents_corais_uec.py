"""The CoRaiS attention dispatcher on UEC-v0 (agents/uec): masking, greedy determinism, CRN
baseline rollouts, a tiny training run through train.py, and save/load round trips."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch

import envs  # noqa: F401  (registers UEC-v0)
from agents.loading import load_run_policy
from agents.uec.model import UECAttentionNet, config_for_layout, masked_log_probs
from agents.uec.trainer import (
    CoRaiSUECPolicy,
    TrainConfig,
    load_model,
    load_policy,
    make_envs,
    rollouts,
    save_model,
)
from offline.protocol import run_episode

TINY = {"id": "UEC-v0", "kwargs": {"scenario": "tiny"}, "reference_policy": "rescue"}


def _model(env: gym.Env, seed: int = 0) -> UECAttentionNet:
    torch.manual_seed(seed)
    return UECAttentionNet(config_for_layout(env.unwrapped.layout, embed_dim=16, heads=2, layers=1, ff_hidden=32))


def _episode_observations(env: gym.Env, seeds: range) -> np.ndarray:
    """Observations visited by a masked-random walk (mixed feasibility patterns)."""
    rng = np.random.default_rng(0)
    rows = []
    for s in seeds:
        obs, info = env.reset(seed=s)
        done = False
        while not done:
            rows.append(obs)
            action = int(rng.choice(np.flatnonzero(info["action_mask"])))
            obs, _, done, _, info = env.step(action)
    return np.stack(rows)


@pytest.mark.parametrize("scenario", ["tiny", "paper"])
def test_uec_v0__corais_uec_masked_candidates_get_zero_probability(scenario: str):
    env = gym.make("UEC-v0", scenario=scenario)
    obs = _episode_observations(env, range(2))
    mask = env.unwrapped.layout.split(obs)["action_mask"] > 0.5
    assert (~mask).any() and mask[:, 0].all()  # the walk met infeasible candidates; reject always feasible
    probs = masked_log_probs(_model(env), obs).exp().detach().numpy()
    assert probs.shape == mask.shape
    assert np.all(probs[~mask] == 0.0)
    assert np.allclose(probs.sum(axis=1), 1.0, atol=1e-5)
    assert np.all(probs[mask] > 0.0)


def test_uec_v0__corais_uec_logits_are_clipped_tanh():
    env = gym.make("UEC-v0", scenario="tiny")
    model = _model(env)
    logits = model(torch.as_tensor(_episode_observations(env, range(1))))
    finite = logits[torch.isfinite(logits)]
    assert finite.abs().max() <= model.cfg.tanh_clip


def test_uec_v0__corais_uec_greedy_decoding_is_deterministic():
    env = gym.make("UEC-v0", scenario="tiny")
    policy = CoRaiSUECPolicy(_model(env), greedy=True)
    first = [run_episode(env, policy, seed=s, policy_seed=s).total_reward for s in range(4)]
    again = [run_episode(env, policy, seed=s, policy_seed=s + 100).total_reward for s in range(4)]
    assert first == again


def test_uec_v0__corais_uec_same_seed_rollouts_share_arrivals():
    """Common random numbers: S rollouts of one seed see the same number of decisions (same arrivals),
    and greedy rollouts of one seed give identical profits."""
    env_list = make_envs(TINY, 4)
    model = _model(env_list[0])
    gen = torch.Generator().manual_seed(0)
    _, _, actions, index = rollouts(model, env_list, [7, 7, 9, 9], greedy=False, generator=gen)
    counts = np.bincount(index.numpy(), minlength=4)
    assert counts[0] == counts[1] and counts[2] == counts[3] and actions.numel() == counts.sum()
    profit = rollouts(model, env_list, [7, 7, 7, 7], greedy=True)[0]
    assert np.all(profit == profit[0])


def test_uec_v0__corais_uec_config_rejects_unknown_keys_and_single_sample():
    with pytest.raises(ValueError, match="unknown key"):
        TrainConfig.from_dict({"name": "corais_uec", "smaples": 4})
    with pytest.raises(ValueError, match="samples"):
        TrainConfig.from_dict({"name": "corais_uec", "samples": 1})


def test_uec_v0__corais_uec_save_load_round_trip_gives_identical_greedy_actions(tmp_path: Path):
    env = gym.make("UEC-v0", scenario="tiny")
    model = _model(env, seed=3)
    save_model(tmp_path / "model.pt", model)
    loaded = load_model(tmp_path / "model.pt")[0]
    obs = torch.as_tensor(_episode_observations(env, range(3)))
    assert torch.equal(model.eval()(obs).argmax(-1), loaded(obs).argmax(-1))
    policy = load_policy(tmp_path, env)
    other = gym.make("UEC-v0")  # paper layout: a different observation size
    with pytest.raises(ValueError, match="layout"):
        load_policy(tmp_path, other)
    with torch.no_grad():
        expected = model(obs).argmax(-1).tolist()
    assert [policy.act(o, {}) for o in obs.numpy()] == expected


def test_uec_v0__corais_uec_train_py_tiny_budget_writes_model_events_and_loads(tmp_path: Path):
    from hydra import compose, initialize_config_dir

    from edge_sched_gym import train

    overrides = ["env=uec-v0", "algo=corais_uec", "env.kwargs.scenario=tiny", "steps=400", f"out={tmp_path}",
                 "algo.seeds_per_batch=2", "algo.samples=4", "algo.eval_every=2", "algo.eval_episodes=3",
                 "algo.checkpoint_every=2", "algo.model.embed_dim=16", "algo.model.heads=2", "progress=false"]
    with initialize_config_dir(config_dir=str(train.CONF_DIR), version_base="1.3"):
        cfg = compose("config", overrides=overrides)
    run_dir = train.run(cfg, overrides=overrides)
    assert (run_dir / "model.pt").is_file() and (run_dir / "model_best.pt").is_file()
    assert list((run_dir / "checkpoints").glob("model_*.pt"))
    assert list(run_dir.glob("events.out.tfevents.*"))
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(run_dir)).Reload()
    for tag in ("rollout/ep_rew_mean", "train/loss", "eval/mean_reward"):
        assert tag in events.Tags()["scalars"], tag
    env = gym.make("UEC-v0", scenario="tiny")
    policy = load_run_policy(run_dir, env)
    twice = [[run_episode(env, policy, seed=s).total_reward for s in range(3)] for _ in range(2)]
    assert twice[0] == twice[1]
    obs, info = env.reset(seed=0)
    done = False
    while not done:  # the loaded greedy policy only takes feasible actions
        action = policy.act(obs, info)
        assert info["action_mask"][action] == 1
        obs, _, done, _, info = env.step(action)


def test_uec_v0__corais_uec_is_restricted_to_uec(tmp_path: Path):
    with pytest.raises(ValueError, match="UEC-v0"):
        make_envs({"id": "CoRaiS-v0", "kwargs": {}}, 1)
