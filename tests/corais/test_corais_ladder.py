"""CoRaiS-v1's ladder: the anytime search, the proven lower bound and the best-known row (offline.corais.ladder).

Properties: the search's incremental edge times equal the cost model's; on tiny instances the search and
the bound meet the brute-force optimum; on fuzzed small instances no registered policy costs less than the
proven lower bound; the search is deterministic under a kick budget; the policies read tuned.yaml.
"""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import envs  # noqa: F401  (registers the ids)
from envs.corais.dynamics import dispatch_cost, edge_times
from offline.corais import policies as corais_policies
from offline.corais.bounds import brute_force, instance_bounds, record_incumbent, recorded_incumbent
from offline.corais.greedy import list_greedy
from offline.corais.ladder import SPEC
from offline.corais.search import DEFAULT_SEARCH, _Dispatch, iterated_local_search, local_descent
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
    rng = np.random.default_rng(0)
    for _ in range(20):
        action = rng.integers(0, 5, size=40)
        state = _Dispatch(inst, action)
        np.testing.assert_allclose(state.times, edge_times(inst, action), rtol=1e-12)
        for i in rng.choice(40, size=5, replace=False):  # T of i's edge with i taken out
            assert state.t_wo[i] == pytest.approx(_edge_time_without(inst, action, int(i)), rel=1e-12)


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
    for name in ("ils_50ms", "ils_1s", "ils_5s", "ils"):
        policy = make_policy(ENV_ID, name, env)
        assert policy.params == expected
    if (package / "tuned.yaml").is_file():
        import yaml

        entry = yaml.safe_load((package / "tuned.yaml").read_text())[corais_policies.ILS_TUNED_ENTRY]["params"]
        assert {k: expected[k] for k in entry} == entry


def test_spec_names_resolve_and_bounds_are_ordered() -> None:
    registered = set(available_policies(ENV_ID))
    for name in (SPEC.random, *SPEC.papers, *SPEC.ours):
        assert name in registered
    assert SPEC.evaluation_kwargs["reference"] in SPEC.ours
    assert set(SPEC.proven_bounds) <= set(SPEC.bound_names)
    _, inst = _instance((20, 10, 40), 21)
    record_incumbent(inst, float(dispatch_cost(inst, list_greedy(inst))))
    bounds = instance_bounds(inst, milp_time_limit=None)
    assert bounds.lower_bound <= bounds.best_known <= recorded_incumbent(inst)
    assert np.isnan(bounds.milp_dual_bound) and bounds.proven_gap >= 0
