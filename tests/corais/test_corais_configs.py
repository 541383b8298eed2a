"""The CoRaiS Hydra configs name real policies, valid env kwargs and valid trainer keys."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import pytest
import yaml

import envs  # noqa: F401
from agents.corais.model import ModelConfig
from agents.corais.trainer import TrainConfig
from agents.loading import available_policies  # non-learning and shipped learned policies
from envs.corais.generator import parse_scale

CONF = Path(__file__).resolve().parents[2] / "edge_sched_gym" / "conf"
EXPERIMENTS = sorted((CONF / "experiment").glob("corais_*.yaml"))


@pytest.mark.parametrize("name", ["corais-v0", "corais-v1"])
def test_corais_configs__env_and_algo_files_are_valid(name: str) -> None:
    env_cfg = yaml.safe_load((CONF / "env" / f"{name}.yaml").read_text())
    assert env_cfg["id"] == name.replace("corais", "CoRaiS") and env_cfg["reference_policy"] in available_policies(
        env_cfg["id"])
    gym.make(env_cfg["id"], **env_cfg["kwargs"]).reset(seed=0)
    algo = yaml.safe_load((CONF / "algo" / "corais.yaml").read_text())
    cfg = TrainConfig.from_dict(algo)
    ModelConfig(**cfg.model)


@pytest.mark.parametrize("path", EXPERIMENTS, ids=lambda p: p.stem)
def test_corais_configs__experiments_name_registered_policies_and_valid_scales(path: Path) -> None:
    cfg = yaml.safe_load(path.read_text())
    env_name = next((d["override /env"] for d in cfg.get("defaults", []) if isinstance(d, dict)
                     and "override /env" in d), "corais-v0")
    env_id = yaml.safe_load((CONF / "env" / f"{env_name}.yaml").read_text())["id"]
    known = set(available_policies(env_id))
    assert set(cfg.get("policies", [])) <= known
    reference = cfg.get("evaluation_kwargs", {}).get("reference", "exact")
    assert reference == "exact" or reference in cfg["policies"]
    for sweep in cfg.get("sweeps", []):
        if sweep["parameter"] == "env.kwargs.scale":
            for value in sweep["values"]:
                parse_scale(value)
    if "algo" in cfg:
        ModelConfig(**TrainConfig.from_dict(cfg["algo"]).model)


def test_corais_configs__v1_training_presets_name_the_v1_env() -> None:
    from agents.corais.trainer import _experiment

    for path in sorted((CONF / "experiment").glob("corais_v1_train_*.yaml")):
        preset = _experiment(path.stem)
        assert preset["env_id"] == "CoRaiS-v1" and len(preset["scale"]) == 3
