"""Expert iteration on ASET (agents/aset/dagger.py): labels that are the teacher's own evaluation decisions, a
candidate set that always holds the teacher's action, the student's own features from its own past only, the
dataset's round trip, config errors, and tiny train.py runs: a loadable model, a student from the labels alone, a
resume, and a SIGTERM that keeps the labels and the model."""

from __future__ import annotations

import signal
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch

import envs  # noqa: F401  (registers ASET-v1)
from agents.aset.dagger import (
    EXTRA_FEATURES,
    LABELS_FILE,
    AsetDaggerPolicy,
    AsetLabels,
    AsetStudent,
    StudentConfig,
    StudentState,
    TrainConfig,
    label_episode,
    load_policy,
)
from envs.aset.types import POLICY_NAMES
from offline.protocol import PolicyView, run_episode
from offline.registry import make_policy

KWARGS = {"topology": "dc-cloud", "horizon": 8, "theta": 0.0, "instance_seed": 3}


def _teacher(env: gym.Env):
    return make_policy("ASET-v1", "aset_rollout", env, samples=2, horizon=2)


def test_round_zero_labels_are_the_teachers_own_evaluation_decisions():
    env = gym.make("ASET-v1", **KWARGS)
    labels = label_episode(env, 11, _teacher(env), None, instance_seed=3, round_index=0, episode=0)
    assert len(labels) == 8 and np.array_equal(labels.behaviour, labels.teacher_action)
    played = []
    teacher = _teacher(env)
    original = teacher.act
    teacher.act = lambda obs, info: played.append(original(obs, info)) or played[-1]  # type: ignore[method-assign]
    run_episode(env, teacher, seed=11)
    assert labels.teacher_action.tolist() == played  # the labelling loop's counter sync changes nothing
    # every label lies in the student's candidate set, with a finite rollout value
    assert all(labels.candidates[i, a] for i, a in enumerate(labels.teacher_action))
    assert np.isfinite(labels.teacher_values[np.arange(8), labels.teacher_action]).all()
    assert labels.obs.dtype == np.float16 and labels.extra.shape == (8, EXTRA_FEATURES)


def test_student_labels_follow_the_played_actions_and_the_policy_sees_only_the_view():
    env = gym.make("ASET-v1", **KWARGS)
    env.reset(seed=0)
    student = AsetStudent(StudentConfig(int(np.prod(env.observation_space.shape)), channels=[4], features_dim=8,
                                        hidden=8))
    labels = label_episode(env, 5, _teacher(env), student, instance_seed=3, round_index=1, episode=0)
    state = StudentState()
    obs, _ = env.reset(seed=5)
    state.reset(PolicyView(env))  # reads the instance only: the view is enough
    for i, action in enumerate(labels.behaviour):
        extra, candidates = state.features(obs)
        assert np.array_equal(extra, labels.extra[i]) and np.array_equal(candidates, labels.candidates[i] == 1)
        assert candidates[action]  # the greedy student never leaves the candidate set
        obs, *_ = env.step(int(action))
        state.played(int(action))
    # relief run, previous action and cycle position come from the played actions
    li = POLICY_NAMES.index("least_impedance")
    run = 0
    for i, action in enumerate(labels.behaviour[:-1]):
        run = 0 if action == li else run + 1
        assert labels.extra[i + 1, 4 + 2 * 7 + action] == 1.0
        assert labels.extra[i + 1, 3] == pytest.approx(min(run, 3) / 3)  # tuned max_relief_run = 3
        assert labels.extra[i + 1, 4 + 3 * 7 + (i + 1) % 3] == 1.0


def test_student_logits_are_minus_infinity_off_the_candidates():
    model = AsetStudent(StudentConfig(16 * 20, channels=[4], features_dim=8, hidden=8))
    candidates = torch.tensor([[True, False, True, False, False, False, True]])
    logits = model(torch.rand(1, 320) * 10, torch.rand(1, EXTRA_FEATURES), candidates)
    assert torch.isinf(logits[~candidates]).all() and torch.isfinite(logits[candidates]).all()


def test_labels_round_trip_without_pickle(tmp_path: Path):
    env = gym.make("ASET-v1", **KWARGS)
    parts = [label_episode(env, s, _teacher(env), None, instance_seed=3, round_index=0, episode=e)
             for e, s in enumerate((1, 2))]
    labels = AsetLabels.concatenate(parts)
    path = labels.save(tmp_path / LABELS_FILE, {"teacher": "aset_rollout"})
    loaded, meta = AsetLabels.load(path)
    assert meta == {"teacher": "aset_rollout"} and len(loaded) == 16
    for name in ("obs", "extra", "candidates", "teacher_action", "behaviour", "lam", "episode"):
        assert np.array_equal(getattr(loaded, name), getattr(labels, name))
    np.testing.assert_array_equal(loaded.teacher_values, labels.teacher_values)
    with pytest.raises(ValueError, match=r"dataset=.*not a file"):
        AsetLabels.load(tmp_path / "missing.npz")
    np.savez(tmp_path / "other.npz", obs=np.zeros(2))
    with pytest.raises(ValueError, match="lacks"):
        AsetLabels.load(tmp_path / "other.npz")


@pytest.mark.parametrize("key, value, match", [
    ("lams", [0.5], "algo.lams"), ("eval_lams", [], "algo.eval_lams"), ("value_tau", -1.0, "value_tau"),
    ("episodes", 0, "algo.episodes"), ("channels", [], "algo.channels"), ("bogus", 1, "bogus"),
])
def test_config_errors_name_the_key(key, value, match):
    with pytest.raises(ValueError, match=match):
        TrainConfig.from_dict({"name": "aset_dagger", "kind": "custom", key: value})


def _run(tmp_path: Path, *extra: str) -> Path:
    from hydra import compose, initialize_config_dir

    from edge_sched_gym import train

    overrides = ["env=aset-v1", "algo=aset_dagger", "env.kwargs.topology=dc-cloud", f"out={tmp_path}",
                 "algo.rounds=1", "algo.episodes=2", "algo.episode_windows=4", "algo.epochs=2", "algo.eval_every=1",
                 "algo.eval_episodes=2", "algo.train_instances=1", "algo.channels=[4]", "algo.features_dim=8",
                 "algo.hidden=8", "progress=false", *extra]
    with initialize_config_dir(config_dir=str(train.CONF_DIR), version_base="1.3"):
        cfg = compose("config", overrides=overrides)
    return train.run(cfg, overrides=overrides)


def test_train_py_tiny_run_then_a_student_from_its_labels(tmp_path: Path):
    run_dir = _run(tmp_path / "a")
    labels, meta = AsetLabels.load(run_dir / LABELS_FILE)
    assert sorted(set(labels.round.tolist())) == [0, 1] and meta["teacher"] == "aset_rollout"
    assert len(labels) == 4 * 4 and set(labels.lam.tolist()) <= {40.0, 60.0, 80.0, 100.0}
    assert (run_dir / "curve.csv").read_text().startswith("round,epoch")
    env = gym.make("ASET-v1", **{**KWARGS, "instance_seed": 100})
    policy = load_policy(run_dir, env)
    assert isinstance(policy, AsetDaggerPolicy)
    twice = [[run_episode(env, policy, seed=s).total_reward for s in range(2)] for _ in range(2)]
    assert twice[0] == twice[1]
    second = _run(tmp_path / "b", f"algo.dataset={run_dir / LABELS_FILE}", "algo.rounds=0", "seed=1")
    assert not (second / LABELS_FILE).exists()  # fitted from the labels alone: nothing collected, nothing copied
    assert isinstance(load_policy(second, env), AsetDaggerPolicy)
    with pytest.raises(ValueError, match="observations of size"):
        load_policy(run_dir, gym.make("ASET-v1", topology="co-dc-cloud"))


def test_stopped_by_sigterm_keeps_labels_and_model_and_resumes(tmp_path: Path):
    from conftest import interrupt_training

    args = ["env=aset-v1", "algo=aset_dagger", "env.kwargs.topology=dc-cloud", f"out={tmp_path}", "algo.rounds=2",
            "algo.episodes=2", "algo.episode_windows=4", "algo.epochs=200", "algo.eval_every=1000",
            "algo.eval_episodes=2", "algo.train_instances=1", "algo.channels=[4]", "algo.features_dim=8",
            "algo.hidden=8", "progress=false"]
    code, output = interrupt_training(args, marker="[aset_dagger] round 1 epoch 2 ", signum=signal.SIGTERM)
    assert code == 128 + signal.SIGTERM, output[-2000:]
    (run_dir,) = list(tmp_path.iterdir())
    labels, _ = AsetLabels.load(run_dir / LABELS_FILE)
    assert sorted(set(labels.round.tolist())) == [0, 1]
    assert "continue with python train.py resume=" in output
    env = gym.make("ASET-v1", **KWARGS)
    assert isinstance(load_policy(run_dir, env), AsetDaggerPolicy)
    from hydra import compose, initialize_config_dir

    from edge_sched_gym import train

    overrides = [f"resume={run_dir}", "progress=false"]
    with initialize_config_dir(config_dir=str(train.CONF_DIR), version_base="1.3"):
        cfg = compose("config", overrides=overrides)
    train.run(cfg, overrides=overrides)
    resumed, _ = AsetLabels.load(run_dir / LABELS_FILE)
    assert sorted(set(resumed.round.tolist())) == [0, 1, 2] and len(resumed) == len(labels) + 2 * 4
    assert not set(resumed.episode_seed[resumed.round == 2]) & set(labels.episode_seed)  # new episodes


def test_labels_export_to_minari_by_replay(tmp_path: Path):
    pytest.importorskip("minari")
    from agents.datasets import export_minari, load_minari

    env = gym.make("ASET-v1", **KWARGS)
    labels = AsetLabels.concatenate([label_episode(env, s, _teacher(env), None, instance_seed=3, round_index=0,
                                                   episode=e) for e, s in enumerate((1, 2))])
    path = labels.save(tmp_path / LABELS_FILE, {"env_id": "ASET-v1", "env_kwargs": KWARGS, "teacher": "aset_rollout"})
    export_minari(path, "test/aset-v1/tiny-v0", data_path=tmp_path / "minari")
    dataset = load_minari("test/aset-v1/tiny-v0", data_path=tmp_path / "minari")
    assert dataset.total_episodes == 2 and dataset.total_steps == 16
    for e, episode in enumerate(dataset.iterate_episodes()):
        rows = labels.episode == e
        assert episode.observations.dtype == np.float32 and len(episode.observations) == 9  # 8 decisions + the last
        np.testing.assert_allclose(episode.observations[:-1], labels.obs[rows].astype(np.float32), rtol=1e-3, atol=1e-3)
        assert episode.actions.tolist() == labels.behaviour[rows].tolist()
        np.testing.assert_allclose(episode.rewards, labels.success[rows])
        assert episode.infos["teacher_action"][:-1].tolist() == labels.teacher_action[rows].tolist()
