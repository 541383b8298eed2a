"""CoRaiS-v1's load-independent search twins, the online rung and the cost-vs-time profile (issue 35)."""

from __future__ import annotations

import csv
import itertools
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import envs  # noqa: F401
import offline.corais.search as search_module
from benchmarks import corais_profile
from offline.corais.ladder import SPEC, TIMED_SEARCHES
from offline.corais.policies import ILS_BUDGETS, ILS_TWINS, MILP_LIMITS, SearchPolicy
from offline.corais.search import iterated_local_search
from offline.protocol import run_episode
from offline.registry import available_policies, make_policy

ENV_ID = "CoRaiS-v1"


class _SlowClock:
    """A ``time`` stand-in whose clock jumps 10 s at every reading: a machine loaded beyond any budget."""

    def __init__(self) -> None:
        self._ticks = itertools.count()

    def perf_counter(self) -> float:
        return 10.0 * next(self._ticks)


def _play(name: str, seed: int, scale: tuple[int, int, int] = (10, 5, 40)) -> tuple[float, np.ndarray, object]:
    env = gym.make(ENV_ID, scale=scale)
    policy = make_policy(ENV_ID, name, env)
    result = run_episode(env, policy, seed=seed)
    action = np.asarray(policy.last_result.action).copy()
    env.close()
    return float(result.final_info["cost"]), action, policy


def test_twins_are_registered_with_a_kick_budget_and_no_clock() -> None:
    registered = set(available_policies(ENV_ID))
    env = gym.make(ENV_ID, scale=(10, 5, 20))
    for name, (kicks, sibling) in ILS_TWINS.items():
        assert name in registered and sibling in ILS_BUDGETS
        policy = make_policy(ENV_ID, name, env)
        assert isinstance(policy, SearchPolicy)
        assert policy.time_limit is None and policy.max_iterations == kicks
    assert {"ils_30s", "ils_60s"} <= registered and {"milp_30s", "milp_60s"} <= registered
    assert MILP_LIMITS["milp_60s"] == 60.0 and ILS_BUDGETS["ils_60s"] == 60.0


def test_twins_are_deterministic_regardless_of_load(monkeypatch: pytest.MonkeyPatch) -> None:
    cost, action, policy = _play("ils_it18", seed=5)
    assert policy.last_result.iterations == 18  # the kick budget is spent exactly (Q > 1)
    again, action_again, _ = _play("ils_it18", seed=5)
    assert again == cost and np.array_equal(action, action_again)
    timed_cost, _, timed = _play("ils_100ms", seed=5)
    # on a machine so loaded that every clock reading is 10 s later, the twin still does its 18 kicks and
    # returns the same dispatch; the wall-clock sibling stops after the start's first descent chunk
    monkeypatch.setattr(search_module, "time", _SlowClock())
    loaded, action_loaded, twin = _play("ils_it18", seed=5)
    assert loaded == cost and np.array_equal(action_loaded, action) and twin.last_result.iterations == 18
    _, _, starved = _play("ils_100ms", seed=5)
    assert starved.last_result.iterations == 0 < timed.last_result.iterations
    assert twin.last_result.cost <= starved.last_result.cost


def test_the_iteration_budget_is_respected() -> None:
    env = gym.make(ENV_ID, scale=(10, 5, 30))
    env.reset(seed=3)
    instance = env.unwrapped.instance
    for kicks in (0, 1, 7):
        found = iterated_local_search(instance, time_limit=None, max_iterations=kicks, seed=1)
        assert found.iterations == kicks
    trace: list[tuple[float, int, float]] = []
    traced = iterated_local_search(instance, time_limit=None, max_iterations=7, seed=1, trace=trace)
    assert traced.cost == found.cost and np.array_equal(traced.action, found.action)  # a trace changes nothing
    best = [c for _, _, c in trace]
    assert max(k for _, k, _ in trace) == 7 and all(b <= a for a, b in itertools.pairwise(best))
    assert best[-1] == pytest.approx(found.cost)


@pytest.mark.parametrize(("kwargs", "key"), [
    ({"time_limit": 0.0, "max_iterations": None}, "time_limit"),
    ({"time_limit": -1.0, "max_iterations": 5}, "time_limit"),
    ({"time_limit": True, "max_iterations": None}, "time_limit"),
    ({"time_limit": None, "max_iterations": 0}, "max_iterations"),
    ({"time_limit": None, "max_iterations": -3}, "max_iterations"),
    ({"time_limit": None, "max_iterations": 2.5}, "max_iterations"),
    ({"time_limit": None, "max_iterations": True}, "max_iterations"),
    ({"time_limit": None, "max_iterations": None}, "max_iterations=None"),
])
def test_bad_budgets_raise_naming_the_parameter(kwargs: dict, key: str) -> None:
    with pytest.raises(ValueError, match=key):
        SearchPolicy("ils_x", **kwargs)
    env = gym.make(ENV_ID, scale=(10, 5, 20))
    with pytest.raises(ValueError, match=key):
        make_policy(ENV_ID, "ils_it6", env, **kwargs)
    env.reset(seed=0)
    if kwargs["max_iterations"] != 0:  # zero kicks is a valid search (the descent alone), not a valid policy
        with pytest.raises(ValueError, match=key.split("=")[0]):
            iterated_local_search(env.unwrapped.instance, seed=0, **kwargs)


def test_the_normalisation_rests_on_rows_without_a_clock() -> None:
    """Rung 3 holds no wall-clock search (the strongest row of rungs 2-3 sets the normalisation); each timed
    search of the ladder is an online row with its twin in rung 3."""
    env = gym.make(ENV_ID, scale=(10, 5, 20))
    for name in SPEC.ours:
        policy = make_policy(ENV_ID, name, env)
        assert getattr(policy, "time_limit", None) is None or name.startswith("list_greedy")
    assert set(TIMED_SEARCHES) == set(SPEC.online)
    mirrored = {sibling for _, sibling in ILS_TWINS.values()}
    assert set(TIMED_SEARCHES) <= mirrored and set(ILS_TWINS) <= set(SPEC.ours)
    for name in (*SPEC.ours, *SPEC.online):
        assert name in SPEC.descriptions
    for name in ILS_TWINS:
        assert ILS_TWINS[name][1] in SPEC.descriptions[name]


def test_profile_options_validate_before_running(tmp_path: Path) -> None:
    for bad, key in (({"budgets": [0.1, 0.05]}, "budgets"), ({"budgets": [0.0, 1.0]}, "budgets"),
                     ({"instances": 0}, "instances"), ({"scales": ["20-10"]}, "scales")):
        with pytest.raises(ValueError, match=key):
            corais_profile.Options(out=str(tmp_path / "p"), **bad)
    assert not (tmp_path / "p").exists()
    with pytest.raises(ValueError, match="out="):
        corais_profile.Options(out="results/corais_profile")  # checked in: needs publish=true


def test_profile_writes_a_monotone_profile_above_the_lower_bound(tmp_path: Path) -> None:
    out = tmp_path / "profile"
    corais_profile.main(["scales=[10-5-30]", "instances=2", "budgets=[0.002,0.01,0.05]", "quick=false",
                         f"out={out}"])
    for name in ("profile.csv", "profile.md", "profile.png", "command.txt"):
        assert (out / name).is_file()
    rows = corais_profile.read_profile(out / "profile.csv")
    assert len(rows) == 2 * 3 and {r["instance"] for r in rows} == {"100", "101"}
    for instance in ("100", "101"):
        mine = sorted((r for r in rows if r["instance"] == instance), key=lambda r: float(r["budget_s"]))
        ils = [float(r["ils_cost"]) for r in mine if np.isfinite(float(r["ils_cost"]))]
        assert ils and all(b <= a for a, b in itertools.pairwise(ils))
        kicks = [int(r["ils_kicks"]) for r in mine]
        assert kicks == sorted(kicks)
        for r in mine:
            lower = float(r["lower_bound"])
            assert lower > 0
            for column in ("ils_cost", "milp_incumbent"):
                value = float(r[column])
                assert np.isnan(value) or value >= lower * (1 - 1e-6)
    with (out / "profile.csv").open() as f:
        assert f.readline().startswith("# python -m benchmarks.corais_profile")
        assert next(iter(csv.DictReader(f))).keys() >= {"budget_s", "lower_bound", "milp_dual_bound"}


def test_highs_log_parsing_reads_incumbents_and_bounds() -> None:
    log = """
 J       0       0         0   0.00%   -inf            4.163175929        Large        0      0      0         0     0.0s
 R       0       0         0   0.00%   1.501315108     3.876939312       61.28%        0      0      0       936     0.1s
         1       1         1   0.00%   1.531207275     1.86228066        17.78%     7374    261      0     12961     3.0s
  Timing            3.00
"""
    points = corais_profile.parse_highs_log(log)
    assert points == [(0.0, -np.inf, 4.163175929), (0.1, 1.501315108, 3.876939312), (3.0, 1.531207275, 1.86228066)]


def test_the_learned_search_has_a_deterministic_twin() -> None:
    pytest.importorskip("torch")
    import agents.corais  # noqa: F401  (registers the shipped dispatchers)
    from agents.loading import resolve_policy

    env = gym.make(ENV_ID, scale=(10, 5, 40))
    policy = resolve_policy(ENV_ID, "corais_ils_it18", env)
    assert policy.name == "corais_ils_it18" and policy.search_time is None and policy.search_iterations == 18
    costs, actions = [], []
    for _ in range(2):
        costs.append(run_episode(env, policy, seed=4).final_info["cost"])
        actions.append(np.asarray(policy.last_result.action).copy())
        assert policy.last_result.iterations == 18
    assert costs[0] == costs[1] and np.array_equal(actions[0], actions[1])
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="search_iterations"):
            resolve_policy(ENV_ID, "corais_ils_it18", env, search_iterations=bad)
