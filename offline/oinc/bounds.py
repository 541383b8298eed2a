"""Clairvoyant lower bounds of OINC-v0's weighted sum, per episode (rung 5 of the ladder; ours, not the paper's).

:func:`episode_bounds` (``SPEC.bounds``) rebuilds one episode (the instance of ``instance_seed``, the draws of
reset seed ``reset_seed``: every task, drift event, job size and deadline) and solves two linear programmes
with HiGHS (``scipy.optimize.linprog``):

* ``weighted_sum_bound``: a lower bound on the episode's weighted sum (mean inference latency + mean
  retraining completion time) of **every** inference policy paired with **every** retraining controller and
  retraining share, hence also on the ladder's ``slo_weighted_sum`` (the penalty is >= 0);
* ``slo_weighted_sum_bound``: the same relaxation with the SLO penalty of
  :func:`offline.oinc.evaluation.slo_weighted_sum` priced in: a lower bound on the ladder's metric.

Why they are bounds (a relaxation: every schedule the env can produce maps to a feasible LP point whose
objective is at most the episode's metric).

*Jobs.* A drift event of device i at slot t_e creates a job only when i has no unfinished job, so the job
set depends on the policy. The LP takes every drift event e as a potential job with existence y_e in
[0, 1]: y_e = 1 for the first event of each device (no job can be outstanding then), and for two events
l < n of one device, if both are jobs then job l finished by t_n (at most one outstanding job per device):
work of l in slots before t_n >= w_l (y_l + y_n - 1). Events that do not become jobs have y = 0, x = 0.

*Capacity.* In slot t edge j gives inference f_j (1 - p_j^r) (all of f_j when it pauses retraining) and
retraining at most p_j^r f_j, so pooled over edges the compute a slot gives inference, U_t, plus the work
done on jobs in it is at most F = sum_j f_j. A job runs on one edge at a share below 1: at most f_max =
max_j f_j per second. x_eb is job e's work in time bucket b (``slot_group`` slots over the horizon, where a
job uses its arrival bucket from its arrival on; ``bucket_s`` seconds after it; then a tail bucket without
capacity limit from ``T_end``, which the LP never needs and which keeps the relaxation valid whatever the
schedule). Capacity and rate limits hold per bucket; a bucket's work counts at its start (or the arrival).

*Completion.* A job processed at rate <= R with mean busy time M (work-weighted mean of the instants it is
processed) completes at C >= M + w / (2R) (the mass w at density <= R ending at C has its mean at most
C - w / (2R)), and M >= sum_b start_b x_eb / w_e; so C_e - a_e >= sum_b (start_b - t_e) x_eb / w_e +
w_e / (2 f_max), and C_e - a_e >= w_e / f_max (alone on the fastest edge). A job the env censors at the
end of its drain phase counts T + drain_max_slots, later than ``T_end`` + w / (2 f_max) at the default cap
(checked).

*Inference.* In slot t, task i gets compute u_i with sum_i u_i <= U_t and u_i <= f_max, and band v_i with
sum_i v_i <= J (each edge's shares sum to 1), v_i <= 1. Hence (Cauchy-Schwarz) the slot's compute times
sum c_i / u_i >= (sum_i sqrt c_i)^2 / U_t, a convex function of U_t bounded below by its tangents, and
>= sum c_i / f_max; the upload times sum d_i / (v_i r_ij) >= max((sum sqrt(d_i / r_i,max))^2 / J,
sum d_i / r_i,max) with r_i,max the device's best full-band rate.

*SLO hits.* A task meets its SLO only if u_i >= q_i = c_i / (SLO_i - d_i / r_i,max) (q_i <= f_max, else it
cannot); h_t hits in slot t need U_t >= the sum of the h_t smallest q_i, a convex piecewise-linear function
of h_t written as its pieces. The penalty is ``SLO_PENALTY_S`` x max(0, threshold - sum_t h_t / (I T)).

*Ratio.* The metric is A + B / K: A the mean inference latency (plus the penalty), B the sum of completion
times, K >= K_lo (the devices with a drift event) the number of jobs. Since A >= 0, A + B / K >=
(K_lo A + B) / K, a linear-fractional objective over the relaxation, which the Charnes-Cooper
transformation turns into one LP (variables scaled by 1 / K, sum_e y_e = 1). The LP's optimum is at most
the metric of every policy on the episode, so the mean of the bounds over episodes bounds every policy's
mean on those episodes. Without drift events the metric is the mean inference latency (plus the penalty)
and the LP is solved directly.

What it leaves out (so the bound is not tight): edges are pooled (a task's compute and a job's work may be
spread over edges), jobs are not pinned to one edge, the four discrete share levels are relaxed, the
SLO condition uses each device's best rate with the whole band, and the K_lo / K weight on inference. At
Table II's size the pooled edges are not congested, so the bound sits near "every job alone on the fastest
edge" (about 28 s); splitting the edges into speed classes (jobs pinned to a class, capacity per class)
raised it by 4-8 % at 10-100x the solve time, so it is not used.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import sparse
from scipy.optimize import linprog

from envs.common.clairvoyance import episode_draws
from envs.oinc import dynamics as dyn
from envs.oinc.env import OINCEnv
from offline.oinc.evaluation import SLO_HIT_THRESHOLD, SLO_PENALTY_S

__all__ = ["BOUND_NAMES", "EpisodeData", "episode_bounds", "episode_data", "weighted_sum_lower_bound"]

BOUND_NAMES = ("weighted_sum_bound", "slo_weighted_sum_bound")
#: Env kwargs that choose the retraining side; the bounds hold for every controller, so they are ignored.
_CONTROLLER_KEYS = ("retraining", "retraining_share", "instance_seed")
GIGA = 1e9


class EpisodeData:
    """One episode's exogenous data in LP units (Gcycles, GHz, s): tasks (T, I), potential jobs, edges."""

    def __init__(self, env: OINCEnv) -> None:
        inst, draws, sc = env.instance, episode_draws(env), env.scenario  # the episode's draws
        assert draws is not None
        self.horizon = sc.horizon
        self.num_devices, self.num_edges = inst.num_devices, inst.num_edges
        self.cpu_ghz = inst.cpu_hz / GIGA
        self.best_rate_bps = inst.full_rate_bps.max(axis=1)
        self.slo_s = inst.slo_s
        self.cycles_g = draws.cycles / GIGA
        self.data_bits = draws.data_bits
        self.drain_max_slots = env.drain_max_slots
        event_t, event_i = np.nonzero(draws.drift_u < sc.drift_prob)  # row-major: sorted by slot
        self.job_slot = event_t.astype(np.int64)
        self.job_device = event_i.astype(np.int64)
        self.job_work_g = draws.job_cycles[event_t, event_i] / GIGA
        _, first = np.unique(self.job_device, return_index=True)
        self.job_first = np.zeros(self.job_slot.size, dtype=bool)
        self.job_first[first] = True


def episode_data(env_kwargs: dict[str, Any], instance_seed: int, reset_seed: int) -> EpisodeData:
    """The episode the ladder played: ``OINCEnv(**env_kwargs, instance_seed=...)`` reset with ``reset_seed``
    (the draws do not depend on the controller)."""
    kwargs = {k: v for k, v in dict(env_kwargs).items() if k not in _CONTROLLER_KEYS}
    env = OINCEnv(**kwargs, instance_seed=instance_seed)
    env.reset(seed=reset_seed)
    data = EpisodeData(env)
    env.close()
    return data


def _inference_terms(data: EpisodeData, tangents: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per slot: the upload lower bound (s, summed over tasks), the compute floor sum c / f_max, the
    tangent points U_m (GHz) and (sum sqrt c)^2 (Gcycles)."""
    upload_full = dyn.transmission_time(data.data_bits, data.best_rate_bps[None, :], 1.0)  # (T, I)
    upload = np.maximum(np.sqrt(upload_full).sum(axis=1) ** 2 / data.num_edges, upload_full.sum(axis=1))
    f_max = data.cpu_ghz.max()
    floor = dyn.computation_time(data.cycles_g, f_max, 1.0).sum(axis=1)
    total = data.cpu_ghz.sum()
    points = total * np.geomspace(1.0 / 400.0, 1.0, tangents)
    root_sum_sq = np.sqrt(data.cycles_g).sum(axis=1) ** 2
    return upload, floor, points, root_sum_sq


def _hit_needs(data: EpisodeData) -> np.ndarray:
    """(T, I) compute (GHz) each task needs to meet its SLO at best, sorted per slot; inf where it cannot."""
    upload = dyn.transmission_time(data.data_bits, data.best_rate_bps[None, :], 1.0)
    window = data.slo_s[None, :] - upload
    need = np.where(window > 0, data.cycles_g / np.where(window > 0, window, 1.0), np.inf)
    need[need > data.cpu_ghz.max()] = np.inf
    return np.sort(need, axis=1)


def weighted_sum_lower_bound(
    data: EpisodeData,
    *,
    slo: bool,
    bucket_s: int = 8,
    slot_group: int = 4,
    tangents: int = 8,
    threshold: float = SLO_HIT_THRESHOLD,
    penalty_s: float = SLO_PENALTY_S,
    hit_pieces: int = 10,
    method: str = "highs-ipm",
) -> float:
    """The LP bound of the module docstring (``slo``: with the SLO penalty). Raises RuntimeError with the
    episode's sizes if HiGHS does not report an optimum."""
    T, n_i = data.horizon, data.num_devices
    total, f_max = float(data.cpu_ghz.sum()), float(data.cpu_ghz.max())
    n_e = data.job_slot.size
    work = data.job_work_g
    # ---- buckets: slot_group slots over the horizon, bucket_s after it, then the unlimited tail from T_end
    span = max(np.ceil(work.sum() / total), np.ceil(work.max() / f_max) if n_e else 0.0) + bucket_s
    after = np.arange(T, T + span, bucket_s, dtype=float)
    t_end = float(T + bucket_s * after.size)
    if n_e and T + data.drain_max_slots < t_end + work.max() / (2 * f_max):
        raise ValueError(
            f"drain_max_slots={data.drain_max_slots} is too small for the OINC bound (censored jobs): expected "
            f">= {int(np.ceil(t_end + work.max() / (2 * f_max) - T))}"
        )
    inside = np.arange(0, T, slot_group, dtype=float)
    starts = np.concatenate([inside, after, [t_end]])
    lens = np.concatenate([np.minimum(slot_group, T - inside), np.full(after.size, float(bucket_s)), [np.inf]])
    n_b = starts.size
    # ---- variable layout: x (work per job and bucket), y (existence), Z (completion - arrival bounds),
    # phi (pairs l < n of one device: job l exists and finished by t_n), U, s, h, p, tau
    first_bucket = data.job_slot // slot_group
    counts = n_b - first_bucket
    x_off = np.concatenate([[0], np.cumsum(counts)])
    n_x = int(x_off[-1])
    pairs: list[tuple[int, int]] = []
    for device in np.unique(data.job_device):
        events = np.flatnonzero(data.job_device == device)
        pairs += [(int(l_job), int(n_job)) for a, l_job in enumerate(events) for n_job in events[a + 1:]]
    y0 = n_x
    z0 = y0 + n_e
    f0 = z0 + n_e
    u0 = f0 + len(pairs)
    s0 = u0 + T
    h0 = s0 + T
    p0 = h0 + (T if slo else 0)
    tau = p0 + (1 if slo else 0)
    n_var = tau + 1
    x_job = np.repeat(np.arange(n_e), counts)
    x_bucket = np.arange(n_x) - np.repeat(x_off[:-1], counts) + np.repeat(first_bucket, counts)

    rows: list[np.ndarray] = []
    cols: list[np.ndarray] = []
    vals: list[np.ndarray] = []
    n_ub = 0

    def add(r: np.ndarray, c: np.ndarray, v: np.ndarray) -> None:
        rows.append(np.asarray(r, dtype=np.int64))
        cols.append(np.asarray(c, dtype=np.int64))
        vals.append(np.asarray(v, dtype=float))

    # (2) rate caps x_eb <= f_max len_b y_e (buckets with a finite length)
    finite = np.isfinite(lens[x_bucket])
    idx = np.flatnonzero(finite)
    r = n_ub + np.arange(idx.size)
    add(r, idx, np.ones(idx.size))
    # a job may use only the part of its arrival bucket from its arrival on
    avail = np.minimum(lens[x_bucket], starts[x_bucket] + lens[x_bucket] - data.job_slot[x_job])
    add(r, y0 + x_job[idx], -f_max * avail[idx])
    n_ub += idx.size
    # (3) capacity: sum_e x_eb + U_b <= F len_b tau
    add(n_ub + x_bucket[idx], idx, np.ones(idx.size))
    add(n_ub + np.arange(T) // slot_group, u0 + np.arange(T), np.ones(T))
    add(n_ub + np.arange(n_b - 1), np.full(n_b - 1, tau), -total * lens[: n_b - 1])
    n_ub += n_b - 1
    # (4) Z_e >= sum_b (start_b - t_e) x_eb / w_e + w_e y_e / (2 f_max)
    add(n_ub + x_job, np.arange(n_x), (np.maximum(starts[x_bucket], data.job_slot[x_job]) - data.job_slot[x_job])
        / work[x_job])
    add(n_ub + np.arange(n_e), y0 + np.arange(n_e), work / (2 * f_max))
    add(n_ub + np.arange(n_e), z0 + np.arange(n_e), -np.ones(n_e))
    n_ub += n_e
    # (4b) Z_e >= w_e y_e / f_max: no job finishes faster than alone on the fastest edge
    add(n_ub + np.arange(n_e), y0 + np.arange(n_e), work / f_max)
    add(n_ub + np.arange(n_e), z0 + np.arange(n_e), -np.ones(n_e))
    n_ub += n_e
    # (5) pairs l < n of a device: phi_ln <= y_l; w_l phi_ln <= work of l before t_n; a job outstanding at
    # t_n (y_l - phi_ln = 1) completes after t_n: Z_l >= (t_n - t_l) (y_l - phi_ln)
    for pair, (l_job, n_job) in enumerate(pairs):
        # buckets starting before t_n (the one holding t_n counts whole: a relaxation)
        before = np.arange(first_bucket[l_job], (data.job_slot[n_job] + slot_group - 1) // slot_group)
        gap = float(data.job_slot[n_job] - data.job_slot[l_job])
        add([n_ub, n_ub], [f0 + pair, y0 + l_job], [1.0, -1.0])
        add(np.full(before.size + 1, n_ub + 1), np.r_[x_off[l_job] + before - first_bucket[l_job], f0 + pair],
            np.r_[-np.ones(before.size), work[l_job]])
        add([n_ub + 2] * 3, [y0 + l_job, f0 + pair, z0 + l_job], [gap, -gap, -1.0])
        n_ub += 3
    # (6) inference compute time: s_t >= tangents of G_t / U_t, s_t >= sum c / f_max
    upload, floor, points, g = _inference_terms(data, tangents)
    for point in points:
        t = np.arange(T)
        add(n_ub + t, s0 + t, -np.ones(T))
        add(n_ub + t, u0 + t, -g / point**2)
        add(n_ub + t, np.full(T, tau), 2 * g / point)
        n_ub += T
    t = np.arange(T)
    add(n_ub + t, s0 + t, -np.ones(T))
    add(n_ub + t, np.full(T, tau), floor)
    n_ub += T
    # (7) SLO hits: U_t >= N_t(k) + q_(k+1) (h_t - k); h_t <= savable tasks; p >= threshold - hits / (I T)
    if slo:
        need = _hit_needs(data)
        savable = np.isfinite(need).sum(axis=1)
        cum = np.concatenate([np.zeros((T, 1)), np.cumsum(np.where(np.isfinite(need), need, 0.0), axis=1)], axis=1)
        for k in np.unique(np.linspace(0, n_i - 1, min(hit_pieces, n_i)).round().astype(int)):
            t = np.flatnonzero(savable > k)
            q = need[t, k]
            add(n_ub + np.arange(t.size), h0 + t, q)
            add(n_ub + np.arange(t.size), u0 + t, -np.ones(t.size))
            add(n_ub + np.arange(t.size), np.full(t.size, tau), cum[t, k] - q * k)
            n_ub += t.size
        add(n_ub + np.arange(T), h0 + np.arange(T), np.ones(T))
        add(n_ub + np.arange(T), np.full(T, tau), -savable.astype(float))
        n_ub += T
        add(np.full(T + 2, n_ub), np.r_[h0 + np.arange(T), p0, tau],
            np.r_[np.full(T, -1.0 / (n_i * T)), -1.0, threshold])
        n_ub += 1
    a_ub = sparse.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n_ub, n_var))

    # equalities: (1) sum_b x_eb = w_e y_e; (6) device free at t_n iff no earlier job outstanding:
    # y_n = tau - sum_{l < n} (y_l - phi_ln) (first events: y = tau); (8) sum_e y_e = 1 (Charnes-Cooper)
    eq_r, eq_c, eq_v = [x_job], [np.arange(n_x)], [np.ones(n_x)]
    eq_r.append(np.arange(n_e))
    eq_c.append(y0 + np.arange(n_e))
    eq_v.append(-work)
    n_eq = n_e
    eq_r += [n_eq + np.arange(n_e), n_eq + np.arange(n_e)]
    eq_c += [y0 + np.arange(n_e), np.full(n_e, tau)]
    eq_v += [np.ones(n_e), -np.ones(n_e)]
    for pair, (l_job, n_job) in enumerate(pairs):
        eq_r.append(np.array([n_eq + n_job, n_eq + n_job]))
        eq_c.append(np.array([y0 + l_job, f0 + pair]))
        eq_v.append(np.array([1.0, -1.0]))
    n_eq += n_e
    firsts = np.flatnonzero(data.job_first)
    bounds = [(0.0, None)] * n_var
    k_lo = float(firsts.size)
    if n_e:
        eq_r.append(np.full(n_e, n_eq))
        eq_c.append(y0 + np.arange(n_e))
        eq_v.append(np.ones(n_e))
        n_eq += 1
        b_eq = np.zeros(n_eq)
        b_eq[-1] = 1.0
        weight = k_lo
    else:
        b_eq = np.zeros(n_eq)
        bounds[tau] = (1.0, 1.0)
        weight = 1.0
    a_eq = sparse.csr_matrix((np.concatenate(eq_v), (np.concatenate(eq_r), np.concatenate(eq_c))), shape=(n_eq, n_var))
    if n_eq == 0:
        a_eq = b_eq = None

    # objective: K_lo (mean inference latency + penalty) + sum_e (C_e - a_e) lower bounds, over sum_e y_e
    cost = np.zeros(n_var)
    cost[z0:f0] = 1.0
    cost[s0:s0 + T] = weight / (n_i * T)
    if slo:
        cost[p0] = weight * penalty_s
    cost[tau] = weight * upload.sum() / (n_i * T)
    result = linprog(cost, A_ub=a_ub, b_ub=np.zeros(n_ub), A_eq=a_eq, b_eq=b_eq, bounds=bounds, method=method)
    if result.status != 0:
        raise RuntimeError(
            f"OINC bound LP failed ({result.message}) for an episode with I={n_i}, J={data.num_edges}, T={T}, "
            f"{n_e} drift events, slo={slo}"
        )
    return float(result.fun)


def episode_bounds(env_kwargs: dict[str, Any], instance_seed: int, reset_seed: int) -> dict[str, float]:
    """``SPEC.bounds``: both LP bounds of one episode (seconds; lower bounds of the weighted sum and of the
    ladder's ``slo_weighted_sum``)."""
    data = episode_data(env_kwargs, instance_seed, reset_seed)
    return {
        "weighted_sum_bound": weighted_sum_lower_bound(data, slo=False),
        "slo_weighted_sum_bound": weighted_sum_lower_bound(data, slo=True),
    }
