"""The batched cost (numpy and torch) against a plain per-edge reference and a hand computation."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from envs.corais.dynamics import (
    response_times,
    response_times_torch,
    stack_tables,
    tables_to_torch,
    workload_features,
)
from envs.corais.generator import build_instance, empty_backlog, generate, make_scenario
from envs.corais.types import Backlog, Instance


def _dist(inst: Instance, u: int, v: int) -> float:
    return float(np.hypot(*(inst.coords[u] - inst.coords[v])))


def reference_cost(inst: Instance, action: np.ndarray) -> tuple[float, list[float]]:
    """Plain loops over edges and requests, straight from eqs. (1)-(13)."""
    times = []
    for j in range(inst.num_region):
        bl = inst.backlog
        f = lambda d, j=j: (inst.coef_a[j] * d + inst.coef_b[j]) / inst.replicas[j]  # noqa: E731
        t_l_cmp = t_i_trn = t_i_cmp = t_l_res = t_i_res = 0.0
        for k in range(bl.edge.size):
            if bl.edge[k] != j:
                continue
            res = inst.mu * bl.o[k] * _dist(inst, j, bl.pred[k])
            if bl.transferred[k]:
                t_i_cmp += f(bl.d[k])
                t_i_trn = max(t_i_trn, inst.mu * bl.d[k] * _dist(inst, bl.src[k], j))
                t_i_res = max(t_i_res, res)
            else:
                t_l_cmp += f(bl.d[k])
                t_l_res = max(t_l_res, res)
        c_l, c_i, s, o = t_l_cmp, t_i_cmp, t_i_trn, max(t_l_res, t_i_res)
        for i in range(inst.num_requests):
            if action[i] != j:
                continue
            if inst.req_src[i] == j:
                c_l += f(inst.req_d[i])
            else:
                c_i += f(inst.req_d[i])
                s = max(s, inst.mu * inst.req_d[i] * _dist(inst, inst.req_src[i], j))
            o = max(o, inst.mu * inst.req_o[i] * _dist(inst, j, inst.req_pred[i]))
        times.append(max(c_l, s) + c_i + o)
    return max(times), times


@settings(max_examples=40, deadline=None)
@given(
    n_extra=st.integers(0, 4),
    q=st.integers(1, 5),
    z=st.integers(1, 12),
    backlog_max=st.integers(0, 4),
    seed=st.integers(0, 2**31 - 1),
)
def test_corais_cost__batched_equals_plain_reference(n_extra, q, z, backlog_max, seed) -> None:
    rng = np.random.default_rng(seed)
    inst = generate(make_scenario((q + n_extra, q, z), backlog_max=backlog_max, mu=0.7), rng)
    actions = rng.integers(0, q, size=(6, z))
    costs, times = response_times(inst.tables, actions)
    for s in range(actions.shape[0]):
        ref, ref_times = reference_cost(inst, actions[s])
        assert costs[s] == pytest.approx(ref, rel=1e-12, abs=1e-12)
        np.testing.assert_allclose(times[s], ref_times, rtol=1e-12, atol=1e-12)


@settings(max_examples=15, deadline=None)
@given(q=st.integers(1, 6), z=st.integers(1, 30), seed=st.integers(0, 2**31 - 1))
def test_corais_cost__torch_equals_numpy_batched(q, z, seed) -> None:
    rng = np.random.default_rng(seed)
    scenario = make_scenario((q + 2, q, z))
    insts = [generate(scenario, rng) for _ in range(3)]
    tables = stack_tables([i.tables for i in insts])
    actions = rng.integers(0, q, size=(3, 8, z))
    r_np, t_np = response_times(tables, actions)
    r_t, t_t = response_times_torch(*tables_to_torch(tables), torch.as_tensor(actions))
    np.testing.assert_allclose(r_t.numpy(), r_np, rtol=1e-12)
    np.testing.assert_allclose(t_t.numpy(), t_np, rtol=1e-12)


def test_corais_cost__hand_computed_two_edge_example() -> None:
    # edges 0 at (0,0), 1 at (1,0) (region), 2 at (0,1); f_0(d) = d + 1 with 2 replicas, f_1(d) = 2d, m = 1
    coords = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    backlog = Backlog(
        edge=np.array([0, 1]), transferred=np.array([False, True]), src=np.array([0, 0]),
        pred=np.array([2, 0]), d=np.array([1.0, 0.5]), o=np.array([0.5, 0.25]),
    )
    inst = build_instance(
        coords, [2.0, 1.0], [1.0, 2.0], [1.0, 0.0], 1.0, backlog,
        req_src=[0, 0, 1], req_pred=[1, 2, 0], req_d=[1.0, 0.5, 0.25], req_o=[1.0, 1.0, 0.5],
    )
    # workload: edge 0: T_L_cmp = (1+1)/2 = 1, T_L_res = 0.5*1 = 0.5; edge 1: T_I_trn = 0.5*1, T_I_cmp = 1,
    # T_I_res = 0.25*1
    np.testing.assert_allclose(inst.workload, [[1, 0, 0, 0.5, 0], [0, 0.5, 1, 0, 0.25]])
    # dispatch (0, 1, 1): edge 0: C_L = 1 + (1+1)/2 = 2, S = 0, C_I = 0, O = max(0.5, 1*1) = 1 -> T_0 = 3
    # edge 1: request 1 from edge 0 (non-local): C_I = 1 + 2*0.5 = 2, S = max(0.5, 0.5*1) = 0.5;
    # request 2 local: C_L = 2*0.25 = 0.5; O = max(0.25, 1*sqrt(2), 0.5*1) -> T_1 = 0.5 + 2 + sqrt(2)
    cost, times = response_times(inst.tables, np.array([0, 1, 1]))
    np.testing.assert_allclose(times, [3.0, 2.5 + np.sqrt(2.0)])
    assert cost == pytest.approx(2.5 + np.sqrt(2.0))


def test_corais_cost__workload_features_empty_backlog_are_zero() -> None:
    coords = np.random.default_rng(0).uniform(size=(4, 2))
    w = workload_features(coords, np.ones(3), np.ones(3), np.ones(3), 1.0, empty_backlog())
    np.testing.assert_array_equal(w, np.zeros((3, 5)))


def test_corais_cost__shapes_of_unbatched_calls() -> None:
    inst = generate(make_scenario((10, 5, 20)), np.random.default_rng(1))
    acts = np.random.default_rng(2).integers(0, 5, size=(2, 3, 20))
    r, t = response_times(inst.tables, acts)
    assert r.shape == (2, 3) and t.shape == (2, 3, 5)
    r1, _ = response_times(inst.tables, acts[0, 0])
    assert r1.shape == () and float(r1) == pytest.approx(r[0, 0])
