"""The exact MILP against brute force, heuristics against the optimum, the registry and the evaluation."""

from __future__ import annotations

import csv
import itertools

import gymnasium as gym
import numpy as np
import pytest

import envs  # noqa: F401
from agents.loading import available_policies  # non-learning and shipped learned policies
from envs.corais.dynamics import dispatch_cost
from envs.corais.generator import generate, make_scenario
from offline import corais
from offline.protocol import run_episode
from offline.registry import make_policy


def _brute_force(inst) -> float:
    q, z = inst.num_region, inst.num_requests
    every = np.array(list(itertools.product(range(q), repeat=z)), dtype=np.int64)
    return float(dispatch_cost(inst, every).min())


@pytest.mark.parametrize("q,z", [(1, 4), (2, 5), (2, 6), (3, 4), (3, 6)])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_corais_milp__equals_brute_force_on_tiny_instances(q, z, seed) -> None:
    inst = generate(make_scenario((q + 2, q, z), backlog_max=3), np.random.default_rng(100 * q + 10 * z + seed))
    result = corais.solve_exact(inst, time_limit=10.0, mip_rel_gap=0.0, require_incumbent=True)
    assert result.has_incumbent and result.optimal
    assert result.cost == pytest.approx(_brute_force(inst), rel=1e-9)
    assert result.objective == pytest.approx(result.cost, rel=1e-6)  # MILP objective = the cost model


@pytest.mark.parametrize("scale", [(4, 3, 6), (10, 5, 50)])
def test_corais_milp__no_heuristic_beats_the_optimum(scale) -> None:
    rng = np.random.default_rng(5)
    for _ in range(3):
        inst = generate(make_scenario(scale), rng)
        opt = corais.solve_exact(inst, time_limit=10.0, mip_rel_gap=0.0, require_incumbent=True)
        # HiGHS's dual bound holds whether or not it proved optimality in time (a loaded machine may stop it)
        lower = opt.objective * (1 - opt.mip_gap) if not opt.optimal else opt.cost
        assert np.isfinite(lower) and lower <= opt.cost * (1 + 1e-9)
        heuristics = [
            corais.local_dispatch(inst),
            corais.predicted_dispatch(inst),
            corais.best_of_random(inst, 200, rng)[0],
        ]
        for action in heuristics:
            assert float(dispatch_cost(inst, action)) >= lower * (1 - 1e-9)


def test_corais_milp__raises_without_incumbent_when_required() -> None:
    inst = generate(make_scenario((100, 50, 800)), np.random.default_rng(0))
    result = corais.solve_exact(inst, time_limit=1e-3)
    assert not result.has_incumbent and result.action is None and np.isnan(result.cost)
    with pytest.raises(RuntimeError, match="no feasible dispatch"):
        corais.solve_exact(inst, time_limit=1e-3, require_incumbent=True)
    with pytest.raises(ValueError, match="time_limit"):
        corais.solve_exact(inst, time_limit=0)


def test_corais_policies__registered_names_and_bad_kwargs() -> None:
    names = available_policies("CoRaiS-v0")
    for name in ["exact", "exact_10s", "exact_1s", "local", "predicted", "random1", "random100", "random1k",
                 "corais_greedy", "corais_1k"]:
        assert name in names
    env = gym.make("CoRaiS-v0")
    with pytest.raises(ValueError, match="samples"):
        make_policy("CoRaiS-v0", "random1", env, samples=0)
    with pytest.raises(ValueError, match="time_limit"):
        make_policy("CoRaiS-v0", "exact", env, time_limit=-1)


def test_corais_policies__local_and_predicted_definitions() -> None:
    env = gym.make("CoRaiS-v0", scale=(20, 10, 50))
    env.reset(seed=4)
    inst = env.unwrapped.instance
    local = make_policy("CoRaiS-v0", "local", env)
    local.reset(env, seed=0)
    np.testing.assert_array_equal(local.act(None, {}), inst.req_src)
    pred = make_policy("CoRaiS-v0", "predicted", env)
    pred.reset(env, seed=0)
    action = pred.act(None, {})
    inside = inst.req_pred < 10
    np.testing.assert_array_equal(action[inside], inst.req_pred[inside])
    np.testing.assert_array_equal(action[~inside], inst.req_src[~inside])


def test_corais_policies__random_k_is_monotone_in_k_on_common_seeds() -> None:
    env = gym.make("CoRaiS-v0", scale=(10, 5, 50))
    few = run_episode(env, make_policy("CoRaiS-v0", "random1", env, samples=10), seed=3, policy_seed=9)
    many = run_episode(env, make_policy("CoRaiS-v0", "random100", env), seed=3, policy_seed=9)
    assert many.final_info["cost"] <= few.final_info["cost"]  # the first 10 draws are shared


def test_corais_evaluate__rows_columns_and_gap_definition(tmp_path) -> None:
    rows = corais.evaluate_policies(
        {"scale": [10, 5, 50]},
        ["exact", "local", "random100"],
        instances=3,
        episodes=1,
        seed=11,
        out_dir=tmp_path,
        progress=False,
        exact_time_limit=5.0,
    )
    assert [r["policy"] for r in rows] == ["exact", "local", "random100"]
    for row in rows:
        assert list(row) == ["policy", "gap_mean", "gap_ci95", "gap_nontrivial", "gap_nontrivial_ci95",
                             "trivial_share", "bound_gap_mean", "reference_optimal_share", "cost_mean",
                             "time_mean_s", "time_std_s", "solved_share"]
    by = {r["policy"]: r for r in rows}
    assert by["exact"]["gap_mean"] == pytest.approx(1.0) and by["exact"]["solved_share"] == 1.0
    assert by["local"]["gap_mean"] > 1.0 and by["random100"]["gap_mean"] > 1.0
    with open(tmp_path / "corais_per_instance.csv") as fh:
        assert len(list(csv.DictReader(fh))) == 9


def test_corais_evaluate__non_exact_reference(tmp_path) -> None:
    rows = corais.evaluate_policies(
        {"scale": [20, 10, 100]}, ["random100", "local"], instances=2, episodes=1, seed=0,
        out_dir=tmp_path, progress=False, reference="random100",
    )
    assert rows[0]["gap_mean"] == pytest.approx(1.0)
    assert rows[1]["gap_mean"] > 1.0
