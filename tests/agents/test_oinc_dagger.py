"""Imitation of OINC-v0's search (agents/oinc/dagger.py): labels that are slo_liu_ls's own actions, the per-head
cross-entropy by hand, the label file's round trip, config errors, and tiny train.py runs (the search's pair in the
run's env kwargs, a loadable model, a student from the labels alone, a SIGTERM that keeps labels and model)."""

from __future__ import annotations

import math
import signal
from pathlib import Path

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

from agents.oinc.dagger import LABELS_FILE, SearchLabels, TrainConfig, head_cross_entropy, search_labels
from agents.oinc.prior import PriorPolicy, _episode_slots, load_policy
from envs.oinc.env import OINCEnv
from offline.oinc.heuristics import LS_PAIR, SloLiuPolicy, tuned_pair_kwargs
from offline.protocol import run_episode
from offline.registry import make_policy

SHORT = {"scenario_overrides": {"horizon": 6}}
TINY = ["env=oinc-v0", "algo=oinc_dagger", "+env.kwargs.scenario_overrides.horizon=6", "progress=false",
        "algo.label_episodes=2", "algo.epochs=2", "algo.eval_episodes=1", "algo.train_instances=1", "algo.hidden=8"]


def test_search_labels_are_slo_liu_ls_own_actions():
    margin = tuned_pair_kwargs(LS_PAIR)["slo_margin"]
    env = OINCEnv(retraining="ekya", **SHORT)
    slots = _episode_slots(env, env.instance, 4, SloLiuPolicy(slo_margin=margin))
    labels = search_labels(slots, 100)
    search = make_policy("OINC-v0", "slo_liu_ls", env)  # the registered search at its pair's tuned margin
    played = []
    original = search.act
    search.act = lambda obs, info: played.append(original(obs, info)) or played[-1]  # type: ignore[method-assign]
    run_episode(env, search, seed=4)
    np.testing.assert_array_equal(labels, np.stack(played))
    assert (labels != np.stack([s.heuristic for s in slots])).any()  # the search moves away from slo_liu somewhere


def test_head_cross_entropy_by_hand():
    logits = torch.tensor([[[0.0, 1.0, float("-inf")], [2.0, 0.0, 0.0]]])  # one slot, two heads
    teacher = torch.tensor([[1, 0]])
    expected = -(1.0 - math.log(1 + math.e)) - (2.0 - math.log(math.exp(2) + 2))
    assert float(head_cross_entropy(logits, teacher)) == pytest.approx(expected, rel=1e-6)


def test_labels_concatenate_with_episode_offsets_and_round_trip(tmp_path: Path):
    a = SearchLabels(np.ones((3, 6), np.int64), np.array([0, 0, 1]), np.array([0, 1]), np.array([5, 6]))
    b = SearchLabels(np.zeros((2, 6), np.int64), np.array([0, 0]), np.array([7]), np.array([8]))
    both = SearchLabels.concatenate([a, b])
    assert both.slot_episode.tolist() == [0, 0, 1, 2, 2] and both.episode_seed.tolist() == [5, 6, 8]
    loaded, meta = SearchLabels.load(both.save(tmp_path / LABELS_FILE, {"teacher": "slo_liu_ls"}))
    assert meta["teacher"] == "slo_liu_ls" and np.array_equal(loaded.teacher_action, both.teacher_action)


@pytest.mark.parametrize("key, value, match", [
    ("controller", "kalmia", "algo.controller"), ("retraining_share", 1.5, "retraining_share"),
    ("epochs", 0, "algo.epochs"), ("max_moves", -1, "max_moves"), ("bogus", 1, "bogus"),
])
def test_config_errors_name_the_key(key, value, match):
    with pytest.raises(ValueError, match=match):
        TrainConfig.from_dict({"name": "oinc_dagger", "kind": "custom", key: value})


def _run(tmp_path: Path, *extra: str) -> Path:
    from hydra import compose, initialize_config_dir

    from edge_sched_gym import train

    overrides = [*TINY, f"out={tmp_path}", *extra]
    with initialize_config_dir(config_dir=str(train.CONF_DIR), version_base="1.3"):
        cfg = compose("config", overrides=overrides)
    return train.run(cfg, overrides=overrides)


def test_train_py_tiny_run_plays_in_the_search_pair_then_a_student_from_its_labels(tmp_path: Path):
    run_dir = _run(tmp_path / "a")
    saved = OmegaConf.load(run_dir / "config.yaml").env.kwargs
    assert saved.retraining == "ekya"
    assert saved.retraining_share == pytest.approx(tuned_pair_kwargs(LS_PAIR)["retraining_share"])
    labels, meta = SearchLabels.load(run_dir / LABELS_FILE)
    assert len(labels.episode_seed) == 2 and len(labels) == 12 and meta["teacher"] == "slo_liu_ls"
    env = OINCEnv(retraining="ekya", **SHORT)
    policy = load_policy(run_dir, env)
    assert isinstance(policy, PriorPolicy)
    assert policy.heuristic.slo_margin == pytest.approx(tuned_pair_kwargs(LS_PAIR)["slo_margin"])
    assert run_episode(env, policy, seed=0).decisions == 6
    second = _run(tmp_path / "b", f"algo.dataset={run_dir / LABELS_FILE}", "seed=1")
    assert not (second / LABELS_FILE).exists()  # fitted from the labels alone: nothing labelled, nothing copied
    assert isinstance(load_policy(second, env), PriorPolicy)
    with pytest.raises(ValueError, match="label at the share"):  # the share changes the slots the labels belong to
        _run(tmp_path / "c", f"algo.dataset={run_dir / LABELS_FILE}", "algo.retraining_share=0.7")


def test_stopped_by_sigterm_keeps_labels_and_model(tmp_path: Path):
    from conftest import interrupt_training

    args = [*TINY[:-4], "algo.label_episodes=2", "algo.epochs=400", "algo.eval_episodes=1", "algo.train_instances=1",
            "algo.hidden=8", f"out={tmp_path}"]
    code, output = interrupt_training(args, marker="[oinc_dagger] epoch 2 ", signum=signal.SIGTERM)
    assert code == 128 + signal.SIGTERM, output[-2000:]
    (run_dir,) = list(tmp_path.iterdir())
    assert len(SearchLabels.load(run_dir / LABELS_FILE)[0].episode_seed) == 2
    assert "continue with python train.py resume=" in output
    assert isinstance(load_policy(run_dir, OINCEnv(retraining="ekya", **SHORT)), PriorPolicy)
    from hydra import compose, initialize_config_dir

    from edge_sched_gym import train

    overrides = [f"resume={run_dir}", "progress=false"]  # fits again from the kept labels, labelling nothing new
    with initialize_config_dir(config_dir=str(train.CONF_DIR), version_base="1.3"):
        train.run(compose("config", overrides=overrides), overrides=overrides)
    assert len(SearchLabels.load(run_dir / LABELS_FILE)[0].episode_seed) == 2
    assert isinstance(load_policy(run_dir, OINCEnv(retraining="ekya", **SHORT)), PriorPolicy)
