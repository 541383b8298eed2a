"""The fast ASET simulator gives exactly what the implementation before issue 17's speed-up gave.

``_reference_simulate_window`` is a verbatim copy of ``envs.aset.dynamics.simulate_window`` as of commit
bc77d7d (sequential binding, outcomes computed one sub-window at a time). Full episodes of ASET-v0 run once
with the current simulator and once with the reference patched in must give the same observations,
rewards and infos bit for bit (np.array_equal): the new code keeps every elementwise formula and every
summation order, and draws from the same generators in the same order. benchmarks/aset_throughput.py
imports the reference too, to measure old against new in one run.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from scipy.special import ndtr

import envs.aset.env as aset_env
from envs.aset.dynamics import (
    NUM_CLASS_BINS,
    WindowResult,
    _pick,
    _pick_cumulative,
    draw_arrivals,
    static_feasibility,
    worker_wait_ms,
)
from envs.aset.env import ASETEnv
from envs.aset.policies import LOAD_EPS_QPS, TIE_RTOL
from envs.aset.types import POLICY_NAMES, Instance, State


def _pick_extreme(cand: np.ndarray, key: np.ndarray, rng: np.random.Generator, maximise: bool) -> int:
    """Uniformly random worker among the candidates whose key is the min (or max)."""
    best = key.max() if maximise else key.min()
    ties = cand[np.abs(key - best) <= TIE_RTOL * max(1.0, abs(best))]
    if ties.size == 1:
        return int(ties[0])
    return int(ties[rng.integers(ties.size)])


def _pick_proportional(cand: np.ndarray, weight: np.ndarray, rng: np.random.Generator) -> int:
    cum = np.cumsum(weight)
    idx = int(np.searchsorted(cum, rng.random() * cum[-1], side="right"))
    return int(cand[min(idx, cand.size - 1)])


def _reference_choose_worker(
    policy: int,
    cand: np.ndarray,
    net_key: np.ndarray,
    e2e_key: np.ndarray,
    load: np.ndarray,
    capacity: np.ndarray,
    rng: np.random.Generator,
) -> int:
    """bc77d7d's ``envs.aset.policies.choose_worker``, the rules' specification: the worker chosen by static
    policy ``policy`` among feasible ``cand`` (indices); -1 if none.

    ``net_key``, ``e2e_key``, ``load`` and ``capacity`` are indexed by worker (length W).
    """
    if cand.size == 0:
        return -1
    if policy == 0:  # closest
        return _pick_extreme(cand, net_key[cand], rng, maximise=False)
    if policy == 1:  # load balancing
        return _pick_extreme(cand, load[cand], rng, maximise=False)
    if policy == 2:  # farthest
        return _pick_extreme(cand, net_key[cand], rng, maximise=True)
    if policy == 3:  # cheaper
        return _pick_extreme(cand, e2e_key[cand], rng, maximise=True)
    if policy == 4:  # random-proportional latency
        return _pick_proportional(cand, 1.0 / e2e_key[cand], rng)
    if policy == 5:  # random-proportional load
        return _pick_proportional(cand, capacity[cand] / np.maximum(load[cand], LOAD_EPS_QPS), rng)
    if policy == 6:  # least impedance
        return _pick_extreme(cand, e2e_key[cand], rng, maximise=False)
    raise ValueError(f"policy={policy!r} is invalid: expected an integer in [0, {len(POLICY_NAMES) - 1}]")


def _reference_failure_fraction(
    mean_latency_ms: np.ndarray, bound_ms: np.ndarray, jitter_sd_ms: np.ndarray
) -> np.ndarray:
    """bc77d7d's ``failure_fraction``: the normal CDF evaluated for every stream."""
    return ndtr((mean_latency_ms - bound_ms) / jitter_sd_ms)


def _reference_simulate_window(
    instance: Instance,
    state: State,
    policy: int,
    arrival_rng: np.random.Generator,
    choice_rng: np.random.Generator,
) -> WindowResult:
    """Commit bc77d7d's ``simulate_window`` verbatim: one stream bound at a time, one sub-window at a time.

    Arrivals come from ``arrival_rng`` only (common random numbers across policies); random policy
    choices from ``choice_rng``.
    """
    k_sub, n_w, n_a = instance.sub_windows, instance.num_workers, instance.num_apps
    dt = instance.sub_window_s
    cap = instance.worker_capacity_qps
    arr = draw_arrivals(instance, state.window, arrival_rng)
    feas = static_feasibility(instance, arr)
    offset = len(state.streams)
    state.streams.extend(arr.streams)
    st = state.streams
    a_start = arr.streams.start_sub
    a_sched = arr.streams.scheduler
    a_rate = arr.streams.rate
    first_of_sub = np.searchsorted(a_start, state.window * k_sub + np.arange(k_sub + 1))

    res = WindowResult(
        streams_kw=np.zeros((k_sub, n_w)), served_kw=np.zeros((k_sub, n_w)), load_kw=np.zeros((k_sub, n_w)),
        class_rate_kc=np.zeros((k_sub, NUM_CLASS_BINS)),
        app_queries=np.zeros(n_a), app_succeeded=np.zeros(n_a), app_failed=np.zeros(n_a),
        app_rejected=np.zeros(n_a), sub_queries=np.zeros(k_sub), sub_succeeded=np.zeros(k_sub),
        sub_failed=np.zeros(k_sub), sub_rejected=np.zeros(k_sub), arrivals=len(arr.streams),
        rejected_at_arrival=0,
    )
    for k in range(k_sub):
        g = state.window * k_sub + k
        live = (st.start_sub < g) & (st.end_sub >= g)
        bound_live = live & (st.worker >= 0)
        load = np.bincount(st.worker[bound_live], weights=st.rate[bound_live], minlength=n_w)
        # --- sequential binding of the streams arriving in this sub-window
        lo, hi = int(first_of_sub[k]), int(first_of_sub[k + 1])
        for j in range(lo, hi):
            rate_j = a_rate[j]
            cand = np.flatnonzero(feas[j] & (load + rate_j <= cap + 1e-9))
            s = a_sched[j]
            w = _reference_choose_worker(policy, cand, instance.net_key_sw[s], instance.e2e_key_sw[s], load, cap, choice_rng)
            if w >= 0:
                load[w] += rate_j
                st.worker[offset + j] = w
        if hi > lo:
            new = np.arange(lo, hi)
            w_new = st.worker[offset + new]
            ok = w_new >= 0
            res.rejected_at_arrival += int((~ok).sum())
            idx, w_ok = new[ok], w_new[ok]
            st.base_ms[offset + idx] = (
                2.0 * arr.delta_ms[idx] + instance.rtt_ms_sw[a_sched[idx], w_ok] + arr.trans_ms[idx]
                + instance.worker_delay_ms[w_ok]
            )
            st.jitter_sd_ms[offset + idx] = instance.jitter_sd_ms_sw[a_sched[idx], w_ok]
        # --- fluid outcomes of every live stream in this sub-window
        live = (st.start_sub <= g) & (st.end_sub >= g)
        ids = np.flatnonzero(live)
        w_ids = st.worker[ids]
        bound = w_ids >= 0
        served_share = np.where(load > cap, cap / np.maximum(load, 1e-12), 1.0)
        served_qps = np.minimum(load, cap)
        wait_ms = worker_wait_ms(instance, served_qps)
        queries = st.rate[ids] * dt
        w_safe = np.where(bound, w_ids, 0)
        served = np.where(bound, queries * served_share[w_safe], 0.0)
        fail = _reference_failure_fraction(st.base_ms[ids] + wait_ms[w_safe], st.bound_ms[ids], st.jitter_sd_ms[ids])
        failed = served * fail
        app = st.app[ids]
        q_a = np.bincount(app, weights=queries, minlength=n_a)
        s_a = np.bincount(app, weights=served - failed, minlength=n_a)
        f_a = np.bincount(app, weights=failed, minlength=n_a)
        r_a = np.bincount(app, weights=queries - served, minlength=n_a)
        res.app_queries += q_a
        res.app_succeeded += s_a
        res.app_failed += f_a
        res.app_rejected += r_a
        res.sub_queries[k], res.sub_succeeded[k] = q_a.sum(), s_a.sum()
        res.sub_failed[k], res.sub_rejected[k] = f_a.sum(), r_a.sum()
        res.streams_kw[k] = np.bincount(w_ids[bound], minlength=n_w)
        res.served_kw[k] = served_qps
        res.load_kw[k] = load
        res.class_rate_kc[k] = np.bincount(st.class_bin[ids], weights=st.rate[ids], minlength=NUM_CLASS_BINS)
    state.window += 1
    st.keep(st.end_sub >= state.window * k_sub)
    return res


def _action(policy: str, t: int, rng: np.random.Generator) -> int:
    """``random``: uniform; ``switch``: cycle through the seven policies; a digit: that policy throughout."""
    if policy == "random":
        return int(rng.integers(7))
    return t % 7 if policy == "switch" else int(policy)


def _episode(env: ASETEnv, seed: int, policy: str, windows: int) -> list[tuple[Any, ...]]:
    """(obs, reward, terminated, truncated, info) of each step of one episode under a fixed or random policy."""
    obs, info = env.reset(seed=seed)
    out: list[tuple[Any, ...]] = [(obs, 0.0, False, False, info)]
    rng = np.random.default_rng(seed + 1000)
    for t in range(windows):
        action = _action(policy, t, rng)
        obs, reward, terminated, truncated, info = env.step(action)
        out.append((obs, reward, terminated, truncated, info))
        if terminated or truncated:
            break
    return out


def _assert_same(a: Any, b: Any, where: str) -> None:
    if isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for key in a:
            _assert_same(a[key], b[key], f"{where}[{key!r}]")
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and np.array_equal(a, b), where
    else:
        assert type(a) is type(b) and a == b, where


@pytest.mark.parametrize(
    ("topology", "lam", "seed", "policy"),
    [
        ("full-edge", 60.0, 0, "random"),
        ("full-edge", 100.0, 1, "random"),
        ("co-dc-cloud", 60.0, 2, "switch"),
        ("co-dc-cloud", 100.0, 3, "random"),
        ("dc-cloud", 60.0, 4, "5"),
        ("dc-cloud", 100.0, 5, "switch"),
        ("full-edge", 100.0, 6, "0"),
        ("full-edge", 60.0, 7, "4"),
        # every policy alone (the compiled binding has one branch per rule)
        ("full-edge", 60.0, 8, "1"),
        ("full-edge", 100.0, 9, "2"),
        ("full-edge", 60.0, 10, "3"),
        ("co-dc-cloud", 60.0, 11, "6"),
    ],
)
def test_aset__fast_simulator_equals_reference(
    topology: str, lam: float, seed: int, policy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    windows = 40
    new = _episode(ASETEnv(topology=topology, lam=lam, theta=0.0, horizon=windows), seed, policy, windows)
    monkeypatch.setattr(aset_env, "simulate_window", _reference_simulate_window)
    old = _episode(ASETEnv(topology=topology, lam=lam, theta=0.0, horizon=windows), seed, policy, windows)
    assert len(new) == len(old) == windows + 1
    for t, (a, b) in enumerate(zip(new, old)):
        for name, x, y in zip(("obs", "reward", "terminated", "truncated", "info"), a, b):
            _assert_same(x, y, f"window {t} {name}")


def test_aset__fast_simulator_equals_reference_with_queueing_variants(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every queueing model (the waits feed the failure fraction) and an episode that terminates."""
    for queueing in ("none", "pooled", "per_replica"):
        def make(queueing: str = queueing) -> ASETEnv:
            return ASETEnv(topology="full-edge", lam=100.0, theta=0.6, horizon=30,
                           scenario_overrides={"queueing": queueing})

        with monkeypatch.context() as m:
            new = _episode(make(), 11, "random", 30)
            m.setattr(aset_env, "simulate_window", _reference_simulate_window)
            old = _episode(make(), 11, "random", 30)
        assert len(new) == len(old)
        for t, (a, b) in enumerate(zip(new, old)):
            for name, x, y in zip(("obs", "reward", "terminated", "truncated", "info"), a, b):
                _assert_same(x, y, f"{queueing} window {t} {name}")


def test_aset__compiled_draws_equal_numpy() -> None:
    """The compiled tie-break and proportional picks draw what the reference rules draw from the same Generator.

    The episode tests depend on numba's ``Generator.integers``/``random`` reproducing numpy's stream; this
    checks it directly (tie counts 1..1000, buffers longer than the candidates, as the kernel passes them)
    and that both generators end in the same state, so a numba upgrade that changed the stream fails here.
    """
    weights_rng = np.random.default_rng(99)
    for seed in range(3):
        fast, ref = np.random.default_rng(seed), np.random.default_rng(seed)
        for n in (1, 2, 3, 5, 7, 8, 13, 64, 1000):
            buf = np.full(n + 3, -7, dtype=np.int64)
            buf[:n] = np.arange(n) * 3 + 1
            cand = buf[:n].copy()
            for _ in range(40):
                want = _pick_extreme(cand, np.zeros(n), ref, maximise=False)  # all keys tie
                assert _pick(buf, n, fast) == want
                weight = weights_rng.random(n) + 0.05
                w_buf = np.zeros(n + 3)
                w_buf[:n] = weight
                assert _pick_cumulative(buf, w_buf, n, fast) == _pick_proportional(cand, weight, ref)
            assert fast.bit_generator.state == ref.bit_generator.state
