"""rl-zoo3 (rl-baselines3-zoo) trains on every id with the shipped hyperparameter files, and its ``enjoy`` loads an
exported shipped agent (issue 28, item 3). rl-zoo3 is in the dev extra; without it these tests are skipped.

Each run is rl-zoo3's own ``train`` (``python -m rl_zoo3.train --algo ppo --env <id> --gym-packages envs agents.zoo
--conf-file agents/zoo/hyperparams/ppo.yml -n 300``) in a temporary log folder: -n 300 still collects one full
rollout (n_envs x n_steps) and runs its updates. Measured on the 2-core dev machine (shared, load ~4), `python -m
agents.zoo train --algo ppo --env <id> -n 2048` (one torch thread), rl-zoo3's last fps / wall time with start-up:
UEC-v0 3,700 / 23 s, OINC-v0 410 / 14 s, ASET-v0 390 / 15 s, ASET-v1 370 / 15 s, CoRaiS-v0 390 / 15 s,
CoRaiS-v1 330 / 15 s. OINC-v0 at the first sizes (2 envs x 200 steps, torch's default threads, argument
validation on) ran 12 steps/s.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

rl_zoo3 = pytest.importorskip("rl_zoo3", reason="rl-zoo3 is not installed (pip install rl_zoo3, or the dev extra)")

import agents.zoo as zoo  # noqa: E402

ENV_IDS = ["UEC-v0", "OINC-v0", "ASET-v0", "ASET-v1", "CoRaiS-v0", "CoRaiS-v1"]


#: rl-zoo3 sets torch's thread count and agents.zoo turns distribution checks off: undone after each test
pytestmark = pytest.mark.usefixtures("restore_torch")


def _zoo(monkeypatch, *args: str) -> None:
    """Run rl-zoo3's CLI in this process (as `python -m agents.zoo ...`), the suite's algorithms registered."""
    monkeypatch.setattr(sys, "argv", ["agents.zoo", *args])
    zoo.main()


def test_rl_zoo3__every_id_has_ppo_hyperparameters_with_the_right_policy() -> None:
    import gymnasium as gym
    from gymnasium import spaces

    table = zoo.hyperparams("ppo")
    assert sorted(table) == sorted(ENV_IDS)
    for env_id, settings in table.items():
        dict_obs = isinstance(gym.make(env_id).observation_space, spaces.Dict)
        assert settings["policy"] == ("MultiInputPolicy" if dict_obs else "MlpPolicy"), env_id
    for algo in ("dqn", "dqn_mask", "ppo_mask", "sac_d"):
        assert zoo.hyperparams(algo), algo
    with pytest.raises(ValueError, match="shipped"):
        zoo.hyperparams_file("nope")


def test_rl_zoo3__hyperparameter_files_are_package_data() -> None:
    import tomllib

    pyproject = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    data = pyproject["tool"]["setuptools"]["package-data"]
    assert "hyperparams/*.yml" in data.get("agents.zoo", [])


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_rl_zoo3__train_ppo_runs_on_every_id(env_id: str, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    _zoo(monkeypatch, "train", "--algo", "ppo", "--env", env_id, "--gym-packages", "envs", "agents.zoo",
         "--conf-file", str(zoo.hyperparams_file("ppo")), "-n", "300", "-f", "logs", "--seed", "0",
         "--eval-freq", "-1", "--verbose", "0")
    assert (tmp_path / "logs" / "ppo" / f"{env_id}_1" / f"{env_id}.zip").is_file()


@pytest.mark.parametrize(("algo", "env_id"), [("ppo_mask", "UEC-v0"), ("dqn", "UEC-v0"), ("dqn_mask", "UEC-v0")])
def test_rl_zoo3__the_masked_and_value_based_files_train(algo: str, env_id: str, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    _zoo(monkeypatch, "train", "--algo", algo, "--env", env_id, "-n", "300", "-f", "logs", "--seed", "0",
         "--eval-freq", "-1", "--verbose", "0", "-params", "learning_starts:100" if "dqn" in algo else "n_epochs:1")
    assert (tmp_path / "logs" / algo / f"{env_id}_1" / f"{env_id}.zip").is_file()


def test_rl_zoo3__enjoy_loads_an_exported_shipped_agent(tmp_path, monkeypatch, capsys) -> None:
    from agents.zoo.export import export_pretrained

    model = export_pretrained("uec-v0-sac", tmp_path / "zoo-agents")
    assert model == tmp_path / "zoo-agents" / "sac_d" / "UEC-v0_1" / "UEC-v0.zip"
    hyper = yaml.safe_load((model.parent / "UEC-v0" / "config.yml").read_text())
    assert hyper["env_wrapper"] == ["offline.uec.features.NetScoreFeatures"]  # the main job's features
    # rl-zoo3's own loader finds it where enjoy looks
    from rl_zoo3.utils import get_model_path

    _, found, _ = get_model_path(1, str(tmp_path / "zoo-agents"), "sac_d", rl_zoo3.utils.EnvironmentName("UEC-v0"))
    assert Path(found) == model
    monkeypatch.chdir(tmp_path)
    _zoo(monkeypatch, "enjoy", "--algo", "sac_d", "--env", "UEC-v0", "-f", "zoo-agents", "--exp-id", "1",
         "--no-render", "--deterministic", "-n", "200")
    assert "Mean reward" in capsys.readouterr().out  # at least one full episode played


def test_rl_zoo3__export_refuses_unknown_agents(tmp_path) -> None:
    from agents.zoo.export import export_pretrained

    with pytest.raises(ValueError, match="valid names"):
        export_pretrained("no-such-agent", tmp_path)
