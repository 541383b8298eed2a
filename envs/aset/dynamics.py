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

The two loops over streams, the sequential binding of arriving streams (each binding changes the loads
the next one sees) and the per-sub-window outcome sums, are compiled with numba (``cache=True``: compiled
once per machine, about 5 s, then loaded from ``__pycache__`` in about 0.3 s); they keep every comparison, draw and
summation order of the numpy/Python code they replaced, so results are bit-identical to it
(tests/aset/test_aset_fast_equals_reference.py). So are the smaller per-window steps that were numpy glue
(the arrangement of the arrivals after numpy's draws, static feasibility, the latency terms of new streams):
elementwise, with the same expressions summed in the same order. What remains of a window's cost (about
0.5 ms with 16 antennas at 60 clients/min) is mostly these loops over (live stream, sub-window) pairs, the
normal CDF of the uncertain ones and numpy's draws; the native vector env (envs/aset/vector.py) batches
only what comes after them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba
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


@numba.njit(cache=True)
def class_bins(bound_ms: np.ndarray, rate: np.ndarray) -> np.ndarray:
    """State class (0..15) of each stream: latency-bound bin * 4 + frame-rate bin (a bin: how many of
    its upper edges are <= the value, i.e. ``np.searchsorted(edges, value, side="right")``)."""
    out = np.empty(bound_ms.shape[0], np.int64)
    for i in range(bound_ms.shape[0]):
        lat = fps = 0
        for edge in LATENCY_BIN_EDGES_MS:
            if edge <= bound_ms[i]:
                lat += 1
        for edge in RATE_BIN_EDGES_FPS:
            if edge <= rate[i]:
                fps += 1
        out[i] = lat * (RATE_BIN_EDGES_FPS.size + 1) + fps
    return out


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
    """Poisson client arrivals of every antenna in window ``window``, in random order within a sub-window.

    The draws (from ``rng``, in this order) are numpy's; what is built from them (the application
    picked by each uniform, the arrival order, lifetimes in sub-windows, classes) is compiled in
    :func:`_arrange_arrivals`.
    """
    k = instance.sub_windows
    counts = rng.poisson(arrival_rates_per_min(instance, window) / 60.0 * instance.window_s)
    n = int(counts.sum())
    sub = rng.integers(0, k, size=n)
    u_app = rng.random(n)
    rate_idx = rng.integers(0, instance.fps_choices.size, size=n)
    frame = rng.uniform(instance.frame_kb[0], instance.frame_kb[1], size=n)
    acc_idx = rng.integers(0, instance.accuracy_choices.size, size=n)
    delta = rng.uniform(instance.access_delay_ms[0], instance.access_delay_ms[1], size=n)
    life = rng.exponential(instance.mean_lifetime_s, size=n)
    perm = rng.permutation(n)
    sched, app, rate, bound, start, end, class_bin, delta, frame, acc = _arrange_arrivals(
        window * k, k, instance.sub_window_s, counts, sub, u_app, np.cumsum(instance.app_probs, axis=1),
        instance.fps_choices[rate_idx], frame, instance.accuracy_choices[acc_idx], delta, life, perm,
        instance.app_latency_ms,
    )
    streams = Streams(
        scheduler=sched, app=app, rate=rate, bound_ms=bound, worker=np.full(n, -1, dtype=np.int64),
        start_sub=start, end_sub=end, base_ms=np.zeros(n), jitter_sd_ms=np.ones(n), class_bin=class_bin,
    )
    return Arrivals(streams, delta, transmission_ms(frame, instance.uplink_mbps), acc)


@numba.njit(cache=True)
def _arrange_arrivals(
    g0: int, k_sub: int, sub_window_s: float, counts: np.ndarray, sub: np.ndarray, u_app: np.ndarray,
    cum_probs: np.ndarray, rate: np.ndarray, frame: np.ndarray, acc: np.ndarray, delta: np.ndarray,
    life_s: np.ndarray, perm: np.ndarray, app_latency_ms: np.ndarray,
) -> tuple[np.ndarray, ...]:
    """The arrivals built from the window's draws, in arrival order (returned: scheduler, app, rate, bound,
    start and end sub-window, class, then the access delay, frame size and accuracy requirement).

    Arrival ``j`` (in draw order) comes from antenna ``s`` (``counts[s]`` arrivals each, in antenna order),
    runs the first application whose cumulative probability exceeds its uniform (the last if none), lives
    ``max(1, ceil(lifetime / sub-window))`` sub-windows, and arrivals are ordered by sub-window, ties in the
    order of the random permutation ``perm`` (the stable sort numpy's ``argsort(kind="stable")`` gives).
    """
    n = sub.shape[0]
    n_apps = cum_probs.shape[1]
    sched = np.empty(n, np.int64)
    j = 0
    for s in range(counts.shape[0]):
        for _ in range(counts[s]):
            sched[j] = s
            j += 1
    order = np.empty(n, np.int64)
    j = 0
    for k in range(k_sub):  # stable counting sort of perm by sub-window
        for p in perm:
            if sub[p] == k:
                order[j] = p
                j += 1
    o_sched, o_app, o_rate = np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n)
    o_bound, o_start, o_end = np.empty(n), np.empty(n, np.int64), np.empty(n, np.int64)
    o_delta, o_frame, o_acc = np.empty(n), np.empty(n), np.empty(n)
    for j in range(n):
        i = order[j]
        s = sched[i]
        a = 0
        for c in range(n_apps):
            if u_app[i] >= cum_probs[s, c]:
                a += 1
        a = min(a, n_apps - 1)
        life_sub = max(1.0, np.ceil(life_s[i] / sub_window_s))
        o_sched[j], o_app[j], o_rate[j], o_bound[j] = s, a, rate[i], app_latency_ms[a]
        o_start[j] = g0 + sub[i]
        o_end[j] = o_start[j] + np.int64(life_sub) - 1
        o_delta[j], o_frame[j], o_acc[j] = delta[i], frame[i], acc[i]
    return (o_sched, o_app, o_rate, o_bound, o_start, o_end, class_bins(o_bound, o_rate), o_delta, o_frame,
            o_acc)


def static_feasibility(instance: Instance, arrivals: Arrivals) -> np.ndarray:
    """(A, W) constraints (1), (3), (4) of every arrival and worker (capacity (2) is checked at binding)."""
    s = arrivals.streams
    return _static_feasibility(arrivals.delta_ms, arrivals.trans_ms, s.bound_ms, arrivals.accuracy_req,
                               s.scheduler, instance.e2e_key_sw, instance.worker_accuracy)


@numba.njit(cache=True)
def _static_feasibility(delta: np.ndarray, trans: np.ndarray, bound: np.ndarray, acc_req: np.ndarray,
                        sched: np.ndarray, e2e_sw: np.ndarray, worker_acc: np.ndarray) -> np.ndarray:
    """Compiled :func:`static_feasibility`: the scheduler's worst case ``2 delta + e2e_key + b zeta <= D^i``
    (constraint (3), summed left to right) and the accuracy ``A_m >= A^i`` (4) of each (arrival, worker)."""
    out = np.empty((delta.shape[0], worker_acc.shape[0]), np.bool_)
    for j in range(delta.shape[0]):
        for v in range(worker_acc.shape[0]):
            worst = 2.0 * delta[j] + e2e_sw[sched[j], v] + trans[j]
            out[j, v] = worst <= bound[j] and worker_acc[v] >= acc_req[j]
    return out


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
#: least impedance; load balancing (1) takes the extreme of the worker loads instead.
_STATIC_EXTREME = {0: ("net_key_sw", False), 2: ("net_key_sw", True), 3: ("e2e_key_sw", True),
                   6: ("e2e_key_sw", False)}
_LOAD_BALANCING, _RANDOM_LATENCY, _RANDOM_LOAD = 1, 4, 5


@numba.njit(cache=True)
def _pick(ties: np.ndarray, n_ties: int, rng: np.random.Generator) -> int:
    """The policies' tie-break (envs/aset/policies.py): the only tie, else one uniform draw among ``ties[:n]``
    (in worker order). numba's ``Generator.integers(0, n)`` draws exactly what numpy's ``integers(n)`` draws."""
    return ties[0] if n_ties == 1 else ties[rng.integers(0, n_ties)]


@numba.njit(cache=True)
def _pick_cumulative(cand: np.ndarray, weights: np.ndarray, n: int, rng: np.random.Generator) -> int:
    """Random-proportional choice as the policies' rules make it: sequential cumulative sum, one uniform draw,
    the first cumulative weight strictly above it (``bisect_right``)."""
    total = 0.0
    for i in range(n):
        total += weights[i]
        weights[i] = total
    u = rng.random() * total
    idx = 0
    while idx < n and weights[idx] <= u:
        idx += 1
    return cand[min(idx, n - 1)]


@numba.njit(cache=True)
def _bind_kernel(
    policy: int, g0: int, k_sub: int, offset: int,
    start: np.ndarray, end: np.ndarray, worker: np.ndarray, rate: np.ndarray,
    first_of_sub: np.ndarray, feas: np.ndarray, sched: np.ndarray, key_sw: np.ndarray, maximise: bool,
    e2e_sw: np.ndarray, cap: np.ndarray, cap_eps: np.ndarray, tie_rtol: float, load_eps: float,
    rng: np.random.Generator, load_kw: np.ndarray,
) -> None:
    """The sequential part of :func:`_bind_arrivals`, compiled: per sub-window, the load of the streams live
    before it, then each arrival bound in order by ``policy``; ``worker`` is written in place.

    The load of sub-window k sums, per worker and in stream order (as ``np.bincount``), the bound streams
    live before it: the window's earlier streams (one stream-outer pass over all sub-windows), then the
    arrivals of earlier sub-windows, whose indices are all larger. A choice scans the candidates in worker
    order and applies the rule of envs/aset/policies.py: the extreme key (``key_sw[scheduler]``, or the load
    for load balancing) with its relative tie tolerance, or a cumulative random-proportional pick; every
    comparison, sum and draw from ``rng`` is the rule's.
    """
    n_w = cap.shape[0]
    ties = np.empty(n_w, np.int64)
    weights = np.empty(n_w)
    keys = np.empty(n_w)
    base = np.zeros((k_sub, n_w))
    for i in range(offset):
        if worker[i] >= 0:
            for k in range(max(start[i] + 1 - g0, 0), min(end[i] + 1 - g0, k_sub)):
                base[k, worker[i]] += rate[i]
    load = np.empty(n_w)
    for k in range(k_sub):
        g = g0 + k
        load[:] = base[k]
        for j in range(first_of_sub[k]):
            i = offset + j
            if worker[i] >= 0 and end[i] >= g:
                load[worker[i]] += rate[i]
        for j in range(first_of_sub[k], first_of_sub[k + 1]):
            r = rate[offset + j]
            s = sched[j]
            n_cand = 0
            for v in range(n_w):
                if feas[j, v] and load[v] + r <= cap_eps[v]:
                    ties[n_cand] = v
                    n_cand += 1
            if n_cand == 0:
                continue
            if policy == 4 or policy == 5:
                for c in range(n_cand):
                    v = ties[c]
                    weights[c] = 1.0 / e2e_sw[s, v] if policy == 4 else cap[v] / max(load[v], load_eps)
                w = _pick_cumulative(ties, weights, n_cand, rng)
            else:
                for c in range(n_cand):
                    keys[c] = load[ties[c]] if policy == 1 else key_sw[s, ties[c]]
                best = keys[0]
                for c in range(1, n_cand):
                    best = max(best, keys[c]) if maximise else min(best, keys[c])
                tol = tie_rtol * max(1.0, abs(best))
                n_ties = 0
                for c in range(n_cand):
                    if abs(keys[c] - best) <= tol:
                        ties[n_ties] = ties[c]
                        n_ties += 1
                w = _pick(ties, n_ties, rng)
            load[w] += r
            worker[offset + j] = w
        load_kw[k, :] = load


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
    then add to it in arrival order, so the (K, W) loads returned equal a bincount over every stream live in k.
    Static feasibility (1), (3), (4) is computed here in numpy, once per window; the loop runs in the
    compiled :func:`_bind_kernel`, which applies the rules of envs/aset/policies.py exactly as the one-arrival
    specification ``_reference_choose_worker`` (tests/aset/test_aset_fast_equals_reference.py) does, with the
    same draws from ``choice_rng``.
    """
    if policy not in range(7):
        raise ValueError(f"policy={policy!r} is invalid: expected an integer in [0, 6]")
    k_sub = instance.sub_windows
    cap = instance.worker_capacity_qps
    table, maximise = _STATIC_EXTREME.get(policy, ("e2e_key_sw", False))  # policies 1, 4, 5 ignore the table
    first_of_sub = np.searchsorted(arr.streams.start_sub, window * k_sub + np.arange(k_sub + 1))
    load_kw = np.empty((k_sub, instance.num_workers))
    _bind_kernel(policy, window * k_sub, k_sub, offset, st.start_sub, st.end_sub, st.worker, st.rate, first_of_sub,
                 static_feasibility(instance, arr), arr.streams.scheduler, getattr(instance, table), maximise,
                 instance.e2e_key_sw, cap, cap + 1e-9, TIE_RTOL, LOAD_EPS_QPS, choice_rng, load_kw)
    return load_kw


@numba.njit(cache=True)
def _fail_fractions(g0: int, start: np.ndarray, end: np.ndarray, worker: np.ndarray, base: np.ndarray,
                    bound: np.ndarray, jitter: np.ndarray, wait_ms: np.ndarray, kind: np.ndarray, fail: np.ndarray,
                    mid_at: np.ndarray, z_mid: np.ndarray) -> int:
    """Pass 1 of the outcomes: the failure fraction (:func:`failure_fraction`) of every stream in each
    sub-window it is live in.

    ``kind[i]`` is 0 when stream ``i`` certainly succeeds in all of them, 1 when it certainly fails in all,
    2 otherwise; only kind-2 streams get their fractions written, in (stream, sub-window) order, into
    ``fail``. Where a fraction is neither certainly 0 nor certainly 1, the z-score goes to ``z_mid`` and its
    position to ``mid_at`` instead (returns their count), for one numpy ``ndtr`` call (scipy's, not
    compiled) to fill in. The kind is decided from the worker's least and largest wait over the window:
    ``z = (base + wait - bound) / jitter`` is non-decreasing in the wait in floating point too (each
    rounded operation is monotone), so if the largest wait gives z <= CERTAIN_FAIL_Z_LOW every sub-window
    does (likewise for the least wait and CERTAIN_FAIL_Z_HIGH): the same fractions as evaluating each one.
    """
    n_k, n_w1 = wait_ms.shape
    wait_lo, wait_hi = wait_ms[0].copy(), wait_ms[0].copy()
    for k in range(1, n_k):
        for w in range(n_w1):
            wait_lo[w] = min(wait_lo[w], wait_ms[k, w])
            wait_hi[w] = max(wait_hi[w], wait_ms[k, w])
    c = m = 0
    for i in range(start.shape[0]):
        w = worker[i] if worker[i] >= 0 else n_w1 - 1
        if (base[i] + wait_hi[w] - bound[i]) / jitter[i] <= CERTAIN_FAIL_Z_LOW:
            kind[i] = 0
            continue
        if (base[i] + wait_lo[w] - bound[i]) / jitter[i] >= CERTAIN_FAIL_Z_HIGH:
            kind[i] = 1
            continue
        kind[i] = 2
        for k in range(max(start[i] - g0, 0), min(end[i] - g0 + 1, n_k)):
            z = (base[i] + wait_ms[k, w] - bound[i]) / jitter[i]
            if z >= CERTAIN_FAIL_Z_HIGH:
                fail[c] = 1.0
            elif z > CERTAIN_FAIL_Z_LOW:
                mid_at[m] = c
                z_mid[m] = z
                m += 1
            else:
                fail[c] = 0.0
            c += 1
    return m


@numba.njit(cache=True)
def _outcome_sums(g0: int, dt: float, start: np.ndarray, end: np.ndarray, worker: np.ndarray, rate: np.ndarray,
                  app: np.ndarray, class_bin: np.ndarray, served_share: np.ndarray, kind: np.ndarray, fail: np.ndarray,
                  out_ka: np.ndarray, streams_kw: np.ndarray, class_rate: np.ndarray) -> None:
    """Pass 2: per sub-window, the queries, succeeded, failed and rejected per app (``out_ka[0..3]``), the
    streams per worker and the query rate per state class, summed over live streams in stream order.

    A stream not live in a sub-window would add +0.0 to each sum (what the dense numpy form added), so
    skipping it leaves every sum as it was. Streams are the outer loop (each visits only the sub-windows it
    is live in); every (sub-window, app/worker/class) cell still receives its terms in stream order.
    ``kind`` and ``fail`` hold pass 1's failure fractions: 0.0 or 1.0 in every sub-window for kinds 0 and 1,
    else the next entries of ``fail`` (in the same (stream, sub-window) order).
    """
    n_k, n_w1 = served_share.shape
    c = 0
    for i in range(start.shape[0]):
        w = worker[i] if worker[i] >= 0 else n_w1 - 1
        a = app[i]
        certain = float(kind[i])  # the fraction of a kind-0 or kind-1 stream
        for k in range(max(start[i] - g0, 0), min(end[i] - g0 + 1, n_k)):
            queries = rate[i] * dt
            served = queries * served_share[k, w]
            if kind[i] == 2:
                failed = served * fail[c]
                c += 1
            else:
                failed = served * certain
            out_ka[0, k, a] += queries
            out_ka[1, k, a] += served - failed
            out_ka[2, k, a] += failed
            out_ka[3, k, a] += queries - served
            streams_kw[k, w] += 1.0
            class_rate[k, class_bin[i]] += rate[i]


def _outcomes(
    instance: Instance, st: Streams, load_kw: np.ndarray, served_qps: np.ndarray, g0: int
) -> tuple[np.ndarray, ...]:
    """Per-(sub-window, app) sums of every sub-window of the window starting at global sub-window ``g0``:
    queries, succeeded, failed, rejected (stacked, (4, K, A)); bound streams per worker; query rate per
    state class.

    Two compiled passes over the live streams (:func:`_fail_fractions`, :func:`_outcome_sums`) around one
    numpy ``ndtr`` call on the uncertain z-scores only. Every sum takes its terms in (stream index) order, as
    the per-sub-window computation before the speed-up did, so the results are identical to it.
    """
    n_w, n_a, k_sub = instance.num_workers, instance.num_apps, instance.sub_windows
    cap = instance.worker_capacity_qps
    # per-worker tables with an extra column W for unbound streams (served share 0, no wait)
    served_share = np.zeros((k_sub, n_w + 1))
    served_share[:, :n_w] = np.where(load_kw > cap, cap / np.maximum(load_kw, 1e-12), 1.0)
    wait_ms = np.zeros((k_sub, n_w + 1))
    wait_ms[:, :n_w] = worker_wait_ms(instance, served_qps)
    size = k_sub * len(st)
    kind = np.empty(len(st), dtype=np.int64)
    fail, mid_at, z_mid = np.empty(size), np.empty(size, dtype=np.int64), np.empty(size)
    m = _fail_fractions(g0, st.start_sub, st.end_sub, st.worker, st.base_ms, st.bound_ms, st.jitter_sd_ms, wait_ms,
                        kind, fail, mid_at, z_mid)
    fail[mid_at[:m]] = ndtr(z_mid[:m])
    out_ka = np.zeros((4, k_sub, n_a))
    streams_kw = np.zeros((k_sub, n_w + 1))
    class_rate = np.zeros((k_sub, NUM_CLASS_BINS))
    _outcome_sums(g0, instance.sub_window_s, st.start_sub, st.end_sub, st.worker, st.rate, st.app, st.class_bin,
                  served_share, kind, fail, out_ka, streams_kw, class_rate)
    return out_ka, streams_kw[:, :n_w], class_rate


@numba.njit(cache=True)
def _latency_terms(offset: int, worker: np.ndarray, sched: np.ndarray, delta: np.ndarray, trans: np.ndarray,
                   rtt_sw: np.ndarray, delay_w: np.ndarray, jitter_sw: np.ndarray, base_ms: np.ndarray,
                   jitter_sd_ms: np.ndarray) -> int:
    """Latency terms of the window's arrivals (``worker[offset:]``), in place: ``base = 2 delta + 2 d + b zeta
    + D_v`` (summed left to right) and the round-trip jitter sd of each bound one; returns how many found no
    feasible worker."""
    rejected = 0
    for j in range(sched.shape[0]):
        w = worker[offset + j]
        if w < 0:
            rejected += 1
            continue
        base_ms[offset + j] = 2.0 * delta[j] + rtt_sw[sched[j], w] + trans[j] + delay_w[w]
        jitter_sd_ms[offset + j] = jitter_sw[sched[j], w]
    return rejected


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
    rejected = _latency_terms(offset, st.worker, arr.streams.scheduler, arr.delta_ms, arr.trans_ms, instance.rtt_ms_sw,
                              instance.worker_delay_ms, instance.jitter_sd_ms_sw, st.base_ms, st.jitter_sd_ms)
    # --- fluid outcomes of every stream in every sub-window (compiled passes around one ndtr call)
    served_qps = np.minimum(load_kw, cap)
    out_ka, streams_kw, class_rate = _outcomes(instance, st, load_kw, served_qps, state.window * k_sub)
    # cumsum adds the sub-windows' rows one after another, as a running += would
    app_sums, sub_sums = np.cumsum(out_ka, axis=1)[:, -1], out_ka.sum(axis=2)
    res = WindowResult(
        streams_kw=streams_kw, served_kw=served_qps, load_kw=load_kw, class_rate_kc=class_rate,
        app_queries=app_sums[0], app_succeeded=app_sums[1], app_failed=app_sums[2], app_rejected=app_sums[3],
        sub_queries=sub_sums[0], sub_succeeded=sub_sums[1], sub_failed=sub_sums[2], sub_rejected=sub_sums[3],
        arrivals=len(arr.streams), rejected_at_arrival=rejected,
    )
    state.window += 1
    st.keep(st.end_sub >= state.window * k_sub)
    return res


def observation_features(instance: Instance, result: WindowResult | None) -> np.ndarray:
    """(3W + 16, K) float32 state tensor of the paper's Section IV-B, normalised and clipped to [0, OBS_HIGH].

    Rows: bound streams per worker (x mean fps / capacity), responses delivered / capacity,
    load / capacity, then the 16 class query rates / total capacity; columns: sub-windows.
    :func:`observation_batch` with one sub-env.
    """
    n_w, k_sub = instance.num_workers, instance.sub_windows
    if result is None:
        return np.zeros((WORKER_FEATURES * n_w + NUM_CLASS_BINS, k_sub), dtype=np.float32)
    cap = instance.worker_capacity_qps
    return observation_batch(
        cap[None], np.array([instance.fps_choices.mean()]), np.array([cap.sum()]), result.streams_kw[None],
        result.served_kw[None], result.load_kw[None], result.class_rate_kc[None],
    )[0]


def observation_batch(
    capacity: np.ndarray, mean_fps: np.ndarray, total_capacity: np.ndarray, streams_kw: np.ndarray,
    served_kw: np.ndarray, load_kw: np.ndarray, class_rate_kc: np.ndarray,
) -> np.ndarray:
    """The state tensors of N windows at once, (N, 3W + 16, K) float32: the one formula of the observation.

    ``capacity`` (N, W), ``mean_fps`` and ``total_capacity`` (N,) describe each window's instance;
    the other arrays are :class:`WindowResult`'s fields stacked on a leading N axis. Elementwise, so
    every entry is what one window's tensor holds (the vector env relies on it).
    """
    n, k_sub, n_w = streams_kw.shape
    out = np.empty((n, WORKER_FEATURES * n_w + NUM_CLASS_BINS, k_sub), dtype=np.float32)
    cap = capacity[:, :, None]
    # each quotient is computed in float64 and rounded to float32 on output (as an assignment would round it)
    rows = (streams_kw.transpose(0, 2, 1) * mean_fps[:, None, None], served_kw.transpose(0, 2, 1),
            load_kw.transpose(0, 2, 1))
    for f, numerator in enumerate(rows):
        np.divide(numerator, cap, out=out[:, f * n_w : (f + 1) * n_w], casting="same_kind")
    np.divide(class_rate_kc.transpose(0, 2, 1), total_capacity[:, None, None], out=out[:, 3 * n_w :],
              casting="same_kind")
    np.clip(out, 0.0, OBS_HIGH, out=out)
    return out
