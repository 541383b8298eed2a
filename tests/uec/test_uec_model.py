"""UEC model against hand computations: profit table, duration pmfs, budgets, reserved feasibility."""

from __future__ import annotations

import math

import numpy as np
import pytest

from envs.common.durations import DURATION_FAMILIES, TAIL_MASS, _untruncated_pmf, duration_pmf, support_cap, survival
from envs.common.radio import channel_model, shannon_rate_bps
from envs.uec import dynamics
from envs.uec.generator import fig3_instance, theorem2_instance
from envs.uec.types import Instance, ReservedTasks


def one_server_instance(*, sla: int = 2, tx_delay_s: float = 0.0, decay: float = 0.1, reserved=None) -> Instance:
    """1 server with capacities (2, 3) and 4 past the horizon, 1 device, 1 profile with d ∈ {1, 2}."""
    return Instance(
        capacity=np.array([[2.0, 3.0]]),
        base_capacity=np.array([4.0]),
        weight=np.array([2.0]),
        alpha0=np.array([0.5]),
        alpha_max=1.0,
        decay=np.array([decay]),
        perf_scale=np.array([1.0]),
        perf_rate=np.array([0.5]),
        sla=np.array([sla]),
        tx_delay_s=np.array([[tx_delay_s]]),
        duration_pmf=np.array([[0.25, 0.75]]),
        arrival_prob=np.array([[0.5], [0.5]]),
        reserved=reserved if reserved is not None else ReservedTasks.empty(),
    )


def test_uec__profit_table_matches_hand_computation_on_one_server_two_slots():
    inst = one_server_instance()
    gap = [1 - 0.5 * math.exp(-0.1 * 1), 1 - 0.5 * math.exp(-0.1 * 2)]  # a(t) with paper slots 1, 2
    expected_t0 = 2 * gap[0] * (0.25 * math.log(1 + 0.5 * 2) + 0.75 * math.log(1 + 0.5 * (2 + 3)))
    expected_t1 = 2 * gap[1] * (0.25 * math.log(1 + 0.5 * 3) + 0.75 * math.log(1 + 0.5 * (3 + 4)))
    np.testing.assert_allclose(inst.expected_profit[0, 0, 0], [expected_t0, expected_t1], rtol=1e-12)


def test_uec__profit_table_drops_durations_beyond_the_budget():
    # 30 s of transmission costs one 60-s slot, leaving a budget of 1 slot: only d = 1 earns profit.
    inst = one_server_instance(sla=2, tx_delay_s=30.0)
    assert inst.budget[0, 0] == 1
    gap0 = 1 - 0.5 * math.exp(-0.1)
    np.testing.assert_allclose(inst.expected_profit[0, 0, 0, 0], 2 * gap0 * 0.25 * math.log(2.0), rtol=1e-12)
    assert dynamics.realised_profit(inst, 0, 0, 0, 2) == 0.0
    np.testing.assert_allclose(dynamics.realised_profit(inst, 0, 0, 0, 1), 2 * gap0 * math.log(2.0), rtol=1e-12)


def test_uec__expected_profit_is_the_mean_of_realised_profits():
    inst = fig3_instance()
    for t in range(inst.horizon):
        for profile in range(inst.num_profiles):
            pmf = inst.duration_pmf[profile]
            mean = sum(pmf[d - 1] * dynamics.realised_profit(inst, 0, 0, t, d) for d in range(1, pmf.size + 1))
            np.testing.assert_allclose(inst.expected_profit[0, 0, profile, t], mean, rtol=1e-12, atol=1e-15)


def test_uec__theorem2_instance_has_the_papers_profits():
    eps = 0.01
    inst = theorem2_instance(eps)
    profit = inst.expected_profit[:, 0, 0, :]
    np.testing.assert_allclose(profit[0, 0], 1.0, rtol=1e-12)
    np.testing.assert_allclose(profit[1, 1], 1.0 / eps, rtol=1e-12)
    assert profit[2].max() == 0.0
    np.testing.assert_allclose(inst.arrival_prob.sum(axis=1), [1.0, 1.0])


@pytest.mark.parametrize("family", DURATION_FAMILIES)
@pytest.mark.parametrize("mean", [1.0, 3.0, 7.5, 18.0])
def test_uec__duration_pmf_is_normalised_with_the_requested_mean_and_support(family, mean):
    pmf = duration_pmf(family, mean)
    durations = np.arange(1, pmf.size + 1)
    assert pmf.size <= support_cap(mean) == math.ceil(3 * mean)
    full = _untruncated_pmf(family, mean)  # the support ends at the 99.9 % quantile of the rounded law
    assert full[: pmf.size].sum() >= 1.0 - TAIL_MASS - 1e-12 and full[: pmf.size - 1].sum() < 1.0 - TAIL_MASS
    np.testing.assert_allclose(pmf, full[: pmf.size] / full[: pmf.size].sum())
    assert np.all(pmf >= 0)
    assert pmf.sum() == pytest.approx(1.0, abs=1e-12)
    # rounding a continuous law shifts the mean by < 1 % except at μ = 1, where truncation at d ≥ 1 bites
    tolerance = 0.2 if mean == 1.0 else 0.01 * mean
    assert pmf @ durations == pytest.approx(mean, abs=tolerance)


def test_uec__uniform_pmf_support_is_half_to_three_halves_of_the_mean():
    pmf = duration_pmf("uniform", 4.0)
    np.testing.assert_allclose(pmf, [0, 0.2, 0.2, 0.2, 0.2, 0.2])  # {2, ..., 6}


def test_uec__normal_pmf_support_ends_near_mean_plus_three_sigma():
    # N(18, 4.5²): the 99.9 % quantile is 18 + 3.09·4.5 ≈ 31.9 slots, far below ⌈3μ⌉ = 54
    assert duration_pmf("normal", 18.0).size == 32


def test_uec__bimodal_pmf_has_two_modes_and_heavy_tail_has_a_long_tail():
    bimodal = duration_pmf("bimodal", 10.0)
    assert bimodal[5] > bimodal[9] < bimodal[13]  # modes near 6 and 14, a trough at 10
    heavy, normal = duration_pmf("heavy_tail", 10.0), duration_pmf("normal", 10.0)
    assert heavy[20:].sum() > 10 * normal[20:].sum()


def test_uec__survival_function_is_one_at_one_and_decreasing():
    table = np.stack([duration_pmf("normal", 3.0)])
    surv = survival(table)
    assert surv[0, 0] == pytest.approx(1.0)
    assert np.all(np.diff(surv[0]) <= 1e-15)
    np.testing.assert_allclose(-np.diff(np.append(surv[0], 0.0)), table[0], atol=1e-15)


def test_uec__physical_channel_rates_are_megabits_and_paper_reading_is_higher():
    rate = shannon_rate_bps(3e6, 0.1, np.array([0.15, 0.45]), channel_model("physical"))
    assert 1.5e6 < rate[1] < rate[0] < 16e6
    assert shannon_rate_bps(3e6, 0.1, 0.45, channel_model("paper")) > 50e6


def _reserved(start, end, demand) -> ReservedTasks:
    n = len(start)
    return ReservedTasks(np.zeros(n, np.int64), np.array(start), np.array(end), np.array(demand, dtype=float))


def _feasibility_instance(reserved: ReservedTasks) -> Instance:
    horizon = 6
    return Instance(
        capacity=np.full((1, horizon), 2.0),
        base_capacity=np.array([2.0]),
        weight=np.array([1.0]),
        alpha0=np.array([0.5]),
        alpha_max=1.0,
        decay=np.zeros(1),
        perf_scale=np.ones(1),
        perf_rate=np.ones(1),
        sla=np.array([3]),
        tx_delay_s=np.zeros((1, 1)),
        duration_pmf=np.array([[1.0]]),
        arrival_prob=np.full((horizon, 1), 0.5),
        reserved=reserved,
    )


def test_uec__reserved_windows_feasible_just_feasible_and_infeasible():
    cum = np.concatenate([[0.0], np.cumsum(np.full(12, 2.0))])
    # feasible: A needs 4 of the 6 in slots 0..2, B needs 3 of [1, 3]; [0, 3] holds 8 >= 7
    inst = _feasibility_instance(_reserved([0, 1], [2, 3], [4.0, 3.0]))
    pairs = inst.feasibility_pairs[0]
    assert sorted(zip(pairs.start, pairs.end, pairs.slack)) == [(0, 2, 2.0), (0, 3, 1.0), (1, 3, 3.0)]
    # a block of one slot at t = 0 leaves slack 0 in [0, 2] and -1 in [0, 3]: no block fits at t = 0
    assert dynamics.max_feasible_block(pairs, pairs.slack, cum, np.array([0, 4]))[0] == 0
    # just feasible: demand equal to the whole window capacity
    tight = _feasibility_instance(_reserved([0], [2], [6.0]))
    assert tight.feasibility_pairs[0].slack[0] == pytest.approx(0.0)
    # a block that ends before the window is free; one that touches it is not
    limits = dynamics.max_feasible_block(tight.feasibility_pairs[0], tight.feasibility_pairs[0].slack, cum, np.array([0, 3]))
    assert limits[0] == 0 and limits[1] == dynamics.UNBOUNDED
    # infeasible: a tiny bit more than the window holds
    with pytest.raises(ValueError, match="server 0 are not EDF-feasible"):
        _feasibility_instance(_reserved([0], [2], [6.01]))
    with pytest.raises(ValueError, match="not EDF-feasible"):
        _feasibility_instance(_reserved([0, 1], [2, 2], [4.0, 3.0]))  # 7 in [0, 2] holding 6


def test_uec__max_feasible_block_agrees_with_edf_on_crafted_windows():
    inst = _feasibility_instance(_reserved([1, 3], [2, 5], [2.0, 5.0]))
    pairs, cum = inst.feasibility_pairs[0], inst.cumulative_capacity[0]
    limits = dynamics.max_feasible_block(pairs, pairs.slack, cum, np.arange(6))
    for t in range(6):
        for length in range(0, 8):
            available = inst.capacity[0].copy()
            available[t : t + length] = 0.0
            served = dynamics.edf_service(available, inst.reserved.start, inst.reserved.end, inst.reserved.demand)
            met = bool(np.all(served >= inst.reserved.demand - 1e-9))
            assert met == (length <= limits[t]), (t, length, limits[t])


def test_uec__backlog_trajectory_follows_lindley_recursion():
    rng = np.random.default_rng(3)
    releases, available = rng.uniform(0, 3, 20) * (rng.random(20) < 0.3), rng.uniform(0, 2, 20)
    queue, expected = 1.5, [1.5]
    for r, a in zip(releases, available):
        queue = max(0.0, queue + r - a)
        expected.append(queue)
    np.testing.assert_allclose(dynamics.backlog_trajectory(1.5, releases, available), expected, atol=1e-12)
