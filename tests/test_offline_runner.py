"""offline.runner: the one evaluation loop gives what a direct loop gives, and checks its inputs."""

from __future__ import annotations

import csv

import gymnasium as gym
import numpy as np
import pytest

import envs  # noqa: F401
from envs.aset.env import ASETEnv
from envs.problems import PROBLEMS
from offline import runner
from offline.aset.policies import EpisodeTally
from offline.protocol import episode_seed, run_episode
from offline.registry import make_policy
from offline.stats import mean_ci95

KWARGS = {"topology": "dc-cloud", "horizon": 4, "theta": 0.0}


def test_runner__aset_rows_equal_a_direct_loop(tmp_path):
    rows = runner.evaluate("ASET-v0", KWARGS, ["random_switch", "closest"], instances=2, episodes=2, seed=3,
                           out_dir=tmp_path, progress=False)
    for row in rows:
        success = []
        for i in range(2):
            env = ASETEnv(**KWARGS, instance_seed=3 + i)
            policy = make_policy("ASET-v0", row["policy"], env)
            for e in range(2):
                tally = EpisodeTally(env.instance.num_apps)
                run_episode(env, policy, seed=episode_seed(3, i, e), on_step=tally)
                success.append(tally.metrics(env.instance.app_names)["success_rate"])
        assert (row["success_rate"], row["success_rate_ci95"]) == mean_ci95(success)
    with open(tmp_path / "per_episode.csv") as fh:
        assert [r["policy"] for r in csv.DictReader(fh)] == ["random_switch"] * 4 + ["closest"] * 4


def test_runner__generic_hook_and_custom_resolver(tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "get_hook", lambda env_id: runner.EvaluationHook(env_id))
    calls = []

    def resolve(env_id, name, env, **kwargs):
        calls.append((env_id, name))
        return make_policy(env_id, name, env, **kwargs)

    (row,) = runner.evaluate("ASET-v0", KWARGS, ["random_load"], instances=2, episodes=3, seed=1, out_dir=tmp_path,
                             progress=False, resolve=resolve)
    assert calls == [("ASET-v0", "random_load")] * 2  # once per instance (one env per instance)
    returns = []
    env = gym.make("ASET-v0", **KWARGS)
    policy = make_policy("ASET-v0", "random_load", env)
    for i in range(2):
        for e in range(3):
            returns.append(run_episode(env, policy, seed=episode_seed(1, i, e)).total_reward)
    assert row["return_mean"] == pytest.approx(float(np.mean(returns)), rel=0, abs=0)
    assert (tmp_path / "episodes.csv").is_file()


def test_runner__every_problem_has_a_hook_with_default_sizes():
    for env_id in PROBLEMS:
        hook = runner.get_hook(env_id)
        assert isinstance(hook, runner.EvaluationHook) and hook.env_id == env_id
        assert hook.default_evaluation["instances"] >= 1 and hook.default_evaluation["episodes"] >= 1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"instances": 0}, "instances=0 is invalid"),
        ({"seed": -1}, "seed=-1 is invalid"),
        ({"policies": []}, "policies=.. is invalid"),
        ({"exact_time_limit": 1.0}, r"not known for ASET-v0; valid options: \[\]"),
    ],
)
def test_runner__bad_input_names_the_choices(tmp_path, kwargs, message):
    args = {"policies": ["closest"], "instances": 1, "episodes": 1, "seed": 0, **kwargs}
    with pytest.raises(ValueError, match=message):
        runner.evaluate("ASET-v0", KWARGS, out_dir=tmp_path / "out", progress=False, **args)
    assert not (tmp_path / "out").exists()
