"""ASET-v0 registered policies, evaluate_policies (contract 3), the DQN feature extractor, configs."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from agents.aset.extractor import TimeConvExtractor
from agents.loading import PRETRAINED_DIR, pretrained_agents
from envs.aset.env import ASETEnv
from envs.aset.types import POLICY_NAMES
from offline.aset import HINDSIGHT, evaluate_policies
from offline.protocol import run_episode
from offline.registry import available_policies, make_policy

ROOT = Path(__file__).resolve().parents[2]


def test_aset__registry_has_the_seven_static_policies_and_random_switch():
    names = available_policies("ASET-v0")
    assert set(POLICY_NAMES) | {"random_switch", "periodic_switch"} <= set(names)
    env = ASETEnv(topology="dc-cloud", horizon=3, theta=0.0)
    for index, name in enumerate(POLICY_NAMES):
        policy = make_policy("ASET-v0", name, env)
        obs, info = env.reset(seed=0)
        policy.reset(env, seed=0)
        assert policy.act(obs, info) == index
    switch = make_policy("ASET-v0", "random_switch", env)
    switch.reset(env, seed=1)
    actions = {switch.act(obs, info) for _ in range(60)}
    assert actions == set(range(7))


def test_aset__periodic_switch_cycles_its_sequence_and_validates_it():
    env = ASETEnv(topology="dc-cloud", horizon=7, theta=0.0)
    result = run_episode(env, make_policy("ASET-v0", "periodic_switch", env), seed=0, keep_step_infos=True)
    assert [i["policy"] for i in result.step_infos] == ["least_impedance", "least_impedance", "farthest"] * 2 + [
        "least_impedance"
    ]
    with pytest.raises(ValueError, match="sequence"):
        make_policy("ASET-v0", "periodic_switch", env, sequence=("fastest",))


def test_aset__static_policy_episode_applies_its_policy_every_window():
    env = ASETEnv(topology="dc-cloud", horizon=4, theta=0.0)
    result = run_episode(env, make_policy("ASET-v0", "cheaper", env), seed=0, keep_step_infos=True)
    assert result.decisions == 4 and {i["policy"] for i in result.step_infos} == {"cheaper"}


def test_aset__evaluate_policies_rows_columns_and_hindsight(tmp_path):
    env_kwargs = {"topology": "dc-cloud", "horizon": 6, "theta": 0.0}
    policies = ["least_impedance", "random_switch", HINDSIGHT]
    rows = evaluate_policies(env_kwargs, policies, instances=2, episodes=1, seed=4, out_dir=tmp_path, progress=False)
    assert [r["policy"] for r in rows] == policies
    apps = ASETEnv(topology="dc-cloud").instance.app_names
    for row in rows:
        assert next(iter(row)) == "policy"
        for col in ("success_rate", "failed_rate", "rejected_rate", *(f"success_{a}" for a in apps)):
            assert col in row and f"{col}_ci95" in row
        total = row["success_rate"] + row["failed_rate"] + row["rejected_rate"]
        assert total == pytest.approx(1.0, abs=1e-9)
    with open(tmp_path / "per_episode.csv") as fh:
        per_ep = list(csv.DictReader(fh))
    static = {p: [float(r["success_rate"]) for r in per_ep if r["policy"] == p] for p in POLICY_NAMES}
    hindsight = [float(r["success_rate"]) for r in per_ep if r["policy"] == HINDSIGHT]
    assert len(hindsight) == 2
    for j, value in enumerate(hindsight):
        assert value == pytest.approx(max(static[p][j] for p in POLICY_NAMES))
    assert (tmp_path / "success_over_time.csv").exists()


def test_aset__hindsight_policy_matches_the_evaluation_shortcut(tmp_path):
    env_kwargs = {"topology": "dc-cloud", "horizon": 5, "theta": 0.0}
    rows = evaluate_policies(env_kwargs, [HINDSIGHT], instances=1, episodes=1, seed=2, out_dir=tmp_path, progress=False)
    from offline.protocol import episode_seed

    env = ASETEnv(**env_kwargs, instance_seed=2)
    policy = make_policy("ASET-v0", HINDSIGHT, env)
    infos = run_episode(env, policy, seed=episode_seed(2, 0, 0), keep_step_infos=True).step_infos
    success = sum(i["success"] * i["queries"] for i in infos) / sum(i["queries"] for i in infos)
    assert success == pytest.approx(rows[0]["success_rate"])
    assert success == pytest.approx(max(policy.success_by_policy.values()))


def test_aset__evaluate_policies_is_reproducible(tmp_path):
    kwargs = {"topology": "co-dc-cloud", "horizon": 4, "theta": 0.0}
    a = evaluate_policies(kwargs, ["random_load"], instances=1, episodes=2, seed=1, out_dir=tmp_path, progress=False)
    b = evaluate_policies(kwargs, ["random_load"], instances=1, episodes=2, seed=1, out_dir=tmp_path, progress=False)
    assert a == b


def test_aset__evaluate_policies_rejects_bad_counts(tmp_path):
    with pytest.raises(ValueError, match="instances"):
        evaluate_policies({}, ["closest"], instances=0, episodes=1, seed=0, out_dir=tmp_path)
    with pytest.raises(ValueError, match="policy"):
        evaluate_policies({"horizon": 2}, ["no_such"], instances=1, episodes=1, seed=0, out_dir=tmp_path,
                          progress=False)


def _extractor_kwargs(path: str) -> dict:
    """features_extractor_kwargs of the DQN in a YAML config (the env's CPU default or the paper preset)."""
    cfg = yaml.safe_load((ROOT / path).read_text())
    return cfg["env"]["algo_overrides"]["dqn"]["policy_kwargs"]["features_extractor_kwargs"] if "env" in cfg \
        else cfg["algo_overrides"]["dqn"]["policy_kwargs"]["features_extractor_kwargs"]


@pytest.mark.parametrize("config", ["edge_sched_gym/conf/env/aset-v0.yaml", "edge_sched_gym/conf/experiment/dqn_aset_paper.yaml"])
@pytest.mark.parametrize("layout", ["flat", "2d"])
def test_aset__extractor_maps_observations_to_features(config, layout):
    preset = _extractor_kwargs(config)
    env = ASETEnv(topology="dc-cloud", obs_layout=layout)
    extractor = TimeConvExtractor(env.observation_space, **preset)
    obs = np.stack([env.observation_space.sample() for _ in range(3)])
    out = extractor(torch.as_tensor(obs))
    assert out.shape == (3, preset["features_dim"])
    # time matters: permuting the sub-windows changes the features
    tensor = obs.reshape(3, *env.state_shape)
    shuffled = tensor[:, :, ::-1].copy().reshape(obs.shape)
    assert not torch.allclose(out, extractor(torch.as_tensor(shuffled)))


def test_aset__extractor_rejects_incompatible_spaces():
    import gymnasium as gym

    with pytest.raises(ValueError, match=r"observation_space\.shape"):
        TimeConvExtractor(gym.spaces.Box(0, 1, (21,), np.float32), time_steps=20)
    with pytest.raises(ValueError, match="conv"):
        TimeConvExtractor(gym.spaces.Box(0, 1, (40,), np.float32), conv="3d")


def test_aset__dqn_with_extractor_from_the_env_config_trains_a_few_hundred_steps():
    from stable_baselines3 import DQN

    cfg = yaml.safe_load(Path(ROOT / "edge_sched_gym" / "conf" / "env" / "aset-v0.yaml").read_text())
    assert cfg["id"] == "ASET-v0" and cfg["name"] == "aset-v0"
    dqn = dict(cfg["algo_overrides"]["dqn"])
    assert dqn.pop("mask") == "none"  # train.py's MaskedDQN must not read a mask from ASET's observation
    policy_kwargs = dict(dqn.pop("policy_kwargs"))
    module, _, cls = policy_kwargs["features_extractor_class"].rpartition(".")
    policy_kwargs["features_extractor_class"] = getattr(__import__(module, fromlist=[cls]), cls)
    dqn.update(learning_starts=50, buffer_size=500, target_update_interval=100)
    kwargs = {**cfg["kwargs"], "topology": "dc-cloud", "horizon": 60}
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # 2 busy cores: intra-op threads only oversubscribe (10x slower)
    try:
        model = DQN("MlpPolicy", ASETEnv(**kwargs), policy_kwargs=policy_kwargs, seed=0, **dqn)
        model.learn(300)
    finally:
        torch.set_num_threads(threads)
    assert model.num_timesteps == 300
    env = ASETEnv(**kwargs)
    obs, _ = env.reset(seed=0)
    action, _ = model.predict(obs, deterministic=True)
    assert env.action_space.contains(int(action))


def test_aset__experiment_configs_name_registered_policies_and_env_fields():
    exp_dir = ROOT / "edge_sched_gym" / "conf" / "experiment"
    files = sorted(exp_dir.glob("aset_*.yaml"))
    assert files
    for path in files:
        cfg = yaml.safe_load(Path(path).read_text())
        env = next(d["override /env"] for d in cfg["defaults"] if "override /env" in d)
        assert env in ("aset-v0", "aset-v1"), path.name
        assert set(cfg["env"]["kwargs"]) <= set(yaml.safe_load(Path(ROOT / f"edge_sched_gym/conf/env/{env}.yaml").read_text())["kwargs"])
        env_id = env.replace("aset", "ASET")
        shipped = {f"pretrained:{name}" for name in pretrained_agents()
                   if yaml.safe_load((PRETRAINED_DIR / name / "config.yaml").read_text())["env"]["id"] == env_id}
        assert set(cfg.get("policies", [])) <= set(available_policies(env_id)) | shipped, path.name
        for sweep in cfg.get("sweeps", []):
            assert sweep["parameter"].startswith("env.kwargs.")
            assert sweep["values"] and sweep["metrics"]


def test_lookahead_oracle__one_window_horizon_picks_the_best_next_window_by_brute_force():
    import copy

    from offline.aset.policies import LookaheadOracle

    env = ASETEnv(topology="dc-cloud", horizon=8, theta=0.0)
    oracle = make_policy("ASET-v0", "lookahead_oracle", env, horizon=1)
    obs, info = env.reset(seed=4)
    oracle.reset(env, seed=4)
    for _ in range(5):
        successes = []
        for action in range(len(POLICY_NAMES)):  # the next window of each action, on copies (same arrivals)
            successes.append(copy.deepcopy(env).step(action)[4]["success"])
        chosen = oracle.act(obs, info)
        assert successes[chosen] == max(successes) and chosen == int(np.argmax(successes))
        obs, _, _, _, info = env.step(chosen)
    with pytest.raises(ValueError, match="horizon"):
        LookaheadOracle(horizon=0)
