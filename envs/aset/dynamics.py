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

import bisect
import math
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr

from envs.aset.policies import LOAD_EPS_QPS, TIE_RTOL
from envs.aset.types import Instance, State, Streams

#: Upper edges of the latency-bound classes of state feature (iv) (ms): [0,100), [100,200), [200,400), [400,inf).
LATENCY_BIN_EDGES_MS = np.array([100.0, 200.0, 400.0])
#: Upper edges of the frame-rate classes of feature (iv) (fps); the defaults 5/10/15/30 fall one per class.
RATE_BIN_EDGES_FPS = np.array([7.5, 12.5, 22.5])
NUM_CLASS_BINS = (LATENCY_BIN_EDGES_MS.size + 1) * (RATE_BIN_EDGES_FPS.size + 1)
#: Utilisation cap in the queueing formula (the wait is finite but large at a saturated worker).
MAX_UTILISATION = 0.999
#: z-scores beyond which ``ndtr`` returns exactly 0 / exactly 1 in double precision (with margin).
CERTAIN_FAIL_Z_LOW, CERTAIN_FAIL_Z_HIGH = -38.5, 9.0
#: Sub-windows whose outcomes are computed together (dense arrays of ~OUTCOME_BLOCK x 1000 streams stay in cache).
OUTCOME_BLOCK = 5
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
    """P(mean + 2 eps > D^i) with 2 eps ~ N(0, jitter_sd^2): the fraction of served queries that fail.

    The normal CDF is evaluated only where the outcome is uncertain: in double precision ``ndtr(z)`` is
    exactly 0 for z <= -37.7 and exactly 1 for z >= 8.3, so outside (CERTAIN_FAIL_Z_LOW, CERTAIN_FAIL_Z_HIGH)
    the result is set directly; most streams are either far inside their bound or at a saturated worker.
    """
    z = (mean_latency_ms - bound_ms) / jitter_sd_ms
    out = (z >= CERTAIN_FAIL_Z_HIGH).astype(float)
    mid = (z > CERTAIN_FAIL_Z_LOW) & (z < CERTAIN_FAIL_Z_HIGH)
    out[mid] = ndtr(z[mid])
    return out


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


#: Policies whose keys are fixed per scheduler (action -> (key table, maximise)): closest, farthest, cheaper,
#: least impedance. Their candidates are walked in key order, so a choice usually looks at one or two workers.
_STATIC_EXTREME = {0: ("net_key_sw", False), 2: ("net_key_sw", True), 3: ("e2e_key_sw", True),
                   6: ("e2e_key_sw", False)}
_LOAD_BALANCING, _RANDOM_LATENCY, _RANDOM_LOAD = 1, 4, 5


def _pick(ties: list[int], rng: np.random.Generator) -> int:
    """The tie-break of the policies' rules (envs/aset/policies.py): ``ties`` in worker order, one draw if > 1."""
    return ties[0] if len(ties) == 1 else ties[int(rng.integers(len(ties)))]


def _pick_cumulative(cand: list[int], weights: list[float], rng: np.random.Generator) -> int:
    """Random-proportional choice as the policies' rules make it (sequential cumsum, one draw, right search)."""
    cum, total = [], 0.0
    for x in weights:
        total += x
        cum.append(total)
    idx = bisect.bisect_right(cum, rng.random() * total)
    return cand[min(idx, len(cand) - 1)]


def _bind_arrivals(
    instance: Instance,
    st: Streams,
    arr: Arrivals,
    offset: int,
    window: int,
    policy: int,
    choice_rng: np.random.Generator,
) -> np.ndarray:
    """Bind the window's arrivals (``st[offset:]``) in arrival order; return the (K, W) load after each sub-window's bindings.

    Sequential by nature: each binding raises the load the next arrival's capacity check (2) sees. The
    load at the start of sub-window k is the bound rate of the streams live before it; the arrivals of k
    then add to it in arrival order, exactly as ``np.bincount`` would sum them (index order), so the (K, W)
    loads returned equal a bincount over every stream live in k.

    Per arrival this applies the rules of envs/aset/policies.py, once, in Python scalars (numpy per-call
    overhead dominated at ~50 workers), exactly as the one-arrival specification ``_reference_choose_worker``
    (tests/aset/test_aset_fast_equals_reference.py) does: the same comparisons, tie tolerance, sequential cumulative sums and draws
    from ``choice_rng``, so the choices are identical (tests/aset/test_aset_fast_equals_reference.py). What
    depends only on the arrival (static feasibility (1), (3), (4), its key order) is computed once per window.
    """
    if policy not in range(7):
        raise ValueError(f"policy={policy!r} is invalid: expected an integer in [0, 6]")
    k_sub, n_w = instance.sub_windows, instance.num_workers
    cap = instance.worker_capacity_qps
    cap_eps, cap_list = (cap + 1e-9).tolist(), cap.tolist()
    feas = static_feasibility(instance, arr)
    sched = arr.streams.scheduler
    a_rate = arr.streams.rate.tolist()
    counts = feas.sum(axis=1).tolist()
    extreme = policy in _STATIC_EXTREME
    if extreme:
        table, maximise = _STATIC_EXTREME[policy]
        key = getattr(instance, table)[sched]
        order = np.argsort(np.where(feas, -key if maximise else key, np.inf), axis=1, kind="stable").tolist()
        keys = key.tolist()
    else:
        cols = feas.nonzero()[1].tolist()
        ends = np.cumsum(counts).tolist()
        cand_lists = [cols[e - c : e] for c, e in zip(counts, ends)]
        inv_e2e = (1.0 / instance.e2e_key_sw[sched]).tolist() if policy == _RANDOM_LATENCY else []
    first_of_sub = np.searchsorted(arr.streams.start_sub, window * k_sub + np.arange(k_sub + 1)).tolist()
    start, end, worker, rate = st.start_sub, st.end_sub, st.worker, st.rate
    load_kw = np.empty((k_sub, n_w))
    chosen = [-1] * len(a_rate)
    for k in range(k_sub):
        g = window * k_sub + k
        bound_live = (start < g) & (end >= g) & (worker >= 0)
        load = np.bincount(worker[bound_live], weights=rate[bound_live], minlength=n_w).tolist()
        lo, hi = first_of_sub[k], first_of_sub[k + 1]
        for j in range(lo, hi):
            r = a_rate[j]
            w = -1
            if extreme:
                ks, ties = keys[j], []
                best = tol = 0.0
                for v in order[j][: counts[j]]:
                    if not load[v] + r <= cap_eps[v]:
                        continue
                    if not ties:
                        best = ks[v]
                        tol = TIE_RTOL * max(1.0, abs(best))
                    elif not abs(ks[v] - best) <= tol:
                        break  # keys only move further from the best from here on
                    ties.append(v)
                if ties:
                    w = _pick(sorted(ties), choice_rng)
            else:
                cand = [v for v in cand_lists[j] if load[v] + r <= cap_eps[v]]
                if cand and policy == _LOAD_BALANCING:
                    best = min(load[v] for v in cand)
                    tol = TIE_RTOL * max(1.0, abs(best))
                    w = _pick([v for v in cand if abs(load[v] - best) <= tol], choice_rng)
                elif cand and policy == _RANDOM_LATENCY:
                    w = _pick_cumulative(cand, [inv_e2e[j][v] for v in cand], choice_rng)
                elif cand and policy == _RANDOM_LOAD:
                    w = _pick_cumulative(cand, [cap_list[v] / max(load[v], LOAD_EPS_QPS) for v in cand], choice_rng)
            if w >= 0:
                load[w] += r
                chosen[j] = w
        worker[offset + lo : offset + hi] = chosen[lo:hi]
        load_kw[k] = load
    return load_kw


def _outcomes(
    instance: Instance, st: Streams, load_kw: np.ndarray, served_qps: np.ndarray, g0: int, k_lo: int, k_hi: int
) -> tuple[np.ndarray, ...]:
    """Per-(sub-window, class) sums of sub-windows ``k_lo..k_hi-1``: queries, succeeded, failed, rejected per
    app, bound streams per worker, query rate per state class.

    On dense (sub-windows, streams) arrays: a stream not live in sub-window k issues 0 queries there and
    adds +0.0 to every sum, which leaves each sum (taken in stream index order) as a per-sub-window loop
    over the live streams would give it.
    """
    n_w, n_a, dt = instance.num_workers, instance.num_apps, instance.sub_window_s
    cap = instance.worker_capacity_qps
    n_k = k_hi - k_lo
    k_col = np.arange(n_k)[:, None]
    g = g0 + k_lo + k_col
    live = (st.start_sub <= g) & (st.end_sub >= g)
    bound = st.worker >= 0
    load = load_kw[k_lo:k_hi]
    # per-worker tables with an extra column W for unbound streams (served share 0, no wait)
    served_share = np.zeros((n_k, n_w + 1))
    served_share[:, :n_w] = np.where(load > cap, cap / np.maximum(load, 1e-12), 1.0)
    wait_ms = np.zeros((n_k, n_w + 1))
    wait_ms[:, :n_w] = worker_wait_ms(instance, served_qps[k_lo:k_hi])
    kw = k_col * (n_w + 1) + np.where(bound, st.worker, n_w)
    queries = np.where(live, st.rate * dt, 0.0)
    served = queries * served_share.take(kw)
    fail = failure_fraction(st.base_ms + wait_ms.take(kw), st.bound_ms, st.jitter_sd_ms)
    failed = served * fail
    key = (k_col * n_a + st.app).ravel()
    size = n_k * n_a
    q_ka = np.bincount(key, weights=queries.ravel(), minlength=size).reshape(n_k, n_a)
    s_ka = np.bincount(key, weights=(served - failed).ravel(), minlength=size).reshape(n_k, n_a)
    f_ka = np.bincount(key, weights=failed.ravel(), minlength=size).reshape(n_k, n_a)
    r_ka = np.bincount(key, weights=(queries - served).ravel(), minlength=size).reshape(n_k, n_a)
    streams_kw = np.bincount(kw.ravel(), weights=live.ravel(), minlength=n_k * (n_w + 1))
    class_rate = np.bincount((k_col * NUM_CLASS_BINS + st.class_bin).ravel(), weights=(live * st.rate).ravel(),
                             minlength=n_k * NUM_CLASS_BINS).reshape(n_k, NUM_CLASS_BINS)
    return q_ka, s_ka, f_ka, r_ka, streams_kw.reshape(n_k, n_w + 1)[:, :n_w], class_rate


def simulate_window(
    instance: Instance,
    state: State,
    policy: int,
    arrival_rng: np.random.Generator,
    choice_rng: np.random.Generator,
) -> WindowResult:
    """Advance ``state`` by one window: streams arriving in it are bound by static ``policy``.

    Arrivals come from ``arrival_rng`` only (common random numbers across policies); random policy
    choices from ``choice_rng``. The outcomes do not feed back into binding, so all bindings are done
    first and the fluid outcomes of the K sub-windows are then computed at once on (K, streams) arrays;
    every sum runs over the same terms in the same order as a per-sub-window computation would, so the
    result is bit-identical to it (tests/aset/test_aset_fast_equals_reference.py).
    """
    k_sub = instance.sub_windows
    cap = instance.worker_capacity_qps
    arr = draw_arrivals(instance, state.window, arrival_rng)
    offset = len(state.streams)
    state.streams.extend(arr.streams)
    st = state.streams
    load_kw = _bind_arrivals(instance, st, arr, offset, state.window, policy, choice_rng)
    # --- latency terms of the newly bound streams
    w_new = st.worker[offset:]
    ok = w_new >= 0
    idx, w_ok = np.flatnonzero(ok), w_new[ok]
    a_sched = arr.streams.scheduler
    st.base_ms[offset + idx] = (
        2.0 * arr.delta_ms[idx] + instance.rtt_ms_sw[a_sched[idx], w_ok] + arr.trans_ms[idx]
        + instance.worker_delay_ms[w_ok]
    )
    st.jitter_sd_ms[offset + idx] = instance.jitter_sd_ms_sw[a_sched[idx], w_ok]
    # --- fluid outcomes of every stream in every sub-window, in blocks of sub-windows (cache-sized)
    served_qps = np.minimum(load_kw, cap)
    parts = [_outcomes(instance, st, load_kw, served_qps, state.window * k_sub, lo, min(lo + OUTCOME_BLOCK, k_sub))
             for lo in range(0, k_sub, OUTCOME_BLOCK)]
    q_ka, s_ka, f_ka, r_ka, streams_kw, class_rate = (np.concatenate(x) for x in zip(*parts))
    # cumsum adds the sub-windows' rows one after another, as a running += would
    res = WindowResult(
        streams_kw=streams_kw, served_kw=served_qps, load_kw=load_kw, class_rate_kc=class_rate,
        app_queries=np.cumsum(q_ka, axis=0)[-1], app_succeeded=np.cumsum(s_ka, axis=0)[-1],
        app_failed=np.cumsum(f_ka, axis=0)[-1], app_rejected=np.cumsum(r_ka, axis=0)[-1],
        sub_queries=q_ka.sum(axis=1), sub_succeeded=s_ka.sum(axis=1), sub_failed=f_ka.sum(axis=1),
        sub_rejected=r_ka.sum(axis=1), arrivals=len(arr.streams), rejected_at_arrival=int((~ok).sum()),
    )
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
