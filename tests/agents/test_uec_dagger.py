"""Expert iteration on UEC-v0 (agents/uec/dagger.py) and its datasets (agents/datasets.py): the imitation loss by
hand, labels that are the teacher's own evaluation decisions, the dataset's round trip (arrays, features, Minari),
and a tiny training run through train.py that saves a loadable model and trains a second student from its labels."""

from __future__ import annotations

import math
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch

import envs  # noqa: F401  (registers UEC-v0)
from agents.uec.dagger import (
    LABELS_FILE,
    TeacherLabels,
    advantage_loss,
    features,
    imitation_loss,
    label_episode,
    make_teacher,
    slot_key,
    soft_imitation_loss,
    value_targets,
)
from agents.uec.prior import PriorModelConfig, PriorNet, PriorPolicy, _slot, decision_features
from agents.uec.trainer import TrainConfig, load_policy
from envs.uec.env import UECEnv
from offline.protocol import run_episode
from offline.registry import make_policy

KWARGS = {"scenario": "tiny", "instance_seed": 3}


def test_imitation_loss_is_the_cross_entropy_to_the_teacher_by_hand():
    logits = torch.tensor([[0.0, math.log(3.0), float("-inf")], [math.log(2.0), 0.0, 0.0]], dtype=torch.float64)
    teacher = torch.tensor([1, 0])
    expected = (-math.log(3 / 4) - math.log(2 / 4)) / 2
    assert float(imitation_loss(logits, teacher)) == pytest.approx(expected, rel=1e-12)
    logits.requires_grad_(True)
    imitation_loss(logits, teacher).backward()  # the gradient is (softmax − one-hot) / N, zero off the action set
    expected_grad = (torch.softmax(logits.detach(), dim=-1) - torch.nn.functional.one_hot(teacher, 3)) / 2
    assert torch.allclose(logits.grad, expected_grad.double())
    assert float(logits.grad[0, 2]) == 0.0


def test_soft_targets_and_advantage_regression_by_hand():
    nan = float("nan")
    values = torch.tensor([[1.0, 1.0 + math.log(3.0) * 0.5, nan], [2.0, nan, nan]])
    teacher = torch.tensor([1, 0])
    targets = value_targets(values, teacher, tau=0.5)  # softmax((v − max v)/τ) = (1/4, 3/4) on the compared pair
    assert torch.allclose(targets, torch.tensor([[0.25, 0.75, 0.0], [1.0, 0.0, 0.0]], dtype=torch.float64))
    assert torch.equal(value_targets(values, teacher, tau=0.0)[0], torch.tensor([0.0, 1.0, 0.0], dtype=torch.float64))
    logits = torch.tensor([[0.0, math.log(3.0), float("-inf")], [0.0, 0.0, 0.0]], dtype=torch.float64)
    expected = (-(0.25 * math.log(1 / 4) + 0.75 * math.log(3 / 4)) - math.log(1 / 3)) / 2
    assert float(soft_imitation_loss(logits, targets)) == pytest.approx(expected, rel=1e-7)  # float32 values
    # advantage: only the first state has two compared actions; centred logits (−d/2, d/2), values (−0.5, 0.5)/scale
    d = 0.3
    logits = torch.tensor([[1.0, 1.0 + d, 7.0], [5.0, 0.0, 0.0]], dtype=torch.float64)
    values = torch.tensor([[0.0, 1.0, nan], [3.0, nan, nan]])
    assert float(advantage_loss(logits, values, scale=2.0)) == pytest.approx((d / 2 - 0.25) ** 2, rel=1e-12)
    assert float(advantage_loss(logits[1:], values[1:], scale=2.0)) == 0.0  # no state with a choice


def _student(env: UECEnv, hidden: int = 8) -> PriorNet:
    layout = env.layout
    weight = make_policy("UEC-v0", "lp_bid_price", env).weight
    torch.manual_seed(0)
    return PriorNet(PriorModelConfig(layout.num_servers, layout.num_devices, layout.num_profiles, "lp_bid_price",
                                     weight, hidden=hidden, actions="useful"))


def _labels(student: PriorNet | None, seed: int = 5, teacher: str = "uec_rollout_preempt") -> tuple[TeacherLabels, ...]:
    env = UECEnv(**KWARGS)
    env.reset(seed=0)
    slot = _slot(KWARGS, 3, "lp_bid_price", make_policy("UEC-v0", "lp_bid_price", env).weight)
    policy = make_teacher(teacher, env)
    policy.futures = 32  # a cheap teacher: the properties below hold for any sample size
    return label_episode(env, slot, seed, policy, student, round_index=0 if student is None else 1, episode=0), slot


def test_teacher_labels_are_the_teachers_evaluation_decisions_within_the_students_action_set():
    labels, _ = _labels(None)
    teacher = make_teacher("uec_rollout_preempt", UECEnv(**KWARGS))
    teacher.futures = 32
    result = run_episode(gym.make("UEC-v0", **KWARGS), teacher, seed=5)  # the runner's seed derivation
    assert labels.behaviour.tolist() == labels.teacher_action.tolist()  # round 0: the teacher plays
    assert labels.reward.sum() == pytest.approx(result.total_reward, abs=1e-9)
    assert labels.final_obs.shape == (1, labels.obs.shape[1])
    useful = np.c_[np.ones(len(labels), bool), labels.action_mask[:, 1:] > 0]
    assert useful[np.arange(len(labels)), labels.teacher_action].all()
    compared = np.isfinite(labels.teacher_values)
    chosen = labels.teacher_values[np.arange(len(labels)), labels.teacher_action]
    several = compared.sum(axis=1) > 1
    assert several.any()
    assert np.array_equal(chosen[several], np.nanmax(labels.teacher_values[several], axis=1))  # its argmax


def test_dataset_round_trip_and_features_recomputed_from_it(tmp_path: Path):
    env = UECEnv(**KWARGS)
    env.reset(seed=0)
    student = _student(env)
    labels, slot = _labels(student, seed=6)
    assert (labels.round == 1).all()
    path = labels.save(tmp_path / LABELS_FILE, {"env_id": "UEC-v0", "env_kwargs": KWARGS, "teacher": "x"})
    back, meta = TeacherLabels.load(path)
    assert meta["env_kwargs"] == KWARGS
    for name in TeacherLabels.__dataclass_fields__:
        assert np.array_equal(getattr(back, name), getattr(labels, name), equal_nan=True), name
    tokens, score, allowed = features(back, {slot_key(3, float("nan")): slot}, student)
    obs, info = env.reset(seed=6)  # the features of the first decision, computed live, are the stored ones
    live = decision_features(obs, info, slot.heuristic, student.layout, slot.scale, "useful")
    assert np.array_equal(tokens[0].numpy(), live[0]) and np.array_equal(allowed[0].numpy(), live[2])
    with torch.no_grad():  # the student stepped the env with its greedy action on these features
        assert student(tokens, score, allowed).argmax(-1).tolist() == labels.behaviour.tolist()
    with pytest.raises(ValueError, match="dataset"):
        TeacherLabels.load(tmp_path / "missing.npz")


def test_minari_export_round_trip(tmp_path: Path):
    pytest.importorskip("minari")
    from agents.datasets import export_minari, load_minari

    parts = [_labels(None, seed=s)[0] for s in (7, 8)]
    for episode, part in enumerate(parts):
        part.episode[:] = episode
    labels = TeacherLabels.concatenate(parts)
    labels.save(tmp_path / LABELS_FILE, {"env_id": "UEC-v0", "env_kwargs": KWARGS, "teacher": "uec_rollout_preempt"})
    export_minari(tmp_path, "edge-sched/uec-tiny/test-v0", data_path=tmp_path / "minari")
    dataset = load_minari("edge-sched/uec-tiny/test-v0", data_path=tmp_path / "minari")
    assert dataset.total_episodes == 2 and dataset.total_steps == len(labels)
    for index, episode in enumerate(dataset.iterate_episodes()):
        rows = labels.episode == index
        assert np.array_equal(episode.actions, labels.behaviour[rows])
        assert np.allclose(episode.rewards, labels.reward[rows])
        assert np.array_equal(episode.observations[:-1], labels.obs[rows])
        assert np.array_equal(episode.observations[-1], labels.final_obs[index])
        assert bool(episode.terminations[-1]) and not episode.terminations[:-1].any()
        assert np.array_equal(episode.infos["teacher_action"][:-1], labels.teacher_action[rows])
    env = dataset.recover_environment()
    assert env.unwrapped.spec.id == "UEC-v0"


def test_dagger_config_is_validated():
    with pytest.raises(ValueError, match="teacher"):
        TrainConfig.from_dict({"prior": "lp_bid_price", "prior_method": "dagger", "teacher": "lp_bid_price"})
    with pytest.raises(ValueError, match="dagger_loss"):
        TrainConfig.from_dict({"prior": "lp_bid_price", "prior_method": "dagger", "dagger_loss": "ranks"})
    with pytest.raises(ValueError, match="dagger_rounds"):
        TrainConfig.from_dict({"prior": "lp_bid_price", "prior_method": "dagger", "dagger_rounds": -1})
    with pytest.raises(ValueError, match="actions"):
        PriorModelConfig(3, 2, 2, actions="all")


def test_uec_dagger_train_py_tiny_run_then_a_student_from_its_labels(tmp_path: Path):
    from hydra import compose, initialize_config_dir

    from edge_sched_gym import train

    def run(*extra: str) -> Path:
        overrides = ["env=uec-v0", "algo=uec_dagger", "env.kwargs.scenario=tiny", f"out={tmp_path}",
                     "algo.dagger_rounds=1", "algo.dagger_episodes=2", "algo.dagger_epochs=2", "algo.eval_every=1",
                     "algo.eval_episodes=2", "algo.train_instances=1", "algo.prior_hidden=8", "progress=false", *extra]
        with initialize_config_dir(config_dir=str(train.CONF_DIR), version_base="1.3"):
            cfg = compose("config", overrides=overrides)
        return train.run(cfg, overrides=overrides)

    run_dir = run()
    labels, meta = TeacherLabels.load(run_dir / LABELS_FILE)
    assert sorted(set(labels.round.tolist())) == [0, 1] and meta["teacher"] == "uec_rollout_preempt"
    assert len(labels.final_obs) == int(labels.episode.max()) + 1 == 4
    assert (run_dir / "curve.csv").read_text().startswith("round,epoch")
    env = gym.make("UEC-v0", scenario="tiny")
    policy = load_policy(run_dir, env)
    assert isinstance(policy, PriorPolicy) and policy.model.cfg.actions == "useful"
    twice = [[run_episode(env, policy, seed=s).total_reward for s in range(2)] for _ in range(2)]
    assert twice[0] == twice[1]
    second = run(f"algo.dataset={run_dir / LABELS_FILE}", "algo.dagger_rounds=0", "seed=1")
    assert not (second / LABELS_FILE).exists()  # trained from the labels alone: nothing collected, nothing copied
    assert len(TeacherLabels.load(run_dir / LABELS_FILE)[0]) == len(labels)
    assert isinstance(load_policy(second, env), PriorPolicy)


def test_uec_dagger_stopped_by_sigterm_saves_labels_and_model_and_says_how_to_continue(tmp_path: Path):
    import signal

    from conftest import interrupt_training

    args = ["env=uec-v0", "algo=uec_dagger", "env.kwargs.scenario=tiny", f"out={tmp_path}", "algo.dagger_rounds=3",
            "algo.dagger_episodes=2", "algo.dagger_epochs=50", "algo.eval_every=100", "algo.eval_episodes=2",
            "algo.train_instances=1", "algo.prior_hidden=8", "progress=false"]
    code, output = interrupt_training(args, marker="[uec_dagger] round 1 epoch 2 ", signum=signal.SIGTERM)
    assert code == 128 + signal.SIGTERM, output[-2000:]
    (run_dir,) = list(tmp_path.iterdir())
    labels, _ = TeacherLabels.load(run_dir / LABELS_FILE)
    assert sorted(set(labels.round.tolist())) == [0, 1]  # every finished round's labels are kept
    assert f"algo.dataset={run_dir / LABELS_FILE} algo.dagger_rounds=2" in output  # rounds 2 and 3 are left
    assert "round 1 epoch 50" not in output  # it stopped at the next epoch, not at the end of the fit
    assert isinstance(load_policy(run_dir, gym.make("UEC-v0", scenario="tiny")), PriorPolicy)


def test_labels_at_another_load_keep_it_and_old_label_files_still_load(tmp_path: Path):
    from agents.uec.dagger import load_slot

    env = UECEnv(**KWARGS)
    env.reset(seed=0)
    weight = make_policy("UEC-v0", "lp_bid_price", env).weight
    heavy = load_slot(KWARGS, 3, 0.9, "lp_bid_price", weight)
    default = load_slot(KWARGS, 3, float("nan"), "lp_bid_price", weight)
    assert heavy.instance.arrival_prob.mean() > default.instance.arrival_prob.mean()
    teacher = make_teacher("uec_rollout_preempt", env)
    teacher.futures = 16
    labels = label_episode(env, heavy, 9, teacher, None, round_index=0, episode=0)
    assert np.all(labels.arrival_prob == 0.9)
    student = _student(env)
    tokens = features(labels, {slot_key(3, 0.9): heavy}, student)[0]
    obs, info = env.reset(seed=9, options={"instance": heavy.instance})  # the features of the heavy instance
    assert np.array_equal(tokens[0].numpy(), decision_features(obs, info, heavy.heuristic, student.layout,
                                                               heavy.scale, "useful")[0])
    arrays = {name: getattr(labels, name) for name in TeacherLabels.__dataclass_fields__ if name != "arrival_prob"}
    np.savez(tmp_path / "old.npz", **arrays)  # a file written before loads were mixed
    old, _ = TeacherLabels.load(tmp_path / "old.npz")
    assert np.isnan(old.arrival_prob).all() and len(old) == len(labels)
    with pytest.raises(ValueError, match="dagger_loads"):
        TrainConfig.from_dict({"prior": "lp_bid_price", "prior_method": "dagger", "dagger_loads": [1.5]})
