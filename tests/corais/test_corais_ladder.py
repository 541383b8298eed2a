"""CoRaiS-v1's ladder: the anytime search, the proven lower bound and the best-known row (offline.corais.ladder).

Properties: the search's incremental edge times equal the cost model's; on tiny instances the search and
the bound meet the brute-force optimum; on fuzzed small instances no registered policy costs less than the
proven lower bound; the search is deterministic under a kick budget; the policies read tuned.yaml.
"""

from __future__ import annotations

import csv
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import envs  # noqa: F401  (registers the ids)
from envs.corais.dynamics import dispatch_cost, edge_time_scalar, edge_times, edge_times_from_aggregates
from offline.corais import policies as corais_policies
from offline.corais.bounds import brute_force, instance_bounds, record_incumbent, recorded_incumbent
from offline.corais.greedy import list_greedy
from offline.corais.ladder import SPEC
from offline.corais.search import (
    DEFAULT_SEARCH,
    _aggregates,
    _best_neighbour,
    _Problem,
    iterated_local_search,
    local_descent,
)
from offline.ladder_spec import tuned_params
from offline.protocol import run_episode
from offline.registry import available_policies, make_policy

ENV_ID = "CoRaiS-v1"
RTOL = 1e-6  # HiGHS's dual bound is proven up to its feasibility tolerances


def _instance(scale: tuple[int, int, int], seed: int):
    env = gym.make(ENV_ID, scale=scale)
    env.reset(seed=seed)
    return env, env.unwrapped.instance


def test_incremental_edge_times_equal_the_cost_model() -> None:
    _, inst = _instance((10, 5, 40), 3)
    problem = _Problem(inst)
    rng = np.random.default_rng(0)
    for _ in range(20):
        action = rng.integers(0, 5, size=40)
        times, t_wo = _aggregates(*problem.arrays(), action)[:2]
        np.testing.assert_allclose(times, edge_times(inst, action), rtol=1e-12)
        for i in rng.choice(40, size=5, replace=False):  # T of i's edge with i taken out
            assert t_wo[i] == pytest.approx(_edge_time_without(inst, action, int(i)), rel=1e-12)


def test_compiled_edge_time_is_the_cost_models_float() -> None:
    rng = np.random.default_rng(5)
    workload = rng.exponential(1.0, size=(7, 5))
    for _ in range(200):
        j = int(rng.integers(7))
        agg = rng.exponential(1.0, size=4) * (rng.random(4) < 0.8)
        expected = edge_times_from_aggregates(workload, *(np.full(7, v) for v in agg))[j]
        assert edge_time_scalar(workload, j, *agg) == expected  # bit for bit, not approximately


@pytest.mark.parametrize("seed", range(4))
def test_each_descent_step_is_the_brute_force_best_move_or_swap(seed: int) -> None:
    """With every edge open to swaps, the compiled step is the lexicographic (R, sum T^2) best of all moves
    and swaps, each scored by the cost model itself."""
    _, inst = _instance((6, 4, 9), 40 + seed)
    z, q = 9, 4
    problem = _Problem(inst)
    action = np.random.default_rng(seed).integers(0, q, size=z)
    base = edge_times(inst, action)
    neighbours = []
    for i in range(z):
        for b in range(q):
            if b != action[i]:
                moved = action.copy()
                moved[i] = b
                neighbours.append(((0, i, b), moved))
        for k in range(z):
            if action[k] != action[i]:
                swapped = action.copy()
                swapped[i], swapped[k] = action[k], action[i]
                neighbours.append(((1, i, k), swapped))
    scored = [(float(edge_times(inst, a).max()), float(np.sum(edge_times(inst, a) ** 2) - np.sum(base ** 2)), key)
              for key, a in neighbours]
    r_min = min(r for r, _, _ in scored)
    tied = [(f, key) for r, f, key in scored if r <= r_min * (1 + 1e-12)]
    f_best = min(f for f, _ in tied)
    r, df, kind, i, x = _best_neighbour(*problem.arrays(), action, q, _aggregates(*problem.arrays(), action))
    assert r == pytest.approx(r_min, rel=1e-12)
    assert df == pytest.approx(f_best, rel=1e-9, abs=1e-12)
    assert any(key == (kind, i, x) or (kind == 1 and key == (1, x, i))
               for f, key in tied if f == pytest.approx(f_best, rel=1e-9, abs=1e-12))


def _edge_time_without(inst, action: np.ndarray, i: int) -> float:
    """T of request i's edge when i is removed, by moving i to another edge and reading the edge time."""
    q = inst.num_region
    moved = action.copy()
    moved[i] = (action[i] + 1) % q
    return float(edge_times(inst, moved)[action[i]])


@pytest.mark.parametrize("seed", range(6))
def test_search_and_bound_meet_brute_force_on_tiny_instances(seed: int) -> None:
    _, inst = _instance((4, 3, 6), 500 + seed)
    _, optimum = brute_force(inst)
    found = iterated_local_search(inst, time_limit=None, max_iterations=30, seed=seed)
    assert found.cost == pytest.approx(optimum, rel=1e-12)
    bounds = instance_bounds(inst, milp_time_limit=5.0)
    assert bounds.lower_bound <= optimum * (1 + RTOL)
    assert bounds.milp_optimal  # HiGHS proves tiny instances, so its dual bound closes the gap
    assert bounds.lower_bound >= optimum * (1 - 2e-4)
    assert bounds.best_known == pytest.approx(optimum, rel=1e-9)


def test_no_registered_policy_beats_the_lower_bound_on_fuzzed_instances() -> None:
    names = available_policies(ENV_ID)
    quick = {name: {"max_iterations": 5} for name in names if name.startswith("ils")}
    quick.update({name: {"time_limit": 2.0} for name in ("exact", "milp_10s")})
    rng = np.random.default_rng(2026)
    for k in range(3):
        q = int(rng.integers(2, 5))
        scale = (q + int(rng.integers(0, 4)), q, int(rng.integers(3, 14)))
        env, inst = _instance(scale, 7000 + k)
        lower = instance_bounds(inst, milp_time_limit=2.0).lower_bound
        for name in names:
            if name.startswith("exact_") and name not in ("exact_0.02s", "exact_1s"):
                continue  # the same MILP with longer limits
            policy = make_policy(ENV_ID, name, env, **quick.get(name, {}))
            result = run_episode(env, policy, seed=7000 + k, policy_seed=k)
            assert result.final_info["cost"] >= lower * (1 - RTOL), (name, scale)


def test_search_is_deterministic_under_a_kick_budget_and_never_worse_than_its_start() -> None:
    _, inst = _instance((20, 10, 60), 11)
    a = iterated_local_search(inst, time_limit=None, max_iterations=15, seed=4)
    b = iterated_local_search(inst, time_limit=None, max_iterations=15, seed=4)
    np.testing.assert_array_equal(a.action, b.action)
    assert a.cost == pytest.approx(float(dispatch_cost(inst, a.action)), rel=1e-12)
    assert a.cost <= a.start_cost == pytest.approx(float(dispatch_cost(inst, list_greedy(inst))))
    descended, _ = local_descent(inst, list_greedy(inst))
    assert float(dispatch_cost(inst, descended)) <= a.start_cost
    env = gym.make(ENV_ID, scale=(20, 10, 60))
    costs = [run_episode(env, make_policy(ENV_ID, "ils", env, max_iterations=10), seed=11, policy_seed=3)
             .final_info["cost"] for _ in range(2)]
    assert costs[0] == costs[1]


def test_policies_read_tuned_yaml() -> None:
    package = Path(corais_policies.__file__).parent
    expected = tuned_params(package, corais_policies.ILS_TUNED_ENTRY, DEFAULT_SEARCH)
    assert expected == corais_policies.ILS_PARAMS
    env = gym.make(ENV_ID, scale=(10, 5, 20))
    for name in ("ils_50ms", "ils_100ms", "ils_1s", "ils_5s", "ils"):
        policy = make_policy(ENV_ID, name, env)
        assert policy.params == expected
    if (package / "tuned.yaml").is_file():
        import yaml

        entry = yaml.safe_load((package / "tuned.yaml").read_text())[corais_policies.ILS_TUNED_ENTRY]["params"]
        assert {k: expected[k] for k in entry} == entry


def test_spec_names_resolve_and_bounds_are_ordered() -> None:
    registered = set(available_policies(ENV_ID))
    for name in (SPEC.random, *SPEC.papers, *SPEC.ours, *SPEC.online):
        assert name in registered
    assert SPEC.evaluation_kwargs["reference"] in (*SPEC.ours, *SPEC.online)
    assert set(SPEC.proven_bounds) <= set(SPEC.bound_names)
    _, inst = _instance((20, 10, 40), 21)
    record_incumbent(inst, float(dispatch_cost(inst, list_greedy(inst))))
    bounds = instance_bounds(inst, milp_time_limit=None)
    assert bounds.lower_bound <= bounds.best_known <= recorded_incumbent(inst)
    assert np.isnan(bounds.milp_dual_bound) and bounds.proven_gap >= 0


def test_guided_kicks_are_seeded_never_worse_than_the_start_and_validate_their_input() -> None:
    _, inst = _instance((20, 10, 60), 12)
    probs = np.random.default_rng(1).dirichlet(np.ones(10), size=60)
    a = iterated_local_search(inst, time_limit=None, max_iterations=10, seed=2, kick_probs=probs)
    b = iterated_local_search(inst, time_limit=None, max_iterations=10, seed=2, kick_probs=probs)
    np.testing.assert_array_equal(a.action, b.action)
    assert a.cost <= a.start_cost
    uniform = iterated_local_search(inst, time_limit=None, max_iterations=10, seed=2)
    assert a.iterations == uniform.iterations == 10
    with pytest.raises(ValueError, match="kick_probs"):
        iterated_local_search(inst, time_limit=None, max_iterations=1, kick_probs=probs[:, :5])
    with pytest.raises(ValueError, match="kick_probs"):
        iterated_local_search(inst, time_limit=None, max_iterations=1, kick_probs=-probs)


def test_kick_guidance_benchmark_writes_a_deterministic_table(tmp_path: Path) -> None:
    """benchmarks/corais_kick_guidance: a fixed kick budget makes the ablation regenerable bit for bit."""
    from benchmarks import corais_kick_guidance as bench

    outs = []
    for name in ("a.csv", "b.csv"):
        bench.main(["scales=[6-4-12]", "instances=2", "seeds=2", "kicks=3", "reference_kicks=10",
                    f"out={tmp_path / name}"])
        outs.append((tmp_path / name).read_text().splitlines()[1:])
    assert outs[0] == outs[1]
    rows = list(csv.DictReader(outs[0]))
    assert [r["variant"] for r in rows] == list(bench.VARIANTS)
    assert float(rows[0]["diff_vs_uniform"]) == 0.0
    assert all(0.5 < float(r["mean_ratio_to_reference"]) < 2.0 for r in rows)
    assert "| 6-4-12 | `oracle_kicks` |" in (tmp_path / "a.md").read_text()
    with pytest.raises(SystemExit):
        bench.main(["scales=[6-4]"])
