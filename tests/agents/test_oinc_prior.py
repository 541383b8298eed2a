"""The OINC-v0 prior scheduler (agents/oinc/prior.py): the untrained policy IS slo_liu, the slot model and the
features are the env's, the REINFORCE loss by hand, save/load, and tiny train.py runs (SIGTERM, resume)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

import envs  # noqa: F401  (registers OINC-v0)
from agents.callbacks import TrainingInterrupted
from agents.loading import save_config_model as save_model
from agents.oinc import prior as oinc_prior
from agents.oinc.prior import (
    PriorModelConfig,
    PriorNet,
    PriorPolicy,
    TrainConfig,
    batch_slot_features,
    batch_slot_rewards,
    chunked_forward,
    current_slot,
    load_policy,
    reinforce_loss,
    slot_features,
    slot_latency,
    slot_rewards,
    validation_gain,
)
from envs.oinc.env import OINCEnv
from offline.oinc.heuristics import SloLiuPolicy, tuned_pair_kwargs

SHORT = {"scenario_overrides": {"horizon": 12}}  # the paper's 40 devices and 12 edges, 12 slots


def _env(**kwargs) -> OINCEnv:
    return OINCEnv(retraining="ekya", retraining_share=0.8, **{**SHORT, **kwargs})


def _actions(env: OINCEnv, policy, seed: int) -> list[np.ndarray]:
    obs, info = env.reset(seed=seed)
    policy.reset(env, seed=seed)
    actions, done = [], False
    while not done:
        action = policy.act(obs, info)
        actions.append(np.asarray(action))
        obs, _, _, done, info = env.step(action)
    return actions


def _model(env: OINCEnv, hidden: int = 16) -> PriorNet:
    torch.manual_seed(0)
    inst = env.instance
    return PriorNet(PriorModelConfig(inst.num_devices, inst.num_edges, tuned_pair_kwargs()["slo_margin"], hidden))


def test_oinc_v0__untrained_prior_policy_acts_exactly_like_slo_liu():
    env = _env()
    heuristic = SloLiuPolicy(slo_margin=tuned_pair_kwargs()["slo_margin"])
    policy = PriorPolicy(_model(env))
    for seed in range(3):
        expected = _actions(env, heuristic, seed)
        got = _actions(env, policy, seed)
        assert len(got) == len(expected) and all(np.array_equal(a, b) for a, b in zip(got, expected, strict=True))


def test_oinc_v0__slot_rewards_are_the_env_reward_and_features_are_exact_one_head_changes():
    env = _env()
    heuristic = SloLiuPolicy(slo_margin=0.1)
    obs, info = env.reset(seed=5)
    heuristic.reset(env)
    rng = np.random.default_rng(0)
    for _ in range(3):
        slot = current_slot(env, heuristic.act(obs, info))
        actions = np.stack([slot.heuristic, *(rng.integers(0, env.action_space.nvec) for _ in range(3))])
        rewards = slot_rewards(slot, actions)
        obs, reward, _, _, info = env.step(actions[1])  # no pause under ekya: the env's reward is the model's
        assert reward == pytest.approx(rewards[1], rel=1e-12)
    tokens, prior, valid = slot_features(slot)
    assert prior.sum() == slot.heuristic.size and valid[0].sum() == env.instance.num_edges and valid[1].sum() == 4
    lat0 = slot_latency(slot, slot.heuristic[None])[0]
    for head in rng.choice(slot.heuristic.size, 12, replace=False):
        for choice in np.flatnonzero(valid[head]):
            action = slot.heuristic.copy()
            action[head] = choice
            lat = slot_latency(slot, action[None])[0]
            assert tokens[head, choice, 1] == pytest.approx(lat.sum() - lat0.sum(), abs=1e-5)
            misses = (lat > slot.slo_s).sum() - (lat0 > slot.slo_s).sum()
            assert tokens[head, choice, 2] == pytest.approx(misses / 4.0)


def _mixed_slots(count: int = 6) -> list:
    """Slots of two instances (the trainer batches env copies on different instances), every third with an
    arbitrary action in the heuristic's place."""
    rng = np.random.default_rng(3)
    heuristic = SloLiuPolicy(slo_margin=0.3)
    slots = []
    for instance_seed in (0, 10_001):
        env = _env(instance_seed=instance_seed)
        obs, info = env.reset(seed=instance_seed)
        heuristic.reset(env)
        for t in range(count // 2):
            action = heuristic.act(obs, info) if t % 3 else rng.integers(0, env.action_space.nvec)
            slots.append(current_slot(env, action))
            obs, _, _, _, info = env.step(action)
    return slots


def test_oinc_v0__batched_features_and_rewards_are_the_per_slot_ones_bit_for_bit():
    slots = _mixed_slots()
    batched = batch_slot_features(slots)
    for n, slot in enumerate(slots):
        for one, many in zip(slot_features(slot), batched, strict=True):
            assert np.array_equal(one, many[n])
    # the trainer's layout: (N, K, 3I) views of a permuted (N, 3I, K) tensor of sampled actions
    rng = np.random.default_rng(0)
    nvec = np.tile([slots[0].cpu_hz.size, 4, 4], slots[0].slo_s.size)
    sampled = torch.from_numpy(rng.integers(0, nvec[None, :, None], size=(len(slots), nvec.size, 5))).permute(0, 2, 1)
    for actions in (sampled.numpy(), np.ascontiguousarray(sampled.numpy())):
        expected = np.stack([slot_rewards(s, a) for s, a in zip(slots, actions, strict=True)])
        assert np.array_equal(batch_slot_rewards(slots, actions), expected)


def test_oinc_v0__prior_forward_on_valid_tokens_and_in_chunks_gives_the_full_forward_logits():
    env = _env()
    model = _model(env)
    with torch.no_grad():
        model.correction[-1].weight.normal_(0.0, 1.0)
    tokens, prior, valid = (torch.from_numpy(x) for x in batch_slot_features(_mixed_slots(20)))
    with torch.no_grad():
        full = (model.log_alpha.exp() * prior.float() + model.correction(tokens).squeeze(-1)).masked_fill(
            ~valid, float("-inf"))
        got = model(tokens, prior, valid)
        assert torch.allclose(got, full, rtol=0, atol=1e-6) and torch.equal(torch.isinf(got), ~valid)
        assert torch.equal(chunked_forward(model, tokens, prior, valid), got)
    data = [(s, *f) for s, *f in zip(_mixed_slots(20), *batch_slot_features(_mixed_slots(20)), strict=True)]
    gain = validation_gain(model, data)
    actions = got.argmax(-1).numpy()
    reference = [slot_rewards(s, np.stack([a, s.heuristic])) for s, a in zip(_mixed_slots(20), actions, strict=True)]
    assert gain["gain"] == pytest.approx(np.mean([r[0] - r[1] for r in reference]), rel=1e-12, abs=1e-15)


def test_oinc_v0__prior_logits_are_alpha_on_the_heuristic_choice_and_masked_elsewhere():
    model = PriorNet(PriorModelConfig(1, 2, 0.0, hidden=4, temperature=0.5))
    tokens = torch.randn(3, 4, oinc_prior.TOKEN_FEATURES)
    prior = torch.zeros(3, 4, dtype=torch.bool)
    prior[:, 1] = True
    valid = torch.tensor([[True, True, False, False]] + [[True] * 4] * 2)
    logits = model(tokens, prior, valid)
    assert torch.isinf(logits[0, 2:]).all()
    assert torch.allclose(logits[:, 1], torch.full((3,), 2.0)) and torch.all(logits[1:, [0, 2, 3]] == 0)


def test_oinc_v0__prior_reinforce_loss_matches_a_hand_computation():
    # one slot, one head of two choices, two samples: rewards 1 and 3 -> advantages -1, +1, std sqrt(2)
    logits = torch.log(torch.tensor([[[0.25, 0.75]]], dtype=torch.float64))
    actions = torch.tensor([[[0], [1]]])
    loss = reinforce_loss(logits, actions, torch.tensor([[1.0, 3.0]], dtype=torch.float64))
    adv = np.array([-1.0, 1.0]) / np.sqrt(2.0)
    assert loss.item() == pytest.approx(-np.mean(adv * np.log([0.25, 0.75])))


def test_oinc_v0__prior_model_save_load_round_trip_keeps_actions(tmp_path: Path):
    env = _env()
    model = _model(env)
    with torch.no_grad():  # a non-zero correction, so the round trip is not trivially the heuristic
        model.correction[-1].weight.normal_(0.0, 1.0)
    save_model(tmp_path / "model.pt", model)
    loaded = load_policy(tmp_path, env)
    assert loaded.model.cfg == model.cfg
    original = PriorPolicy(model)
    got, expected = _actions(env, loaded, 1), _actions(env, original, 1)
    assert all(np.array_equal(a, b) for a, b in zip(got, expected, strict=True))
    with pytest.raises(ValueError, match="I=40"):
        load_policy(tmp_path, OINCEnv(scenario="tiny", retraining="ekya")).reset(OINCEnv(scenario="tiny"))


def test_oinc_v0__prior_config_validation():
    assert TrainConfig.from_dict({"samples": 4}).controller == "ekya"
    with pytest.raises(ValueError, match="controller"):
        TrainConfig.from_dict({"controller": "aret"})
    with pytest.raises(ValueError, match="overlaps"):
        TrainConfig.from_dict({"instance_pool_base": 95, "train_instances": 10})
    with pytest.raises(ValueError, match="unknown key"):
        TrainConfig.from_dict({"sample": 4})


TINY_ALGO = {"n_envs": 2, "samples": 2, "slots_per_batch": 2, "eval_every": 1, "eval_episodes": 1,
             "train_instances": 1, "hidden": 8, "checkpoint_every": 1}
TINY = ["env=oinc-v0", "algo=oinc_prior", "+env.kwargs.scenario_overrides.horizon=6", "progress=false",
        *(f"algo.{k}={v}" for k, v in TINY_ALGO.items())]


def _compose(overrides: list[str]):
    from hydra import compose, initialize_config_dir

    from edge_sched_gym import train

    with initialize_config_dir(config_dir=str(train.CONF_DIR), version_base="1.3"):
        return compose("config", overrides=overrides)


def test_oinc_v0__oinc_prior_train_py_two_batches_write_a_loadable_pair_run(tmp_path: Path):
    from agents.loading import load_run_policy
    from edge_sched_gym import train

    overrides = [*TINY, "steps=8", f"out={tmp_path}"]
    run_dir = train.run(_compose(overrides), overrides=overrides)
    assert (run_dir / "model.pt").is_file() and (run_dir / "model_best.pt").is_file()
    assert len((run_dir / "curve.csv").read_text().splitlines()) == 3  # header + 2 batches
    from benchmarks.plot_curves import load_scalars

    scalars = load_scalars(run_dir)  # the same curve in TensorBoard, x = slots
    assert scalars["eval/gain_per_slot"][0] == [4, 8] and "eval/hit_rate_change" in scalars
    saved = OmegaConf.load(run_dir / "config.yaml").env.kwargs
    assert saved.retraining == "ekya" and saved.retraining_share == pytest.approx(tuned_pair_kwargs()["retraining_share"])
    env = OINCEnv(retraining="ekya", scenario_overrides={"horizon": 6})
    policy = load_run_policy(run_dir, env)
    assert isinstance(policy, PriorPolicy)
    assert all(np.array_equal(a, b) for a, b in zip(_actions(env, policy, 0), _actions(env, policy, 0), strict=True))


def test_oinc_v0__oinc_prior_sigterm_saves_a_loadable_model_and_resume_continues(tmp_path: Path, monkeypatch):
    algo = dict(TINY_ALGO)
    env_cfg = {"id": "OINC-v0", "kwargs": {"scenario_overrides": {"horizon": 6}}}
    loss = oinc_prior.reinforce_loss

    def signalling_loss(*args, **kwargs):  # the first batch's loss: the run stops after that batch
        os.kill(os.getpid(), signal.SIGTERM)
        return loss(*args, **kwargs)

    monkeypatch.setattr(oinc_prior, "reinforce_loss", signalling_loss)
    with pytest.raises(TrainingInterrupted) as stop:
        oinc_prior.train(env_cfg, algo, run_dir=tmp_path, seed=0, steps=12)
    assert stop.value.exit_code == 143 and stop.value.saved == tmp_path / "checkpoints" / "model_interrupted_4.pt"
    assert isinstance(load_policy(tmp_path, OINCEnv(**env_cfg["kwargs"])), PriorPolicy)
    monkeypatch.setattr(oinc_prior, "reinforce_loss", loss)
    path = oinc_prior.train(env_cfg, algo, run_dir=tmp_path, seed=0, steps=12, resume=True)
    assert oinc_prior.load_model(path)[1]["steps"] == 12
    slots = [int(line.split(",")[1]) for line in (tmp_path / "curve.csv").read_text().splitlines()[1:]]
    assert slots == sorted(set(slots)) and slots[-1] == 12  # the resumed curve goes on, no point twice
