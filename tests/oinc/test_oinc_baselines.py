"""OINC-v0 baselines: the convex split against scipy, the level mapping, Liu's local optimality,
the registered policies, evaluate_policies and the trace CSV loader."""

from __future__ import annotations

import csv
import math
import pathlib

import numpy as np
import pytest
from scipy.optimize import minimize

from envs.oinc import dynamics as dyn
from envs.oinc.env import OINCEnv
from envs.oinc.workload import load_trace_csv
from offline.oinc import (
    METRICS,
    PAPER_TABLE2,
    TABLE2,
    GreedyPolicy,
    LiuPolicy,
    convex_split,
    evaluate_policies,
    markdown_table,
    resolve_pair,
)
from offline.protocol import run_episode
from offline.registry import available_policies, make_policy


@pytest.mark.parametrize("case", range(8))
def test_oinc_greedy__convex_split_matches_scipy(case: int) -> None:
    rng = np.random.default_rng(case)
    n = int(rng.integers(2, 6))
    cycles = rng.uniform(100e6, 200e6, n)
    data = rng.uniform(0.8e6, 1.6e6, n)
    rate = rng.uniform(2e7, 8e7, n)
    cpu_hz = 7e9 * rng.uniform(0.1, 1.0)
    edge = np.zeros(n, dtype=np.int64)
    z, v = convex_split(data, cycles, rate, edge, 1)

    def total(x: np.ndarray) -> float:
        return float(np.sum(cycles / (x[:n] * cpu_hz)) + np.sum(data / (x[n:] * rate)))

    cons = [
        {"type": "eq", "fun": lambda x: np.sum(x[:n]) - 1.0},
        {"type": "eq", "fun": lambda x: np.sum(x[n:]) - 1.0},
    ]
    res = minimize(total, np.full(2 * n, 1.0 / n), method="SLSQP", bounds=[(1e-4, 1.0)] * (2 * n), constraints=cons,
                   options={"ftol": 1e-14, "maxiter": 500})
    assert res.success
    assert total(np.r_[z, v]) <= res.fun * (1 + 1e-6)
    assert np.allclose(np.r_[z, v], res.x, atol=2e-3)


def test_oinc_greedy__level_mapping_recovers_power_of_two_ratios() -> None:
    edge = np.array([0, 0, 0, 0, 1, 1])
    shares = np.array([8, 4, 2, 1, 3, 3], dtype=float)
    shares /= np.bincount(edge, weights=shares)[edge]
    levels = dyn.levels_for_shares(shares, edge, 2)
    assert levels.tolist() == [3, 2, 1, 0, 3, 3]
    z_frac, _ = dyn.shares_from_levels(edge, levels, levels, 2)
    assert np.allclose(z_frac, shares)
    # ratios beyond 8 saturate at the lowest level
    assert dyn.levels_for_shares(np.array([0.99, 0.01]), np.array([0, 0]), 1).tolist() == [3, 0]


def test_oinc_greedy__level_mapping_is_near_the_best_discrete_levels() -> None:
    import itertools

    rng = np.random.default_rng(0)
    worst = 0.0
    for _ in range(150):
        n = int(rng.integers(2, 6))
        cost = rng.uniform(0.5, 2.0, n) ** rng.choice([1, 4])
        group = np.zeros(n, dtype=np.int64)
        shares = np.sqrt(cost) / np.sqrt(cost).sum()

        def objective(levels: np.ndarray, cost: np.ndarray = cost) -> float:
            w = dyn.LEVEL_WEIGHTS[np.asarray(levels)]
            return float(np.sum(cost / (w / w.sum())))

        best = min(objective(np.array(lv)) for lv in itertools.product(range(4), repeat=n))
        tuned = objective(dyn.levels_for_shares(shares, group, 1, cost))
        plain = objective(dyn.levels_for_shares(shares, group, 1))
        assert tuned <= plain + 1e-12
        worst = max(worst, tuned / best - 1)
    assert worst < 0.014
    # several edges at once give the same levels as one edge at a time
    group = np.array([0, 1, 0, 1, 1])
    cost = np.array([1.0, 3.0, 5.0, 0.2, 9.0])
    shares = np.sqrt(cost) / np.bincount(group, weights=np.sqrt(cost))[group]
    joint = dyn.levels_for_shares(shares, group, 2, cost)
    for g in (0, 1):
        sel = group == g
        alone = dyn.levels_for_shares(shares[sel], np.zeros(sel.sum(), dtype=np.int64), 1, cost[sel])
        assert joint[sel].tolist() == alone.tolist()


def _liu_objective(env: OINCEnv, edge: np.ndarray) -> float:
    inst = env.instance
    d, c = env.current_tasks
    cap = env.inference_share * inst.cpu_hz
    b = np.sqrt(d / inst.full_rate_bps[np.arange(inst.num_devices), edge])
    sum_a = np.bincount(edge, weights=np.sqrt(c), minlength=inst.num_edges)
    sum_b = np.bincount(edge, weights=b, minlength=inst.num_edges)
    return float(np.sum(sum_a**2 / cap) + np.sum(sum_b**2))


def test_oinc_liu__assignment_is_a_local_optimum_of_its_objective() -> None:
    env = OINCEnv(scenario_overrides={"num_devices": 12, "num_edges": 4})
    env.reset(seed=2)
    policy = LiuPolicy(passes=50)
    policy.reset(env, seed=0)
    edge, z, v = policy.plan()
    base = _liu_objective(env, edge)
    for i in range(env.instance.num_devices):
        for j in range(env.instance.num_edges):
            moved = edge.copy()
            moved[i] = j
            assert _liu_objective(env, moved) >= base - 1e-9
    # the split's total latency equals the objective (KKT value)
    inst = env.instance
    d, c = env.current_tasks
    cap = env.inference_share[edge] * inst.cpu_hz[edge]
    rate = inst.full_rate_bps[np.arange(inst.num_devices), edge]
    assert np.sum(c / (z * cap) + d / (v * rate)) == pytest.approx(base)


def test_oinc_greedy__places_tasks_in_slo_order_on_least_latency_edges() -> None:
    env = OINCEnv(scenario_overrides={"num_devices": 6, "num_edges": 3})
    env.reset(seed=4)
    policy = GreedyPolicy()
    policy.reset(env, seed=0)
    edge, z, _v = policy.plan()
    inst = env.instance
    d, c = env.current_tasks
    cap = env.inference_share * inst.cpu_hz
    tightest = int(np.argmin(inst.slo_s))
    alone = d[tightest] / inst.full_rate_bps[tightest] + c[tightest] / cap
    assert edge[tightest] == int(np.argmin(alone))
    assert np.allclose(np.bincount(edge, weights=z, minlength=3)[np.unique(edge)], 1.0)


@pytest.mark.parametrize("name", ["greedy", "liu", "nearest", "random"])
def test_oinc_policies__registered_and_produce_valid_actions(name: str) -> None:
    assert name in available_policies("OINC-v0")
    env = OINCEnv(scenario="tiny")
    policy = make_policy("OINC-v0", name, env)
    result = run_episode(env, policy, seed=0)
    assert result.decisions == env.scenario.horizon
    assert math.isfinite(result.final_info["weighted_sum"])


def test_oinc_evaluate__table2_rows_columns_and_honest_labels(tmp_path: pathlib.Path) -> None:
    names = list(TABLE2)
    rows = evaluate_policies({"scenario": "tiny"}, names, instances=2, episodes=1, seed=0, out_dir=tmp_path,
                             progress=False)
    assert [r["policy"] for r in rows] == names
    for row in rows:
        assert next(iter(row)) == "policy"
        for m in METRICS:
            assert m in row and f"{m}_ci95" in row
    by_name = {r["policy"]: r for r in rows}
    assert math.isnan(by_name["oinc"]["inference_latency_s"]) and "missing" in by_name["oinc"]["note"]
    assert by_name["ainf_dedas"]["inference"] == "liu" and "stand-in" in by_name["ainf_dedas"]["note"]
    assert by_name["kalmia"]["retraining"] == "kalmia"
    assert set(PAPER_TABLE2) == set(TABLE2)
    again = evaluate_policies({"scenario": "tiny"}, ["greedy_aret"], instances=2, episodes=1, seed=0,
                              out_dir=tmp_path, progress=False)
    assert again[0]["weighted_sum"] == by_name["greedy_aret"]["weighted_sum"]
    assert (tmp_path / "oinc_episodes.csv").is_file()


def test_oinc_evaluate__pairs_and_bad_names() -> None:
    assert resolve_pair("greedy+kalmia", None)[:3] == ("greedy+kalmia", "kalmia", "greedy")
    assert resolve_pair("liu", None, "zhang")[:3] == ("liu", "zhang", "liu")
    assert resolve_pair("oinc=/tmp", None)[1:3] == ("aret", "/tmp")
    with pytest.raises(ValueError, match="model"):
        resolve_pair("oinc=/nonexistent/run", None)
    with pytest.raises(ValueError, match="retraining"):
        resolve_pair("greedy+fifo", None)
    with pytest.raises(ValueError, match="policy"):
        resolve_pair("best", None)
    with pytest.raises(ValueError, match="inference"):
        resolve_pair("magic+aret", None)


def _write_trace(path: pathlib.Path, columns: tuple[str, str], devices: int, samples: int) -> None:
    rng = np.random.default_rng(0)
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["device", "time", *columns])
        for k in range(devices):
            for s in range(samples):
                writer.writerow([f"job{k}", s * 0.5, rng.uniform(0.5, 2.0), rng.uniform(50, 250)])


def test_oinc_trace__absolute_csv_is_stretched_and_clipped(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "trace.csv"
    _write_trace(path, ("data_mb", "megacycles"), devices=4, samples=5)
    labels, first, _second, kind = load_trace_csv(path, horizon=9)
    assert kind == "absolute" and labels == ["job0", "job1", "job2", "job3"] and first.shape == (9, 4)
    env = OINCEnv(scenario="tiny", scenario_overrides={"workload": "trace", "trace_path": str(path), "horizon": 9})
    env.reset(seed=0)
    bits = env.scenario.bits_per_data_unit
    d, c = env._draws.data_bits, env._draws.cycles
    assert d.shape == (9, 3)
    assert np.all((d >= 0.8 * bits - 1e-6) & (d <= 1.6 * bits + 1e-6))
    assert np.all((c >= 100e6 - 1e-3) & (c <= 200e6 + 1e-3))
    env.reset(seed=1)
    assert np.array_equal(env._draws.data_bits, d)  # the trace is part of the instance


def test_oinc_trace__raw_usage_csv_is_minmax_mapped(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "raw.csv"
    _write_trace(path, ("mem", "cpu"), devices=3, samples=4)
    env = OINCEnv(scenario="tiny", scenario_overrides={"workload": "trace", "trace_path": str(path)})
    env.reset(seed=0)
    c = env._draws.cycles
    assert c.min() == pytest.approx(100e6) and c.max() == pytest.approx(200e6)


def test_oinc_trace__bad_files_raise(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "few.csv"
    _write_trace(path, ("data_mb", "megacycles"), devices=2, samples=3)
    with pytest.raises(ValueError, match="num_devices"):
        OINCEnv(scenario="tiny", scenario_overrides={"workload": "trace", "trace_path": str(path)})
    bad = tmp_path / "bad.csv"
    bad.write_text("device,time,foo\nx,0,1\n")
    with pytest.raises(ValueError, match="trace_path"):
        load_trace_csv(bad, 5)
    with pytest.raises(ValueError, match="trace_path"):
        load_trace_csv(tmp_path / "absent.csv", 5)


def test_oinc_evaluate__command_line_writes_summary_csv(tmp_path: pathlib.Path, capsys) -> None:
    """``python evaluate.py env=oinc-v0`` replaces ``python -m offline.oinc`` (Table II as a markdown table)."""
    from hydra import compose, initialize_config_dir

    from edge_sched_gym import evaluate

    conf = str(pathlib.Path(__file__).resolve().parents[2] / "edge_sched_gym" / "conf")
    with initialize_config_dir(config_dir=conf, version_base="1.3"):
        cfg = compose("evaluate", overrides=["env=oinc-v0", "env.kwargs.scenario=tiny", "instances=1", "episodes=1",
                                             "policies=[ekya,liu_aret]", "progress=false", f"out={tmp_path}"])
    evaluate.run(cfg)
    with (tmp_path / "summary.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert [r["policy"] for r in rows] == ["ekya", "liu_aret"]
    for m in METRICS:
        assert m in rows[0] and f"{m}_ci95" in rows[0]
    assert "| ekya |" in capsys.readouterr().out
    table = markdown_table([{k: (v if k in ("policy", "inference", "retraining") else float(v)) for k, v in r.items()
                             if k != "note"} for r in rows])
    assert "| ekya | nearest | ekya |" in table and "0.277 / 101.7" in table
