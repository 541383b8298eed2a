"""CoRaiS-v1 (backlogs scaled to replicas and load) and the strong simple baselines list_greedy(_ls)."""

from __future__ import annotations

import itertools

import gymnasium as gym
import numpy as np
import pytest

import envs  # noqa: F401
from envs.corais.dynamics import backlog_bound, backlog_times, dispatch_cost
from envs.corais.generator import V1_DEFAULTS, fluid_level, generate, make_scenario
from offline import corais
from offline.corais.greedy import list_greedy, list_greedy_ls, local_search
from offline.protocol import run_episode
from offline.registry import available_policies, make_policy


def _v1(scale, **overrides):
    return make_scenario(scale, **{**V1_DEFAULTS, **overrides})


def _brute_force(inst) -> float:
    q, z = inst.num_region, inst.num_requests
    every = np.array(list(itertools.product(range(q), repeat=z)), dtype=np.int64)
    return float(dispatch_cost(inst, every).min())


def test_corais_v1__registered_beside_an_unchanged_v0() -> None:
    v0, v1 = gym.make("CoRaiS-v0"), gym.make("CoRaiS-v1")
    assert v0.unwrapped.scenario.backlog == "uniform" and v1.unwrapped.scenario.backlog == "load"
    v0.reset(seed=3)
    v1.reset(seed=3)
    assert v0.unwrapped.instance.backlog.edge.size != v1.unwrapped.instance.backlog.edge.size or not np.allclose(
        v0.unwrapped.instance.workload, v1.unwrapped.instance.workload)
    # v0's instances are those published numbers were computed on (pinned value, generator seed 3)
    inst = generate(make_scenario((20, 10, 100)), np.random.default_rng(3))
    assert inst.workload.sum() == pytest.approx(33.69786277341053, rel=1e-12)
    assert inst.backlog.d.sum() == pytest.approx(55.6699725426706, rel=1e-12)
    for env_id in ("CoRaiS-v0", "CoRaiS-v1"):
        assert {"list_greedy", "list_greedy_ls", "exact", "local", "random1k"} <= set(available_policies(env_id))


@pytest.mark.parametrize("scale", [(10, 5, 50), (20, 10, 200), (60, 30, 400)])
def test_corais_v1__backlog_time_stays_below_its_share_of_the_fluid_level(scale) -> None:
    rng = np.random.default_rng(0)
    for _ in range(5):
        scenario = _v1(scale)
        inst = generate(scenario, rng)
        level = fluid_level(scenario, inst.replicas, inst.coef_a, inst.coef_b)
        assert np.all(backlog_times(inst.workload) <= scenario.backlog_load * level + 1e-12)


def test_corais_v1__queues_grow_with_replicas_and_load() -> None:
    counts, speed, totals = [], [], {}
    for z in (50, 200):
        rng = np.random.default_rng(1)
        total = 0
        for _ in range(60):
            inst = generate(_v1((20, 10, z)), rng)
            per_edge = np.bincount(inst.backlog.edge, minlength=10)
            total += per_edge.sum()
            if z == 200:
                counts += list(per_edge)
                speed += list(inst.replicas / (0.5 * inst.coef_a + inst.coef_b))
        totals[z] = total
    assert totals[200] > 3 * totals[50]  # four times the load: longer queues
    counts_arr, speed_arr = np.array(counts), np.array(speed)
    cuts = np.quantile(speed_arr, [1 / 3, 2 / 3])
    terciles = [counts_arr[speed_arr < cuts[0]].mean(), counts_arr[(speed_arr >= cuts[0]) & (speed_arr < cuts[1])].mean(),
                counts_arr[speed_arr >= cuts[1]].mean()]
    assert terciles[0] < terciles[1] < terciles[2]  # faster / more replicated edges hold longer queues


@pytest.mark.parametrize("scale", [(10, 5, 50), pytest.param((20, 10, 50), marks=pytest.mark.slow),
                                   pytest.param((20, 10, 200), marks=pytest.mark.slow)])  # the default run keeps the smallest
def test_corais_v1__optimum_exceeds_the_backlog_only_bound(scale) -> None:
    """The MILP's proven lower bound (or, failing that, the best dispatch found) is above the backlog-only
    bound on every instance of a small sample (v0: 43-100 % trivial at these scales)."""
    rng = np.random.default_rng(2)
    for _ in range(6):
        inst = generate(_v1(scale), rng)
        lb0 = backlog_bound(inst)
        res = corais.solve_exact(inst, time_limit=0.5)  # its bound is 1.6-1.85x lb0 after 0.5 s at (10, 5, 50)
        assert res.bound > lb0 * (1 + 1e-9) or min(res.cost, dispatch_cost(inst, list_greedy_ls(inst))) > lb0


@pytest.mark.parametrize(("field", "value"), [("backlog", "queue"), ("backlog", None), ("backlog_load", -1.0),
                                              ("backlog_load", "x")])
def test_corais_v1__bad_backlog_settings_name_the_parameter(field, value) -> None:
    with pytest.raises(ValueError, match=field):
        gym.make("CoRaiS-v1", scale="tiny", scenario_overrides={field: value})


@pytest.mark.parametrize("version", [{}, V1_DEFAULTS])
@pytest.mark.parametrize("scale", [(10, 5, 50), (10, 5, 100), (20, 10, 200)])
def test_corais_greedy__local_search_never_worse_than_list_greedy(version, scale) -> None:
    rng = np.random.default_rng(3)
    for _ in range(6):
        inst = generate(make_scenario(scale, **version), rng)
        greedy = float(dispatch_cost(inst, list_greedy(inst)))
        improved = float(dispatch_cost(inst, list_greedy_ls(inst)))
        assert improved <= greedy * (1 + 1e-12)
        assert improved >= backlog_bound(inst) * (1 - 1e-12)


def test_corais_greedy__local_search_improves_a_poor_start() -> None:
    inst = generate(_v1((10, 5, 60)), np.random.default_rng(4))
    start = corais.local_dispatch(inst)
    out = local_search(inst, start)
    assert dispatch_cost(inst, out) < 0.8 * dispatch_cost(inst, start)


@pytest.mark.parametrize("version", [{}, V1_DEFAULTS])
def test_corais_greedy__equals_brute_force_where_the_bound_proves_optimality(version) -> None:
    """On tiny instances: a list_greedy(_ls) cost equal to the backlog-only bound is the brute-force optimum;
    otherwise both stay above it."""
    proven = 0
    for seed in range(30):
        inst = generate(make_scenario((5, 3, 6), **version), np.random.default_rng(seed))
        best = _brute_force(inst)
        lb0 = backlog_bound(inst)
        for action in (list_greedy(inst), list_greedy_ls(inst)):
            cost = float(dispatch_cost(inst, action))
            assert cost >= best * (1 - 1e-12)
            if cost <= lb0 * (1 + 1e-12):
                assert cost == pytest.approx(best, rel=1e-12)
                proven += 1
    if not version:
        assert proven > 0  # v0's tiny instances are often trivial: the case is exercised


@pytest.mark.parametrize("env_id", ["CoRaiS-v0", "CoRaiS-v1"])
def test_corais_greedy__policies_act_through_the_env_and_costs_match_the_model(env_id) -> None:
    env = gym.make(env_id, scale=(10, 5, 40))
    for name in ("list_greedy", "list_greedy_ls"):
        policy = make_policy(env_id, name, env)
        res = run_episode(env, policy, seed=5)
        inst = env.unwrapped.instance
        expected = list_greedy(inst) if name == "list_greedy" else list_greedy_ls(inst)
        assert res.final_info["cost"] == pytest.approx(float(dispatch_cost(inst, expected)), rel=1e-12)


def test_corais_evaluation__honest_gap_columns(tmp_path) -> None:
    rows = corais.evaluate_policies({"scale": (10, 5, 30)}, ["local", "list_greedy", "list_greedy_ls"],
                                    instances=3, episodes=1, seed=0, out_dir=tmp_path, progress=False,
                                    exact_time_limit=2.0, env_id="CoRaiS-v1")
    by = {r["policy"]: r for r in rows}
    for row in rows:
        assert {"gap_mean", "gap_nontrivial", "trivial_share", "bound_gap_mean", "reference_optimal_share"} <= set(row)
        assert row["bound_gap_mean"] >= row["gap_mean"] - 1e-9  # a gap against a proven bound is never smaller
        assert 0.0 <= row["trivial_share"] <= 1.0
    assert by["list_greedy_ls"]["gap_mean"] <= by["list_greedy"]["gap_mean"] + 1e-12
    assert by["local"]["gap_mean"] > by["list_greedy_ls"]["gap_mean"]


def test_corais_evaluation__trivial_instances_are_flagged_on_v0(tmp_path) -> None:
    rows = corais.evaluate_policies({"scale": (20, 10, 50)}, ["list_greedy", "local"], instances=3, episodes=1,
                                    seed=0, out_dir=tmp_path, progress=False, exact_time_limit=2.0)
    by = {r["policy"]: r for r in rows}
    assert by["list_greedy"]["trivial_share"] == 1.0  # v0 at (20, 10, 50): the backlog decides everything
    assert np.isnan(by["list_greedy"]["gap_nontrivial"])
    assert by["list_greedy"]["reference_optimal_share"] == 1.0


@pytest.mark.parametrize("version", [{}, V1_DEFAULTS])
def test_corais_bounds__fluid_bound_is_a_lower_bound_at_least_the_backlog_bound(version) -> None:
    for seed in range(15):
        inst = generate(make_scenario((5, 3, 6), **version), np.random.default_rng(seed))
        bound = corais.fluid_bound(inst)
        assert backlog_bound(inst) <= bound <= _brute_force(inst) * (1 + 1e-12)
    rng = np.random.default_rng(6)
    for _ in range(3):
        inst = generate(make_scenario((60, 30, 400), **version), rng)
        assert corais.fluid_bound(inst) <= float(dispatch_cost(inst, list_greedy_ls(inst))) * (1 + 1e-12)


def test_corais_bounds__fluid_bound_proves_v1_instances_non_trivial_at_large_scale() -> None:
    rng = np.random.default_rng(7)
    for _ in range(3):
        inst = generate(_v1((200, 100, 2000)), rng)
        assert corais.fluid_bound(inst) > backlog_bound(inst) * (1 + 1e-9)
