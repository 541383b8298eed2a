"""agents.pretrained: shipping a run as a slim model that acts exactly as the run, and loading it by name."""

from __future__ import annotations

import zipfile
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import agents.pretrained as pretrained
from agents import loading
from agents.loading import load_run_policy, resolve_policy

TINY = ["env=oinc-v0", "algo=sac", "steps=150", "algo.learning_starts=100", "env.kwargs.scenario=tiny",
        "progress=false", "eval.freq=100000", "eval.episodes=1", "eval.reference=false", "eval.bound=false"]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> Path:
    from hydra import compose, initialize_config_dir

    from edge_sched_gym import train

    overrides = [*TINY, f"out={tmp_path_factory.mktemp('runs')}"]
    with initialize_config_dir(config_dir=str(train.CONF_DIR), version_base="1.3"):
        cfg = compose("config", overrides=overrides)
    return train.run(cfg, overrides=overrides)


@pytest.fixture
def shipped(tiny_run, tmp_path, monkeypatch) -> Path:
    monkeypatch.setattr(loading, "PRETRAINED_DIR", tmp_path / "pretrained")
    (tmp_path / "pretrained").mkdir()
    return pretrained.ship(pretrained.ShipConfig(name="oinc-tiny", run=str(tiny_run), command="python train.py ..."))


def test_pretrained__slim_model_acts_exactly_as_the_run_and_is_smaller(tiny_run, shipped):
    env = gym.make("OINC-v0", scenario="tiny")
    original, slim = load_run_policy(tiny_run, env), load_run_policy(shipped, env)
    for seed in range(20):
        obs, info = env.reset(seed=seed)
        assert np.array_equal(original.act(obs, info), slim.act(obs, info))
    assert (shipped / "model.zip").stat().st_size < 0.5 * (tiny_run / "model.zip").stat().st_size
    with zipfile.ZipFile(shipped / "model.zip") as archive:
        assert all(i.compress_type == zipfile.ZIP_DEFLATED for i in archive.infolist())
    provenance = pretrained.available()["oinc-tiny"]
    assert provenance["env_id"] == "OINC-v0" and provenance["algo"] == "sac" and provenance["steps"] == 150
    assert provenance["command"] == "python train.py ..."


def test_pretrained__loaded_by_name_from_python_and_through_resolve_policy(shipped):
    env = gym.make("OINC-v0", scenario="tiny")
    obs, info = env.reset(seed=3)
    by_name = pretrained.load("oinc-tiny", env)
    resolved = resolve_policy("OINC-v0", "pretrained:oinc-tiny", env)
    assert np.array_equal(by_name.act(obs, info), resolved.act(obs, info))
    assert pretrained.expand("oinc=pretrained:oinc-tiny") == f"oinc={shipped}"
    assert pretrained.expand("pretrained:oinc-tiny+dedas") == f"{shipped}+dedas"


def test_pretrained__unknown_names_and_bad_runs_are_refused(shipped, tmp_path):
    with pytest.raises(ValueError, match="valid names are \\['oinc-tiny'\\]"):
        pretrained.path("nope")
    with pytest.raises(ValueError, match="valid names"):
        resolve_policy("OINC-v0", "pretrained:nope", gym.make("OINC-v0", scenario="tiny"))
    with pytest.raises(ValueError, match="name="):
        pretrained.ship(pretrained.ShipConfig(name="a/b", run=str(tmp_path)))
    with pytest.raises(ValueError, match="not a finished training run"):
        pretrained.ship(pretrained.ShipConfig(name="empty", run=str(tmp_path)))
    with pytest.raises(ValueError, match="trained on OINC-v0"):
        pretrained.load("oinc-tiny", gym.make("UEC-v0"))


@pytest.mark.parametrize("name", sorted(pretrained.available()))
def test_pretrained__every_shipped_agent_reproduces_its_recorded_evaluation(name: str):
    """The shipped file is small, and greedy episodes on a fresh env give the reward recorded at shipping
    (for a run evaluated on fixed instances this is also its last in-training evaluation)."""
    from omegaconf import OmegaConf

    from offline.protocol import run_episode

    folder = pretrained.path(name)
    check = pretrained.available()[name]["check_eval"]
    model = next(folder / m for m in loading.PRETRAINED_MODELS if (folder / m).is_file())
    assert model.stat().st_size < 5_000_000
    config = OmegaConf.load(folder / "config.yaml")
    env = gym.make(str(config.env.id), **OmegaConf.to_container(config.env.kwargs, resolve=True))
    policy = pretrained.load(name, env)
    seeds = range(check["first_seed"], check["first_seed"] + check["episodes"])
    rewards = [run_episode(env, policy, seed=s).total_reward for s in seeds]
    assert np.mean(rewards) == pytest.approx(check["mean_reward"], rel=1e-9)


def test_pretrained__evaluate_py_takes_pretrained_names_and_refuses_unknown_ones():
    from hydra import compose, initialize_config_dir

    from edge_sched_gym import evaluate

    conf = str(Path(__file__).resolve().parents[2] / "edge_sched_gym" / "conf")
    name = sorted(pretrained.available())[0]
    env = pretrained.available()[name]["env_id"].lower()
    with initialize_config_dir(config_dir=conf, version_base="1.3"):
        good = compose("evaluate", overrides=[f"env={env}", f"policies=[pretrained:{name}]"])
        bad = compose("evaluate", overrides=[f"env={env}", "policies=[pretrained:nope]"])
    assert Path(evaluate.resolve_settings(good)["policies"][0]).resolve() == pretrained.path(name)
    with pytest.raises(ValueError, match="pretrained agent 'nope' is unknown"):
        evaluate.resolve_settings(bad)


def test_pretrained__sac_model_files_hold_each_weight_once(tiny_run):
    """The critics' parameter lists are not pickled into model.zip's data (they are rebuilt at load)."""
    import json

    with zipfile.ZipFile(tiny_run / "model.zip") as archive:
        data = json.loads(archive.read("data"))
    assert not {"critic_parameters", "critic_target_parameters", "batch_norm_stats"} & set(data)


def test_pretrained__an_incomplete_installation_is_an_error_not_an_empty_list(tmp_path, monkeypatch):
    """issue 28 F1: a wheel without the package data listed no agents and then called every name unknown."""
    monkeypatch.setattr(loading, "PRETRAINED_DIR", tmp_path)
    with pytest.raises(loading.ModelFileError, match="no shipped agent in"):
        pretrained.available()
    (tmp_path / "uec-v0-sac").mkdir()
    (tmp_path / "uec-v0-sac" / "provenance.yaml").write_text("env_id: UEC-v0\n")
    with pytest.raises(loading.ModelFileError, match=r"'uec-v0-sac' lacks config\.yaml, model\.zip"):
        pretrained.available()


def test_pretrained__a_custom_trainer_run_ships_its_tensors_file_and_acts_as_the_run(tmp_path, monkeypatch):
    """A corais_uec run (custom trainer, model.pt) ships as is and loads by name, acting exactly as its run."""
    from hydra import compose, initialize_config_dir

    from edge_sched_gym import train
    from offline.protocol import run_episode

    overrides = ["env=uec-v0", "algo=corais_uec", "env.kwargs.scenario=tiny", "steps=200", f"out={tmp_path / 'runs'}",
                 "algo.seeds_per_batch=2", "algo.samples=2", "algo.eval_every=100", "algo.eval_episodes=1",
                 "algo.model.embed_dim=8", "algo.model.heads=2", "progress=false"]
    with initialize_config_dir(config_dir=str(train.CONF_DIR), version_base="1.3"):
        run_dir = train.run(compose("config", overrides=overrides), overrides=overrides)
    monkeypatch.setattr(loading, "PRETRAINED_DIR", tmp_path / "pretrained")
    (tmp_path / "pretrained").mkdir()
    with pytest.raises(ValueError, match=r"model='model.zip' is invalid for algo corais_uec"):
        pretrained.ship(pretrained.ShipConfig(name="uec-tiny", run=str(run_dir)))
    folder = pretrained.ship(pretrained.ShipConfig(name="uec-tiny", run=str(run_dir), model="model.pt"))
    assert sorted(p.name for p in folder.iterdir()) == ["config.yaml", "model.pt", "provenance.yaml"]
    assert list(pretrained.available()) == ["uec-tiny"]
    env = gym.make("UEC-v0", scenario="tiny")
    ours, run = pretrained.load("uec-tiny", env), load_run_policy(run_dir, env)
    assert [run_episode(env, ours, seed=s).total_reward for s in range(3)] == \
        [run_episode(env, run, seed=s).total_reward for s in range(3)]
