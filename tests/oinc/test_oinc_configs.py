"""OINC-v0 configs: the env YAML builds the env, experiments name valid fields, values and policies."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest
import yaml

from envs.oinc.env import OINCEnv
from envs.oinc.generator import make_scenario, scenario_fields
from envs.oinc.retraining import OINCRetraining
from envs.oinc.types import Jobs
from offline.oinc import resolve_pair

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_oinc_config__env_yaml_builds_the_env() -> None:
    cfg = yaml.safe_load((ROOT / "edge_sched_gym/conf/env/oinc-v0.yaml").read_text())
    assert cfg["id"] == "OINC-v0" and cfg["name"] == "oinc-v0"
    env = OINCEnv(**cfg["kwargs"])
    assert env.action_space.nvec.tolist()[:3] == [12, 4, 4]
    sac = cfg["algo_overrides"]["sac"]
    assert sac["batch_size"] == 100 and sac["tau"] == 0.01 and sac["buffer_size"] == 10000
    paper = yaml.safe_load((ROOT / "edge_sched_gym/conf/experiment/oinc_sac_paper.yaml").read_text())["env"]["algo_overrides"]["sac"]
    assert paper["policy_kwargs"]["net_arch"] == [1024, 512] and paper["learning_rate"] == 1e-4


@pytest.mark.parametrize("path", sorted((ROOT / "edge_sched_gym/conf/experiment").glob("oinc_*.yaml")), ids=lambda p: p.stem)
def test_oinc_config__experiments_are_valid(path: pathlib.Path) -> None:
    cfg = yaml.safe_load(path.read_text())
    assert path.read_text().startswith("# @package _global_")
    for name in cfg.get("policies", []):
        resolve_pair(name, None)
    prefix = "env.kwargs.scenario_overrides."
    for sweep in cfg.get("sweeps", []):
        if sweep["parameter"] == "env.kwargs.retraining_share":  # an env argument, validated by every controller
            for value in sweep["values"]:
                for controller in ("aret", "kalmia", "ekya", "dedas", "zhang"):
                    OINCEnv(scenario="tiny", retraining=controller, retraining_share=value)
        else:
            assert sweep["parameter"].startswith(prefix)
            field = sweep["parameter"][len(prefix):]
            assert field in scenario_fields()
            for value in sweep["values"]:
                make_scenario("paper", **{field: value})
        assert set(sweep["metrics"]) <= {"inference_latency_s", "retraining_completion_s", "weighted_sum",
                                         "success_rate", "retraining_share"}


def test_oinc_alg2__res_min_is_max_of_current_need_and_recent_quantile() -> None:
    inst = OINCEnv(scenario="tiny").instance
    ctrl = OINCRetraining(history=4, quantile=0.5)
    ctrl.reset(inst, Jobs.empty(2))
    needs = []
    rng = np.random.default_rng(0)
    for _ in range(7):
        d = rng.uniform(0.8e6, 1.6e6, inst.num_devices)
        c = rng.uniform(100e6, 200e6, inst.num_devices)
        ctrl.begin_slot(0, np.zeros(0, dtype=np.int64), d, c)
        needs.append(ctrl.need_now)
        past = needs[-5:-1]
        expected = max(needs[-1], float(np.quantile(past, 0.5))) if past else needs[-1]
        assert ctrl.res_min_hz() == pytest.approx(expected)
