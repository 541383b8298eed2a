"""The seven static policies against their formulas on a hand-made 3-cluster instance, and the
analytic failure fraction against Monte-Carlo sampling of query latencies."""

from __future__ import annotations

import numpy as np
import pytest
from test_aset_fast_equals_reference import _reference_choose_worker as choose_worker

from envs.aset.dynamics import failure_fraction, queueing_wait_ms, worker_wait_ms
from envs.aset.env import ASETEnv
from envs.aset.generator import Scenario, build_instance
from envs.aset.policies import LOAD_EPS_QPS
from envs.aset.types import POLICY_NAMES

# One antenna below one CO; workers in three clusters: cloud (d = 10 ms), CO (3 ms), antenna (1 ms).
VARIANTS = {
    "edge_cpu": {"delay_ms": 30.0, "capacity_qps": 10.0, "accuracy": 0.4},
    "gpu_small": {"delay_ms": 10.0, "capacity_qps": 100.0, "accuracy": 0.3},
    "gpu_big": {"delay_ms": 40.0, "capacity_qps": 100.0, "accuracy": 0.6},
}
TOPOLOGY = {
    "name": "three-clusters",
    "layout": {"central_offices": 1, "antennas_per_co": 1},
    "delays_ms": {
        "own_antenna": 1.0, "sibling_antenna": 2.0, "other_antenna": 8.0, "own_co": 3.0,
        "other_co": 7.0, "dc": 5.0, "cloud": 10.0,
    },
    "sigma_fraction": 0.1,
    "workers": {
        "cloud": {"gpu_small": 2, "gpu_big": 1},   # w0, w1
        "co": {"gpu_small": 1, "edge_cpu": 1},     # w2, w3
        "antenna": {"edge_cpu": 1},                # w4
    },
}
# Hand computations: net key = d + 2 sigma = 1.2 d; e2e key = 2 * 1.2 d + D_v.
NET_KEY = np.array([12.0, 12.0, 3.6, 3.6, 1.2])
E2E_KEY = np.array([34.0, 64.0, 17.2, 37.2, 32.4])
CAPACITY = np.array([200.0, 100.0, 100.0, 10.0, 10.0])
CLUSTER_OF = {0: "cloud", 1: "cloud", 2: "co0", 3: "co0", 4: "ant0"}


@pytest.fixture(scope="module")
def instance():
    return build_instance(TOPOLOGY, Scenario(), np.random.default_rng(0), variants=VARIANTS)


def _choose(instance, policy: str, load: np.ndarray, cand=None, seed: int = 0) -> int:
    cand = np.arange(instance.num_workers) if cand is None else np.asarray(cand)
    return choose_worker(
        POLICY_NAMES.index(policy), cand, instance.net_key_sw[0], instance.e2e_key_sw[0], load,
        instance.worker_capacity_qps, np.random.default_rng(seed),
    )


def test_aset__hand_instance_precomputes_the_formula_keys(instance):
    assert instance.num_workers == 5
    np.testing.assert_allclose(instance.net_key_sw[0], NET_KEY)
    np.testing.assert_allclose(instance.e2e_key_sw[0], E2E_KEY)
    np.testing.assert_allclose(instance.worker_capacity_qps, CAPACITY)
    assert [instance.cluster_names[n] for n in instance.worker_cluster] == [CLUSTER_OF[w] for w in range(5)]


def test_aset__closest_picks_min_network_latency_cluster(instance):
    assert _choose(instance, "closest", np.zeros(5)) == 4            # antenna: 1.2 ms
    assert _choose(instance, "closest", np.zeros(5), cand=[0, 1, 2, 3]) in (2, 3)  # then the CO
    picks = {_choose(instance, "closest", np.zeros(5), cand=[0, 1, 2, 3], seed=s) for s in range(40)}
    assert picks == {2, 3}                                           # "any feasible v on n*"


def test_aset__load_balancing_picks_min_load_pair(instance):
    load = np.array([50.0, 10.0, 30.0, 5.0, 8.0])
    assert _choose(instance, "load_balancing", load) == 3
    assert _choose(instance, "load_balancing", load, cand=[0, 1, 2]) == 1


def test_aset__farthest_picks_max_network_latency_cluster(instance):
    picks = {_choose(instance, "farthest", np.zeros(5), seed=s) for s in range(40)}
    assert picks == {0, 1}                                           # both cloud variants
    assert _choose(instance, "farthest", np.zeros(5), cand=[2, 4]) == 2


def test_aset__cheaper_picks_max_end_to_end_delay(instance):
    assert _choose(instance, "cheaper", np.zeros(5)) == 1            # 64 ms
    assert _choose(instance, "cheaper", np.zeros(5), cand=[0, 2, 3, 4]) == 3  # 37.2 ms


def test_aset__least_impedance_picks_min_end_to_end_delay(instance):
    assert _choose(instance, "least_impedance", np.zeros(5)) == 2    # 17.2 ms
    assert _choose(instance, "least_impedance", np.zeros(5), cand=[0, 1, 3, 4]) == 4  # 32.4 ms


def _frequencies(instance, policy: str, load: np.ndarray, draws: int = 20_000) -> np.ndarray:
    rng = np.random.default_rng(3)
    counts = np.zeros(5)
    cand = np.arange(5)
    for _ in range(draws):
        w = choose_worker(
            POLICY_NAMES.index(policy), cand, instance.net_key_sw[0], instance.e2e_key_sw[0], load,
            instance.worker_capacity_qps, rng,
        )
        counts[w] += 1
    return counts / draws


def test_aset__random_latency_is_proportional_to_inverse_delay(instance):
    expected = (1.0 / E2E_KEY) / (1.0 / E2E_KEY).sum()
    np.testing.assert_allclose(_frequencies(instance, "random_latency", np.zeros(5)), expected, atol=0.012)


def test_aset__random_load_is_proportional_to_capacity_over_load(instance):
    load = np.array([50.0, 10.0, 30.0, 5.0, 0.0])
    weight = CAPACITY / np.maximum(load, LOAD_EPS_QPS)              # 4, 10, 3.33, 2, 10
    np.testing.assert_allclose(_frequencies(instance, "random_load", load), weight / weight.sum(), atol=0.012)


@pytest.mark.parametrize("policy", POLICY_NAMES)
def test_aset__every_policy_is_restricted_to_feasible_pairs(instance, policy):
    # only w1 (gpu_big) satisfies accuracy 0.5; the capacity check removes saturated workers
    assert _choose(instance, policy, np.zeros(5), cand=[1]) == 1
    assert _choose(instance, policy, np.zeros(5), cand=[]) == -1


def test_aset__unknown_policy_index_raises(instance):
    with pytest.raises(ValueError, match="policy"):
        choose_worker(7, np.arange(5), NET_KEY, E2E_KEY, np.zeros(5), CAPACITY, np.random.default_rng(0))


def test_aset__analytic_failure_fraction_matches_monte_carlo_on_random_streams():
    """Sample eps ~ N(0, sigma^2) per query: 2(delta + d + eps) + b zeta + D_v + W > D^i."""
    env = ASETEnv(topology="full-edge", lam=60.0, theta=0.0, horizon=100)
    env.reset(seed=5)
    for _ in range(8):
        env.step(6)
    inst, st = env.instance, env.state.streams
    rng = np.random.default_rng(11)
    bound = np.flatnonzero(st.worker >= 0)
    load = np.bincount(st.worker[bound], weights=st.rate[bound], minlength=inst.num_workers)
    wait = worker_wait_ms(inst, np.minimum(load, inst.worker_capacity_qps))
    picks = rng.choice(bound, size=60, replace=False)
    # make half of them marginal (bound within 2 jitter sd of the mean latency) so the check is not 0/1
    w = st.worker[picks]
    sigma = inst.sigma_ms[st.scheduler[picks], inst.worker_cluster[w]]
    mean = st.base_ms[picks] + wait[w]
    limits = st.bound_ms[picks].copy()
    limits[::2] = mean[::2] + rng.uniform(-4.0, 4.0, size=limits[::2].size) * sigma[::2]
    analytic = failure_fraction(mean, limits, st.jitter_sd_ms[picks])
    eps = rng.normal(0.0, sigma[:, None], size=(picks.size, 40_000))
    sampled = (mean[:, None] + 2.0 * eps > limits[:, None]).mean(axis=1)
    assert np.abs(analytic - sampled).max() < 0.01
    assert ((analytic > 0.05) & (analytic < 0.95)).sum() >= 10


def test_aset__queueing_wait_is_md1_for_one_server_and_grows_with_load():
    mu = np.array([10.0])
    for u in (0.1, 0.5, 0.9):
        wait = queueing_wait_ms(np.array([u * 10.0]), np.array([1]), mu)
        assert wait[0] == pytest.approx(1000.0 * u / (2.0 * 10.0 * (1.0 - u)))
    loads = np.linspace(0.0, 60.0, 13)
    pooled = queueing_wait_ms(loads, np.full(13, 6), np.full(13, 10.0))
    assert (np.diff(pooled) > 0).all() and pooled[0] == 0.0
    # pooling: six replicas behind one queue wait less than six separate queues at the same utilisation
    assert (pooled[1:-1] < queueing_wait_ms(loads / 6, np.ones(13, dtype=int), np.full(13, 10.0))[1:-1]).all()


def test_aset__without_queueing_constraint_3_bounds_every_failure_fraction():
    """2(delta + d + 2 sigma) + b zeta + D_v <= D^i leaves a 2-sd margin: P(fail) <= 1 - Phi(2)."""
    env = ASETEnv(topology="full-edge", lam=100.0, theta=0.0, scenario_overrides={"queueing": "none"})
    env.reset(seed=2)
    for action in (0, 3, 6, 1, 2, 4, 5):
        env.step(action)
        st = env.state.streams
        bound = st.worker >= 0
        fail = failure_fraction(st.base_ms[bound], st.bound_ms[bound], st.jitter_sd_ms[bound])
        assert fail.max() <= 0.02276 and env.last_result.app_rejected.sum() >= 0
