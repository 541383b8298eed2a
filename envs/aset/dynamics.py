"""The pure ASET model: stream arrivals, binding, and the fluid per-sub-window query outcomes.

No gymnasium here. Every latency formula lives once in this module:

* constraint (3), the scheduler's worst-case check at binding:
  ``worst = 2 (delta_i + d_n^s + 2 sigma_n^s) + b_i zeta_i + D_v  <=  D^i``
* the realised latency of a served query:
  ``2 (delta_i + d_n^s + eps) + b_i zeta_i + D_v + W_w``,  eps ~ N(0, (sigma_n^s)^2)
  where ``W_w`` is the worker's mean queueing wait in the sub-window (:func:`worker_wait_ms`);
  its failure fraction is analytic: ``P(fail) = Phi((2 (delta + d) + b zeta + D_v + W_w - D^i) / (2 sigma))``.
* a worker whose bound load exceeds its capacity serves ``C / L`` of its queries and rejects the rest
  (never happens when every binding respects constraint (2), kept as the model's safety valve);
  a stream with no feasible (variant, cluster) at arrival has all its queries rejected for its life.

Everything is vectorised over streams; only the binding of arriving streams is sequential (each
binding changes the loads the next one sees).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr

from envs.aset.policies import choose_worker
from envs.aset.types import Instance, State, Streams

#: Upper edges of the latency-bound classes of state feature (iv) (ms): [0,100), [100,200), [200,400), [400,inf).
LATENCY_BIN_EDGES_MS = np.array([100.0, 200.0, 400.0])
#: Upper edges of the frame-rate classes of feature (iv) (fps); the defaults 5/10/15/30 fall one per class.
RATE_BIN_EDGES_FPS = np.array([7.5, 12.5, 22.5])
NUM_CLASS_BINS = (LATENCY_BIN_EDGES_MS.size + 1) * (RATE_BIN_EDGES_FPS.size + 1)
#: Utilisation cap in the queueing formula (the wait is finite but large at a saturated worker).
MAX_UTILISATION = 0.999
#: Clip value of every normalised observation feature.
OBS_HIGH = 10.0
#: Features per worker in the observation: bound streams, responses delivered, load.
WORKER_FEATURES = 3


def transmission_ms(frame_kb: np.ndarray, uplink_mbps: float) -> np.ndarray:
    """b_i * zeta_i: time to send one frame of ``frame_kb`` kB over the uplink (ms)."""
    return frame_kb * 8.0 / uplink_mbps


def queueing_wait_ms(load_qps: np.ndarray, replicas: np.ndarray, service_rate_qps: np.ndarray) -> np.ndarray:
    """Mean waiting time (ms) of an M/D/c worker: Allen-Cunneen with Sakasegawa's M/M/c term.

    ``W = u^(sqrt(2(c+1)) - 1) / (2 c mu (1 - u))`` with u = L / (c mu) capped at MAX_UTILISATION and
    mu the service rate of one replica; exact for c = 1 (M/D/1: u / (2 mu (1 - u))).
    """
    c = replicas.astype(float)
    mu = service_rate_qps
    u = np.minimum(load_qps / (c * mu), MAX_UTILISATION)
    return 1000.0 * np.power(u, np.sqrt(2.0 * (c + 1.0)) - 1.0) / (2.0 * c * mu * (1.0 - u))


def worker_wait_ms(instance: Instance, served_qps: np.ndarray) -> np.ndarray:
    """Mean queueing wait (ms) of every worker serving ``served_qps`` under the instance's queueing model.

    ``per_replica``: the worker's load is split at random over its replicas, each an M/D/1 queue with
    service rate mu = service_headroom * C_v; ``pooled``: one M/D/c queue over the c replicas;
    ``none``: no waiting (latency = network + transmission + processing only).
    """
    mu = instance.service_headroom * instance.replica_capacity_qps
    if instance.queueing == "per_replica":
        ones = np.ones_like(instance.worker_replicas)
        return queueing_wait_ms(served_qps / instance.worker_replicas, ones, mu)
    if instance.queueing == "pooled":
        return queueing_wait_ms(served_qps, instance.worker_replicas, mu)
    return np.zeros_like(served_qps)


def failure_fraction(mean_latency_ms: np.ndarray, bound_ms: np.ndarray, jitter_sd_ms: np.ndarray) -> np.ndarray:
    """P(mean + 2 eps > D^i) with 2 eps ~ N(0, jitter_sd^2): the fraction of served queries that fail."""
    return ndtr((mean_latency_ms - bound_ms) / jitter_sd_ms)


def class_bins(bound_ms: np.ndarray, rate: np.ndarray) -> np.ndarray:
    """State class (0..15) of each stream: latency-bound bin * 4 + frame-rate bin."""
    lat = np.searchsorted(LATENCY_BIN_EDGES_MS, bound_ms, side="right")
    fps = np.searchsorted(RATE_BIN_EDGES_FPS, rate, side="right")
    return lat * (RATE_BIN_EDGES_FPS.size + 1) + fps


def arrival_rates_per_min(instance: Instance, window: int) -> np.ndarray:
    """lambda_s(t) of every antenna in window ``t`` (clients per minute)."""
    swing = np.sin(2.0 * math.pi * window / instance.rate_period_windows + instance.rate_phase)
    return instance.lam * (1.0 + instance.rate_variation * swing)


@dataclass
class Arrivals:
    """Streams arriving in one window, with what their binding needs."""

    streams: Streams
    delta_ms: np.ndarray
    trans_ms: np.ndarray
    accuracy_req: np.ndarray


def draw_arrivals(instance: Instance, window: int, rng: np.random.Generator) -> Arrivals:
    """Poisson client arrivals of every antenna in window ``window``, in random order within a sub-window."""
    k = instance.sub_windows
    counts = rng.poisson(arrival_rates_per_min(instance, window) / 60.0 * instance.window_s)
    n = int(counts.sum())
    sched = np.repeat(np.arange(instance.num_schedulers), counts)
    sub = rng.integers(0, k, size=n)
    cum = np.cumsum(instance.app_probs, axis=1)
    app = np.minimum((rng.random(n)[:, None] >= cum[sched]).sum(axis=1), instance.num_apps - 1)
    rate = instance.fps_choices[rng.integers(0, instance.fps_choices.size, size=n)]
    frame = rng.uniform(instance.frame_kb[0], instance.frame_kb[1], size=n)
    acc = instance.accuracy_choices[rng.integers(0, instance.accuracy_choices.size, size=n)]
    delta = rng.uniform(instance.access_delay_ms[0], instance.access_delay_ms[1], size=n)
    life_sub = np.maximum(1, np.ceil(rng.exponential(instance.mean_lifetime_s, size=n) / instance.sub_window_s))
    order = rng.permutation(n)
    order = order[np.argsort(sub[order], kind="stable")]
    start = window * k + sub[order]
    bound = instance.app_latency_ms[app[order]]
    streams = Streams(
        scheduler=sched[order],
        app=app[order],
        rate=rate[order],
        bound_ms=bound,
        worker=np.full(n, -1, dtype=np.int64),
        start_sub=start,
        end_sub=start + life_sub[order].astype(np.int64) - 1,
        base_ms=np.zeros(n),
        jitter_sd_ms=np.ones(n),
        class_bin=class_bins(bound, rate[order]),
    )
    return Arrivals(streams, delta[order], transmission_ms(frame[order], instance.uplink_mbps), acc[order])


def static_feasibility(instance: Instance, arrivals: Arrivals) -> np.ndarray:
    """(A, W) constraints (1), (3), (4) of every arrival and worker (capacity (2) is checked at binding)."""
    s = arrivals.streams
    worst = 2.0 * arrivals.delta_ms[:, None] + instance.e2e_key_sw[s.scheduler] + arrivals.trans_ms[:, None]
    latency_ok = worst <= s.bound_ms[:, None]
    accuracy_ok = instance.worker_accuracy[None, :] >= arrivals.accuracy_req[:, None]
    return latency_ok & accuracy_ok


@dataclass
class WindowResult:
    """What one decision window produced (counts are queries; arrays per sub-window k and worker w)."""

    streams_kw: np.ndarray       # (K, W) bound live streams
    served_kw: np.ndarray        # (K, W) responses delivered per second (<= capacity)
    load_kw: np.ndarray          # (K, W) bound load L_w (queries/s)
    class_rate_kc: np.ndarray    # (K, 16) query rate of live streams per state class
    app_queries: np.ndarray      # (A,) queries issued in the window
    app_succeeded: np.ndarray    # (A,)
    app_failed: np.ndarray       # (A,)
    app_rejected: np.ndarray     # (A,)
    sub_queries: np.ndarray      # (K,)
    sub_succeeded: np.ndarray    # (K,)
    sub_failed: np.ndarray       # (K,)
    sub_rejected: np.ndarray     # (K,)
    arrivals: int
    rejected_at_arrival: int

    @property
    def totals(self) -> tuple[float, float, float, float]:
        """(queries, succeeded, failed, rejected) of the window."""
        return (
            float(self.app_queries.sum()),
            float(self.app_succeeded.sum()),
            float(self.app_failed.sum()),
            float(self.app_rejected.sum()),
        )


def simulate_window(
    instance: Instance,
    state: State,
    policy: int,
    arrival_rng: np.random.Generator,
    choice_rng: np.random.Generator,
) -> WindowResult:
    """Advance ``state`` by one window: streams arriving in it are bound by static ``policy``.

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
            w = choose_worker(policy, cand, instance.net_key_sw[s], instance.e2e_key_sw[s], load, cap, choice_rng)
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
        fail = failure_fraction(st.base_ms[ids] + wait_ms[w_safe], st.bound_ms[ids], st.jitter_sd_ms[ids])
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


def observation_features(instance: Instance, result: WindowResult | None) -> np.ndarray:
    """(3W + 16, K) float32 state tensor of the paper's Section IV-B, normalised and clipped to [0, OBS_HIGH].

    Rows: bound streams per worker (x mean fps / capacity), responses delivered / capacity,
    load / capacity, then the 16 class query rates / total capacity; columns: sub-windows.
    """
    n_w, k_sub = instance.num_workers, instance.sub_windows
    out = np.zeros((WORKER_FEATURES * n_w + NUM_CLASS_BINS, k_sub), dtype=np.float32)
    if result is None:
        return out
    cap = instance.worker_capacity_qps
    mean_fps = float(instance.fps_choices.mean())
    out[:n_w] = (result.streams_kw * mean_fps / cap).T
    out[n_w : 2 * n_w] = (result.served_kw / cap).T
    out[2 * n_w : 3 * n_w] = (result.load_kw / cap).T
    out[3 * n_w :] = (result.class_rate_kc / cap.sum()).T
    np.clip(out, 0.0, OBS_HIGH, out=out)
    return out
