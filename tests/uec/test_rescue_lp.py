"""RESCUE's offline stage: P1-LP against a hand-derived optimum, formulations, constraints, value functions,
caching and errors."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envs.uec.generator import PRESETS, fig3_instance, generate_instance, theorem2_instance
from envs.uec.types import Instance, ReservedTasks
from offline.uec import lp as lp_module
from offline.uec.lp import RescueLPError, build_lp, solve_lp
from offline.uec.values import compute_rescue_solution, rescue_solution, value_functions


def hand_instance() -> Instance:
    """One server (capacity 2), T = 3, one device arriving w.p. ½ per slot, one profile of duration exactly 2,
    one reserved task needing 2 tera-MAC in slots 1..2 (0-based)."""
    return Instance(
        capacity=np.full((1, 3), 2.0),
        base_capacity=np.array([2.0]),
        weight=np.array([1.0]),
        alpha0=np.array([0.5]),
        alpha_max=1.0,
        decay=np.array([0.1]),
        perf_scale=np.array([1.0]),
        perf_rate=np.array([1.0]),
        sla=np.array([2]),
        tx_delay_s=np.zeros((1, 1)),
        duration_pmf=np.array([[0.0, 1.0]]),
        arrival_prob=np.full((3, 1), 0.5),
        reserved=ReservedTasks(server=np.array([0]), start=np.array([1]), end=np.array([2]), demand=np.array([2.0])),
        name="hand",
    )


def hand_profits() -> list[float]:
    """R(t) = w·a(t)·F[U] with a(t) = 1 - 0.5·e^{-0.1·(t+1)} (paper slot t+1) and U = 2 slots · 2 = 4."""
    return [(1 - 0.5 * math.exp(-0.1 * (t + 1))) * math.log(1 + 4.0) for t in range(3)]


def small_instance(seed: int, **overrides) -> Instance:
    scenario = PRESETS["tiny"].replace(**overrides) if overrides else PRESETS["tiny"]
    return generate_instance(scenario, np.random.default_rng(seed))


def check_lp_constraints(inst: Instance, y: np.ndarray, x: np.ndarray, tol: float = 1e-7) -> None:
    """Eqs. (3a)-(3c), (2d)-(2f) checked with plain loops, independently of the sparse matrices."""
    J, K, L, T = y.shape
    surv = inst.duration_survival
    assert y.min() >= -tol and x.min(initial=0.0) >= -tol and x.max(initial=0.0) <= 1 + tol
    for t in range(T):
        for j in range(J):
            assert y[j, :, :, t].sum() <= inst.arrival_prob[t, j] + tol
    res = inst.reserved
    for k in range(K):
        for t in range(T):
            occupancy = 0.0
            for tp in range(t + 1):
                s = t - tp + 1
                if s <= surv.shape[1]:
                    occupancy += float((y[:, k, :, tp].sum(axis=0) * surv[:, s - 1]).sum())
            occupancy += float(x[res.server == k, t].sum())
            assert occupancy <= 1 + tol
    for i in range(len(res)):
        inside = np.zeros(T, dtype=bool)
        inside[res.start[i] : res.end[i] + 1] = True
        assert np.all(x[i, ~inside] == 0)
        assert float(inst.capacity[res.server[i]] @ x[i]) >= res.demand[i] - 1e-6


def naive_value_functions(inst: Instance, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eqs. (4)-(6) transcribed with the paper's 1-based slots and loops."""
    R = inst.expected_profit
    J, K, L, T = R.shape
    pmf = inst.duration_pmf
    B = np.zeros((K, T + 2))  # B[k, t] for paper t = 1..T+1
    A = np.zeros((J, K, L, T + 1))
    for t in range(T, 0, -1):
        for k in range(K):
            for j in range(J):
                for l in range(L):
                    A[j, k, l, t] = R[j, k, l, t - 1] + sum(
                        pmf[l, d - 1] * B[k, t + d] for d in range(1, T - t + 1) if d <= pmf.shape[1]
                    )
            total = sum(y[j, k, l, t - 1] for j in range(J) for l in range(L))
            B[k, t] = sum(
                y[j, k, l, t - 1] * max(A[j, k, l, t], B[k, t + 1]) for j in range(J) for l in range(L)
            ) + (1 - total) * B[k, t + 1]
    return A[..., 1:], B[:, 1:]


def test_uec_v0__lp_matches_hand_derived_optimum():
    inst = hand_instance()
    R0, R1, R2 = hand_profits()
    np.testing.assert_allclose(inst.expected_profit[0, 0, 0], [R0, R1, R2], rtol=1e-12)
    sol = compute_rescue_solution(inst)
    # y0 + y1 + x1 ≤ 1, y1 + y2 + x2 ≤ 1, 2·x1 + 2·x2 ≥ 2, y ≤ ½  ⇒  y = (½, 0, ½), x = (·, ½, ½)
    assert sol.lp_bound == pytest.approx(0.5 * (R0 + R2), rel=1e-8)
    np.testing.assert_allclose(sol.y[0, 0, 0], [0.5, 0.0, 0.5], atol=1e-8)
    np.testing.assert_allclose(sol.x[0], [0.0, 0.5, 0.5], atol=1e-8)
    # by hand: B(3) = ½R2 = B(2), A(1) = R0 + ½R2, B(1) = ½R0 + ½R2 (paper slots)
    np.testing.assert_allclose(sol.baseline[0], [0.5 * (R0 + R2), 0.5 * R2, 0.5 * R2, 0.0], rtol=1e-8)
    np.testing.assert_allclose(sol.activation[0, 0, 0], [R0 + 0.5 * R2, R1, R2], rtol=1e-8)
    assert sol.value_bound == pytest.approx(sol.lp_bound, rel=1e-8)


def test_uec_v0__theorem2_lp_and_values_by_hand():
    eps = 0.05
    sol = compute_rescue_solution(theorem2_instance(eps))
    assert sol.lp_bound == pytest.approx(2 - eps, rel=1e-7)  # y(1) = 1 - ε on r1, y(2) = ε on r2
    np.testing.assert_allclose(sol.y[:, 0, 0, 0], [1 - eps, 0, 0], atol=1e-8)
    np.testing.assert_allclose(sol.y[:, 0, 0, 1], [0, eps, 0], atol=1e-8)
    assert sol.value_bound == pytest.approx(1.0, rel=1e-7)  # B(2) = ε·(1/ε); A(1) = 1; B(1) = 1


def test_uec_v0__fig3_lp_satisfies_every_constraint():
    inst = fig3_instance()
    sol = compute_rescue_solution(inst)
    check_lp_constraints(inst, sol.y, sol.x)
    assert sol.lp_bound > 0
    assert sol.value_bound >= 0.5 * sol.lp_bound - 1e-9


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), reserved=st.integers(0, 4), family=st.sampled_from(["normal", "bimodal", "uniform"]))
def test_uec_v0__formulations_and_pruning_agree(seed, reserved, family):
    inst = small_instance(seed, num_reserved=reserved, duration_family=family)
    values = [
        solve_lp(inst, formulation=f, prune_dominated=p).value for f in ("aggregated", "direct") for p in (True, False)
    ]
    np.testing.assert_allclose(values, values[0], rtol=1e-7, atol=1e-9)
    sol = solve_lp(inst)
    check_lp_constraints(inst, sol.y, sol.x)
    assert np.all(sol.y[inst.expected_profit <= 0] == 0)
    assert float((sol.y * inst.expected_profit).sum()) == pytest.approx(sol.value, rel=1e-7, abs=1e-9)


def test_uec_v0__aggregation_cuts_nonzeros():
    inst = generate_instance("paper", np.random.default_rng(0))
    agg, direct = build_lp(inst, "aggregated"), build_lp(inst, "direct")
    assert agg.nnz * 3 < direct.nnz  # ~J-fold fewer in the convolution rows


def test_uec_v0__value_functions_match_naive_recursion():
    inst = small_instance(3, num_reserved=2)
    y = solve_lp(inst).y
    activation, baseline = value_functions(inst, y)
    naive_a, naive_b = naive_value_functions(inst, y)
    np.testing.assert_allclose(activation, naive_a, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(baseline, naive_b[:, : inst.horizon + 1], rtol=1e-10, atol=1e-12)
    assert baseline[:, -1].tolist() == [0.0] * inst.num_servers
    assert np.all(np.diff(baseline, axis=1) <= 1e-12)  # B_k is non-increasing in t


def test_uec_v0__solution_is_cached_per_instance_and_read_only():
    inst = small_instance(5)
    first = rescue_solution(inst)
    assert rescue_solution(inst) is first
    assert rescue_solution(small_instance(5)) is not first  # a different (equal-valued) instance object
    for array in (first.y, first.x, first.activation, first.baseline):
        assert not array.flags.writeable
    assert first.baseline.shape == (inst.num_servers, inst.horizon + 1)
    assert first.x.shape == (len(inst.reserved), inst.horizon)
    assert first.value_bound == pytest.approx(first.baseline[:, 0].sum())


def test_uec_v0__infeasible_lp_raises_with_instance_description():
    inst = small_instance(1, num_reserved=2)
    inst.reserved.demand[:] *= 50.0  # after validation: now no schedule can meet them
    with pytest.raises(RescueLPError, match=r"infeasible.*UEC instance tiny: K=2 servers"):
        rescue_solution(inst)


def test_uec_v0__failed_solve_raises_with_instance_description(monkeypatch):
    inst = small_instance(2)
    monkeypatch.setattr(
        lp_module, "linprog", lambda *a, **k: SimpleNamespace(status=4, x=None, message="numerical difficulties")
    )
    with pytest.raises(RescueLPError, match=r"not solved to optimality.*numerical difficulties.*UEC instance tiny"):
        solve_lp(inst)

    def boom(*args, **kwargs):
        raise MemoryError("out of memory")

    monkeypatch.setattr(lp_module, "linprog", boom)
    with pytest.raises(RescueLPError, match=r"MemoryError.*UEC instance tiny"):
        solve_lp(inst)


def test_uec_v0__bad_solver_arguments_raise():
    inst = small_instance(0)
    with pytest.raises(ValueError, match="formulation"):
        build_lp(inst, "dense")
    with pytest.raises(ValueError, match="method"):
        solve_lp(inst, method="gurobi")
    with pytest.raises(ValueError, match="instance"):
        rescue_solution("not an instance")
