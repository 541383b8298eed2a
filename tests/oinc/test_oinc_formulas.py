"""OINC-v0's single formulas: eq. (9) against a loop written from the paper's definition, the controllers
calling ``dynamics`` (not copies), and Alg. 2's ratio search against exhaustive search over R."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envs.oinc import dynamics as dyn
from envs.oinc.retraining import MAX_RETRAIN_SHARE, RATIO_SET, OINCRetraining
from envs.oinc.types import Instance, Jobs

positive = st.floats(0.01, 100.0)


def _eq9_by_loops(
    l_new: float, h_new: list[float], edges: list[int], l_q: list[float], h_q: list[float]
) -> list[float]:
    """C_kj of eq. (9) written out job by job: l_k h_kj, plus l_k h_k'j for each queued job k' on j denser
    than k (l/h larger), plus l_k' h_k'j for each other queued job on j."""
    costs = []
    for j, h in enumerate(h_new):
        if math.isinf(h):
            costs.append(math.inf)
            continue
        c = l_new * h
        for e, lq, hq in zip(edges, l_q, h_q):
            if e == j:
                c += l_new * hq if lq / hq > l_new / h else lq * hq
        costs.append(c)
    return costs


@given(
    num_edges=st.integers(1, 4),
    l_new=positive,
    h_new=st.lists(st.one_of(positive, st.just(math.inf)), min_size=4, max_size=4),
    queue=st.lists(st.tuples(st.integers(0, 3), positive, positive), max_size=6),
)
def test_oinc_dynamics__eq9_equals_its_definition(
    num_edges: int, l_new: float, h_new: list[float], queue: list[tuple[int, float, float]]
) -> None:
    h = h_new[:num_edges]
    queue = [(e % num_edges, lq, hq) for e, lq, hq in queue]
    edges = [q[0] for q in queue]
    l_q = [q[1] for q in queue]
    h_q = [q[2] for q in queue]
    got = dyn.dispatch_costs(l_new, np.array(h), np.array(edges, dtype=np.int64), np.array(l_q), np.array(h_q))
    assert got.tolist() == pytest.approx(_eq9_by_loops(l_new, h, edges, l_q, h_q), rel=1e-12)


def _instance(cpu_hz: np.ndarray, slo_s: np.ndarray, rate_bps: np.ndarray) -> Instance:
    n_i, n_j = rate_bps.shape
    return Instance(
        cpu_hz=cpu_hz,
        bandwidth_hz=np.full(n_j, 2.5e6),
        tx_power_w=np.full(n_i, 0.09),
        distance_km=np.full((n_i, n_j), 0.3),
        slo_s=slo_s,
        full_rate_bps=rate_bps,
    )


@settings(max_examples=40)
@given(
    seed=st.integers(0, 2**32 - 1),
    num_edges=st.integers(1, 4),
    num_queued=st.integers(0, 5),
)
def test_oinc_alg5__controller_dispatch_costs_are_dynamics_eq9(seed: int, num_edges: int, num_queued: int) -> None:
    """The controller's C_kj is dyn.dispatch_costs of dyn.job_weight and dyn.remaining_time_s (eq. 8)."""
    rng = np.random.default_rng(seed)
    jobs = Jobs.empty(8)
    if num_queued:
        jobs.add(np.arange(num_queued), 0.0, rng.uniform(20, 200, num_queued), rng.uniform(1e9, 5e11, num_queued))
        jobs.edge[:num_queued] = rng.integers(0, num_edges, num_queued)
    (k,) = jobs.add(np.array([num_queued]), 3.0, rng.uniform(20, 200, 1), rng.uniform(1e9, 5e11, 1))
    ctrl = OINCRetraining()
    ctrl.reset(_instance(rng.uniform(5e9, 9e9, num_edges), np.full(6, 0.5), np.full((6, num_edges), 6.7e7)), jobs)
    ctrl.share[:] = rng.choice([0.0, 0.3, 0.9], num_edges)
    ctrl.share[jobs.edge[:num_queued]] = np.maximum(ctrl.share[jobs.edge[:num_queued]], 0.1)
    t = 7
    q = np.arange(num_queued)
    e = jobs.edge[q]
    expected = dyn.dispatch_costs(
        float(dyn.job_weight(jobs.deadline_s[k], t)),
        dyn.remaining_time_s(jobs.remaining[k], ctrl.share, ctrl.cpu_hz),
        e,
        dyn.job_weight(jobs.deadline_s[q], t),
        dyn.remaining_time_s(jobs.remaining[q], ctrl.share[e], ctrl.cpu_hz[e]),
    )
    assert np.array_equal(ctrl.dispatch_costs(int(k), t), expected)


def test_oinc_dynamics__eq8_by_hand() -> None:
    h = dyn.remaining_time_s(np.array([6e9, 6e9]), np.array([0.5, 0.0]), np.array([4e9, 4e9]))
    assert h[0] == 3.0 and math.isinf(h[1])


# ----------------------------------------------------------------------------- Alg. 2's ratio search
def _alg2_cost_by_hand(
    ratio: float,
    cpu: list[float],
    share_before: list[float],
    chosen: list[int],
    need_hz: float,
    upload_mean_s: float,
    mean_cycles: float,
    mean_work: float,
    num_devices: int,
    tau_norm_s: float,
    b_norm_s: float,
) -> tuple[float, dict[int, float]]:
    """Alg. 2's objective for one ratio alpha/beta (beta = 1), edge by edge: eq. (2) clipped to
    [0, 0.9], tau = mean upload + (I/J) mean c * mean_j 1 / (f_j (1 - p_j)), h = mean_j w / (p_j f_j)."""
    free = sum(f * (1 - p) for f, p in zip(cpu, share_before))
    spare = max(free - need_hz, 0.0)
    p = {j: min(max(spare / ((ratio + 1) * len(chosen) * cpu[j]), 0.0), MAX_RETRAIN_SHARE) for j in chosen}
    if max(p.values()) <= 0:
        return math.inf, p
    after = [p.get(j, share_before[j]) for j in range(len(cpu))]
    inv = sum(1 / max(f * (1 - s), 1e-9) for f, s in zip(cpu, after)) / len(cpu)
    tau = upload_mean_s + num_devices / len(cpu) * mean_cycles * inv
    h = sum(mean_work / (p[j] * cpu[j]) if p[j] > 0 else math.inf for j in chosen) / len(chosen)
    return tau / tau_norm_s + h / b_norm_s, p


@settings(max_examples=60)
@given(
    seed=st.integers(0, 2**32 - 1),
    num_edges=st.integers(1, 4),
    num_devices=st.integers(1, 6),
    num_waiting=st.integers(1, 3),
    tau_norm_s=st.sampled_from([0.02, 0.1, 0.25, 1.0]),
    b_norm_s=st.sampled_from([10.0, 100.0, 1000.0]),
)
def test_oinc_alg2__chosen_ratio_is_the_exhaustive_optimum_over_R(
    seed: int, num_edges: int, num_devices: int, num_waiting: int, tau_norm_s: float, b_norm_s: float
) -> None:
    """Alg. 2 searches R = {1/8, ..., 8}; the controller's reservation must be the one of the ratio of least
    estimated cost, found here by evaluating every ratio of R with the formula written out by hand."""
    rng = np.random.default_rng(seed)
    cpu = rng.uniform(5e9, 9e9, num_edges)
    slo = rng.uniform(0.3, 1.0, num_devices)
    rate = rng.uniform(2e7, 2e8, (num_devices, num_edges))
    d = rng.uniform(0.8, 1.6, num_devices) * 8e6
    c = rng.uniform(1e8, 2e8, num_devices)
    jobs = Jobs.empty(8)
    ctrl = OINCRetraining(tau_norm_s=tau_norm_s, b_norm_s=b_norm_s)
    ctrl.reset(_instance(cpu, slo, rate), jobs)
    busy = rng.random(num_edges) < 0.3  # edges already running a job keep their share
    n_busy = int(busy.sum())
    if n_busy:
        jobs.add(np.arange(n_busy), 0.0, np.full(n_busy, 150.0), np.full(n_busy, 1e11))
        jobs.edge[:n_busy] = np.flatnonzero(busy)
        ctrl.share[busy] = rng.uniform(0.1, 0.9, n_busy)
    share_before = ctrl.share.tolist()
    work = rng.uniform(1e9, 1e12, num_waiting)
    jobs.add(np.arange(num_waiting), 0.0, np.full(num_waiting, 100.0), work)
    share = ctrl.begin_slot(0, np.arange(num_waiting), d, c)

    free = [j for j in np.argsort(-cpu, kind="stable") if not busy[j]]
    chosen = [int(j) for j in free[: min(num_waiting, len(free))]]
    if not chosen:  # every edge runs a job: nothing to reserve
        assert share.tolist() == share_before
        return
    per_edge = max(num_devices / num_edges, 1.0)
    upload = [d[i] * per_edge / (sum(rate[i]) / num_edges) for i in range(num_devices)]
    windows = [s - u if s - u >= dyn.MIN_COMPUTE_WINDOW_S else 1.0 for s, u in zip(slo, upload)]
    need = sum(ci / w for ci, w in zip(c, windows))
    args = (share_before, chosen, need, sum(upload) / num_devices, float(c.mean()), float(work.mean()), num_devices)
    costs = {r: _alg2_cost_by_hand(r, cpu.tolist(), *args, tau_norm_s, b_norm_s) for r in RATIO_SET}
    if all(math.isinf(cost) for cost, _ in costs.values()):  # no spare compute: no reservation
        assert share.tolist() == share_before and math.isnan(ctrl.last_ratio)
        return
    best = min(cost for cost, _ in costs.values())
    assert ctrl.last_ratio in RATIO_SET
    cost, p = costs[ctrl.last_ratio]
    assert cost == pytest.approx(best, rel=1e-9)
    assert [share[j] for j in chosen] == pytest.approx([p[j] for j in chosen], rel=1e-12)
    assert share[busy].tolist() == [share_before[j] for j in np.flatnonzero(busy)]


# ----------------------------------------------------------------------------- the heuristics' latency
@given(
    tx=st.lists(st.floats(1e-3, 1.0), min_size=1, max_size=6),
    cycles=st.lists(st.floats(1e8, 2e8), min_size=6, max_size=6),
    cpu_hz=st.floats(1e9, 9e9),
)
def test_oinc_dynamics__sqrt_split_latency_is_the_latency_model_at_the_sqrt_split(
    tx: list[float], cycles: list[float], cpu_hz: float
) -> None:
    """Greedy's / Liu's estimates equal tau = transmission_time + computation_time at ``sqrt_split`` shares."""
    n = len(tx)
    upload_full = np.array(tx)  # d / r at the whole band: take d = tx, r = 1
    c = np.array(cycles[:n])
    group = np.zeros(n, dtype=np.int64)
    v, z = dyn.sqrt_split(upload_full, group, 1), dyn.sqrt_split(c, group, 1)
    tau = dyn.transmission_time(upload_full, np.ones(n), v) + dyn.computation_time(c, np.full(n, cpu_hz), z)
    root_tx, root_c = np.sqrt(upload_full), np.sqrt(c)
    est = dyn.sqrt_split_latency(root_tx, root_tx.sum(), root_c, root_c.sum(), cpu_hz)
    assert est.tolist() == pytest.approx(tau.tolist(), rel=1e-9)
    before = dyn.sqrt_split_latency(root_tx[:-1], root_tx[:-1].sum(), root_c[:-1], root_c[:-1].sum(), cpu_hz).sum()
    increase = dyn.sqrt_split_total_increase(root_tx[-1], root_tx[:-1].sum(), root_c[-1], root_c[:-1].sum(), cpu_hz)
    assert increase == pytest.approx(tau.sum() - before, rel=1e-9, abs=1e-12)
