"""OINC-v0 retraining side: Alg. 5 dispatch/sequencing/completion by hand, Alg. 2, the pause rule, baselines."""

from __future__ import annotations

import numpy as np
import pytest

from envs.oinc import dynamics as dyn
from envs.oinc.env import OINCEnv
from envs.oinc.retraining import (
    CONTROLLERS,
    MAX_RETRAIN_SHARE,
    DedasRetraining,
    OINCRetraining,
    ZhangRetraining,
    make_controller,
)
from envs.oinc.types import Instance, Jobs


def _instance(cpu_hz: list[float], num_devices: int = 4) -> Instance:
    n_j = len(cpu_hz)
    return Instance(
        cpu_hz=np.asarray(cpu_hz, dtype=float),
        bandwidth_hz=np.full(n_j, 2.5e6),
        tx_power_w=np.full(num_devices, 0.09),
        distance_km=np.full((num_devices, n_j), 0.3),
        slo_s=np.full(num_devices, 0.5),
        full_rate_bps=np.full((num_devices, n_j), 6.7e7),
    )


def _controller(cpu_hz: list[float], share: list[float], jobs: Jobs) -> OINCRetraining:
    ctrl = OINCRetraining()
    ctrl.reset(_instance(cpu_hz), jobs)
    ctrl.share[:] = share
    return ctrl


def test_oinc_alg5__dispatch_picks_edge_of_least_weighted_completion_increase() -> None:
    jobs = Jobs.empty(8)
    # edge 0 (rate 0.5 GHz): job A, 5 Gcycles (h = 10 s), deadline 100 -> l = 1/100
    jobs.add(np.array([0]), 0.0, np.array([100.0]), np.array([5e9]))
    # edge 1 (rate 1 GHz): job B, 20 Gcycles (h = 20 s), D = 50; job C, 10 Gcycles (h = 10 s), D = 200
    jobs.add(np.array([1, 2]), 0.0, np.array([50.0, 200.0]), np.array([20e9, 10e9]))
    jobs.edge[:3] = [0, 1, 1]
    # the new job K: 4 Gcycles, D = 40 -> l = 1/40, h_K0 = 8 s, h_K1 = 4 s
    (k,) = jobs.add(np.array([3]), 0.0, np.array([40.0]), np.array([4e9]))
    ctrl = _controller([1e9, 2e9], [0.5, 0.5], jobs)
    costs = ctrl.dispatch_costs(int(k), t=0)
    # C_K0 = l_K h_K0 + l_A h_A = 8/40 + 10/100 = 0.3 (A is less dense than K)
    # C_K1 = l_K h_K1 + l_B h_B + l_C h_C = 4/40 + 20/50 + 10/200 = 0.55
    assert costs == pytest.approx([0.3, 0.55])
    ctrl.dispatch(0)
    assert jobs.edge[k] == 0  # not the faster edge 1, where K would add B's and C's weighted time


def test_oinc_alg5__denser_queued_job_counts_as_waiting_time() -> None:
    jobs = Jobs.empty(4)
    jobs.add(np.array([0]), 0.0, np.array([10.0]), np.array([1e9]))  # h = 1 s, l = 1/10: dense
    jobs.edge[0] = 0
    (k,) = jobs.add(np.array([1]), 0.0, np.array([100.0]), np.array([5e9]))  # h = 5 s, l = 1/100
    ctrl = _controller([1e9], [1.0], jobs)
    # C = l_K * h_dense + l_K * h_K = (1 + 5) / 100
    assert ctrl.dispatch_costs(int(k), t=0) == pytest.approx([0.06])


def test_oinc_alg5__no_dispatch_to_edges_without_retraining_share() -> None:
    jobs = Jobs.empty(4)
    (k,) = jobs.add(np.array([0]), 0.0, np.array([100.0]), np.array([1e9]))
    ctrl = _controller([9e9, 1e9], [0.0, 0.2], jobs)
    costs = ctrl.dispatch_costs(int(k), t=0)
    assert np.isinf(costs[0]) and np.isfinite(costs[1])
    ctrl.dispatch(0)
    assert jobs.edge[k] == 1


def test_oinc_alg5__sequencing_runs_largest_density_first() -> None:
    jobs = Jobs.empty(4)
    # same edge: (l, h) = (1/10, 3 s) density 1/30; (1/20, 1 s) density 1/20; (1/5, 10 s) density 1/50
    jobs.add(np.arange(3), 0.0, np.array([10.0, 20.0, 5.0]), np.array([3e9, 1e9, 10e9]))
    jobs.edge[:3] = 0
    ctrl = _controller([2e9], [0.5], jobs)
    edges, chosen = ctrl.selected_jobs(0)
    assert edges.tolist() == [0] and chosen.tolist() == [1]
    assert dyn.largest_density(np.array([0.1, 0.05, 0.2]), np.array([3.0, 1.0, 10.0])) == 1


def test_oinc_dynamics__back_to_back_finish_by_hand() -> None:
    group = np.array([1, 0, 1, 0, 1])
    key = np.array([5.0, 2.0, 1.0, 1.0, 9.0])
    times = np.array([2.0, 3.0, 4.0, 1.0, 0.5])
    # edge 0: key 1 (t = 1) then key 2 (t = 3) -> 1, 4; edge 1: key 1 (4), key 5 (2), key 9 (0.5) -> 4, 6, 6.5
    assert dyn.back_to_back_finish(group, key, times).tolist() == [6.0, 4.0, 4.0, 1.0, 6.5]
    after, done, finish = dyn.run_slot(np.array([1e9, 3e9, 1e9]), np.array([2e9, 2e9, 0.0]), 7.0)
    assert after.tolist() == [0.0, 1e9, 1e9] and done.tolist() == [True, False, False]
    assert finish[0] == pytest.approx(7.5) and np.isnan(finish[1:]).all()


def test_oinc_alg5__completion_times_on_two_edges_three_jobs() -> None:
    jobs = Jobs.empty(4)
    # edge 0: J1 1.5 Gcycles (h = 3 s), J2 0.5 Gcycles (h = 1 s), both D = 10; edge 1: J3 1.25 Gcycles
    jobs.add(np.arange(3), 0.0, np.array([10.0, 10.0, 10.0]), np.array([1.5e9, 0.5e9, 1.25e9]))
    jobs.edge[:3] = [0, 0, 1]
    ctrl = _controller([1e9, 1e9], [0.5, 0.5], jobs)
    no_pause = np.zeros(2, dtype=bool)
    finished_per_slot = [ctrl.process(t, no_pause).tolist() for t in range(5)]
    # J2 is denser (1/10 per s vs 1/30) and runs first: done at 1.0; J1 runs slots 1-3: done at 4.0;
    # J3 runs slots 0-2 at 0.5 GHz: 0.25 Gcycles left in slot 2 -> done at 2.5
    assert jobs.finish_s[:3] == pytest.approx([4.0, 1.0, 2.5])
    assert finished_per_slot == [[1], [], [2], [0], []]
    assert ctrl.share.tolist() == [0.0, 0.0]  # p^r returns to 0 once an edge has no job


def test_oinc_alg5__paused_edge_makes_no_progress() -> None:
    jobs = Jobs.empty(2)
    jobs.add(np.array([0]), 0.0, np.array([10.0]), np.array([1e9]))
    jobs.edge[0] = 0
    ctrl = _controller([1e9], [0.5], jobs)
    ctrl.process(0, np.array([True]))
    assert jobs.remaining[0] == 1e9
    ctrl.process(1, np.array([False]))
    assert jobs.remaining[0] == pytest.approx(0.5e9)


def test_oinc_alg2__reservation_is_eq2_on_the_strongest_free_edges() -> None:
    jobs = Jobs.empty(4)
    ctrl = OINCRetraining()
    ctrl.reset(_instance([5e9, 9e9, 7e9]), jobs)
    jobs.add(np.array([0]), 0.0, np.array([100.0]), np.array([2e11]))
    d = np.full(4, 1.2e6)
    c = np.full(4, 150e6)
    share = ctrl.begin_slot(0, np.array([0]), d, c)
    assert share[0] == 0 and share[2] == 0 and share[1] > 0  # the 9-GHz edge
    res_min = dyn.inference_need_hz(c, np.full(4, 0.5), dyn.equal_share_upload_s(d, np.full((4, 3), 6.7e7), 3))
    expected = dyn.reservation_share(21e9, res_min, ctrl.last_ratio, 1.0, 1, np.array([9e9]))
    assert share[1] == pytest.approx(min(expected[0], MAX_RETRAIN_SHARE))
    assert ctrl.last_ratio in (1 / 8, 1 / 4, 1 / 2, 1.0, 2.0, 4.0, 8.0)
    # hand value of eq. (2): beta (free - res_min) / ((alpha + beta) num f)
    assert dyn.reservation_share(84e9, 12e9, 1.0, 1.0, 2, np.array([9e9]))[0] == pytest.approx(72 / 36)
    assert dyn.reservation_share(10e9, 12e9, 1.0, 1.0, 1, np.array([9e9]))[0] == 0.0


def test_oinc_pause__only_when_reserve_insufficient_and_whole_edge_helps() -> None:
    cpu = np.array([1e9, 1e9])
    edge = np.array([0, 0, 1])
    slo = np.full(3, 0.5)
    upload = np.array([0.1, 0.1, 0.1])
    cycles = np.array([0.2e9, 0.2e9, 0.05e9])
    f_t = np.array([0.5, 0.5])
    z = np.array([0.25, 0.25, 0.5])
    latency = upload + cycles / (z * cpu[edge])  # edge 0: 0.9 s (miss); edge 1: 0.2 s
    latency_full = upload + cycles / (z / f_t[edge] * cpu[edge])  # edge 0: 0.5 s (meets)
    running = np.array([True, True])
    paused = dyn.pause_edges(edge, latency, latency_full, upload, cycles, slo, cpu, f_t, running)
    assert paused.tolist() == [True, False]
    # a bad split on an edge whose reserve would suffice does not pause retraining
    f_big = np.array([0.95, 0.95])
    z_bad = np.array([0.9, 0.05, 0.95])
    lat_bad = upload + cycles / (z_bad * cpu[edge])
    lat_bad_full = upload + cycles / (z_bad / f_big[edge] * cpu[edge])
    assert not dyn.pause_edges(edge, lat_bad, lat_bad_full, upload, cycles, slo, cpu, f_big, running).any()


@pytest.mark.parametrize("name", sorted(CONTROLLERS))
def test_oinc_controllers__shares_bounded_and_all_jobs_complete(name: str) -> None:
    env = OINCEnv(scenario="tiny", scenario_overrides={"horizon": 60}, retraining=name)
    env.reset(seed=1)
    rng = np.random.default_rng(0)
    done, info = False, {}
    while not done:
        assert np.all((env.controller.share >= 0) & (env.controller.share <= MAX_RETRAIN_SHARE + 1e-12))
        _, _, _, done, info = env.step(rng.integers(0, env.action_space.nvec))
    assert info["jobs_total"] > 0 and info["jobs_censored"] == 0
    assert np.all(env.jobs.edge[: env.jobs.count] >= 0)


def test_oinc_dedas__edf_order_and_deadline_aware_dispatch() -> None:
    jobs = Jobs.empty(4)
    ctrl = DedasRetraining()
    ctrl.reset(_instance([1e9, 1e9]), jobs)
    # edge 0 busy with 10 s of work (at share 1/2) due at 12; edge 1 idle
    jobs.add(np.array([0]), 0.0, np.array([12.0]), np.array([5e9]))
    jobs.edge[0] = 0
    jobs.add(np.array([1]), 0.0, np.array([8.0]), np.array([2e9]))  # 4 s of work, due at 8
    ctrl.begin_slot(0, np.array([1]), None, None)
    assert jobs.edge[1] == 1  # on edge 0 it would push the first job past its deadline
    jobs.add(np.array([2]), 0.0, np.array([5.0]), np.array([1e9]))
    jobs.edge[2] = 1
    _, chosen = ctrl.selected_jobs(0)
    assert sorted(chosen.tolist()) == [0, 2]  # EDF on edge 1 runs the job due at 5 first


def test_oinc_zhang__dispatches_only_at_batch_boundaries() -> None:
    jobs = Jobs.empty(4)
    ctrl = ZhangRetraining(batch_s=10.0)
    ctrl.reset(_instance([1e9, 2e9]), jobs)
    jobs.add(np.array([0]), 3.0, np.array([100.0]), np.array([1e9]))
    ctrl.begin_slot(3, np.array([0]), None, None)
    assert jobs.edge[0] == -1
    ctrl.begin_slot(10, np.zeros(0, dtype=np.int64), None, None)
    assert jobs.edge[0] == 1  # least queued work per capacity: the stronger idle edge


def test_oinc_controllers__make_controller_rejects_unknown_name() -> None:
    with pytest.raises(ValueError, match="retraining"):
        make_controller("fifo")
