"""The pure model of OINC-v0: shares, latency, reward, reservation and retraining formulas (numpy only).

Every formula of the paper lives here once; the env, the retraining controllers, the baselines and the
tests call these functions. Notation follows the paper: device i, edge j, job k; f_j CPU (Hz), B_j
bandwidth; z_ij compute share, v_ij bandwidth share, p_j^r retraining share, f_j^t = 1 - p_j^r.
"""

from __future__ import annotations

import numpy as np

#: Weights of the W = 4 discrete share levels of the action (level l has weight 2**l).
LEVEL_WEIGHTS = np.array([1.0, 2.0, 4.0, 8.0])
NUM_LEVELS = LEVEL_WEIGHTS.size
#: Slot length in seconds (the paper's 1-s decision interval).
SLOT_S = 1.0
#: Floor on the time left for computing when estimating the compute an SLO needs (seconds).
MIN_COMPUTE_WINDOW_S = 0.05


# ----------------------------------------------------------------------------- inference
def normalised_group_shares(group: np.ndarray, weights: np.ndarray, num_groups: int) -> np.ndarray:
    """weight_i / sum of the weights in i's group: the shares of one edge sum to 1 (constraints 1c, 3a).

    ``group`` (I,) or batched (N, I) (one row per env, groups per row); the batched totals are one
    ``bincount`` over the rows laid end to end, so each row's sums are the 1-D sums, bit for bit."""
    if group.ndim == 1:
        totals = np.bincount(group, weights=weights, minlength=num_groups)
        return weights / totals[group]
    totals = group_totals(group, weights, num_groups)
    return weights / totals[np.arange(group.shape[0])[:, None], group]


def group_totals(group: np.ndarray, weights: np.ndarray, num_groups: int) -> np.ndarray:
    """Row-wise ``np.bincount(group[n], weights[n], minlength=num_groups)`` of (N, I) arrays -> (N, num_groups),
    with the same additions in the same order (entries of weight 0.0 add nothing)."""
    rows = group.shape[0]
    flat = (group + num_groups * np.arange(rows)[:, None]).ravel()
    return np.bincount(flat, weights=np.broadcast_to(weights, group.shape).ravel(),
                       minlength=rows * num_groups).reshape(rows, num_groups)


def shares_from_levels(
    edge: np.ndarray, compute_level: np.ndarray, bandwidth_level: np.ndarray, num_edges: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per-device (z_frac, v) from the discrete action: the fraction of its edge's inference compute
    and of its edge's band. Multiply z_frac by f_j^t to get z_ij."""
    z_frac = normalised_group_shares(edge, LEVEL_WEIGHTS[compute_level], num_edges)
    v = normalised_group_shares(edge, LEVEL_WEIGHTS[bandwidth_level], num_edges)
    return z_frac, v


def transmission_time(data_bits: np.ndarray, full_rate_bps: np.ndarray, bandwidth_share: np.ndarray) -> np.ndarray:
    """d_i / r_ij with r_ij = v_ij · B_j log2(1 + rho g / sigma^2) (``full_rate_bps`` is the v = 1 rate)."""
    return data_bits / (bandwidth_share * full_rate_bps)


def computation_time(cycles: np.ndarray, cpu_hz: np.ndarray, compute_share: np.ndarray) -> np.ndarray:
    """c_i / (z_ij f_j). The latency tau_ij is ``transmission_time + computation_time``; the env keeps the
    two terms apart because the pause rule needs the upload time on its own."""
    return cycles / (compute_share * cpu_hz)


def task_rewards(latency_s: np.ndarray, slo_s: np.ndarray, psi: float) -> np.ndarray:
    """Eq. (4): R_i = -tau_i if tau_i <= SLO_i else -(tau_i + psi)."""
    return -latency_s - psi * (latency_s > slo_s)


def slot_reward(latency_s: np.ndarray, slo_s: np.ndarray, psi: float) -> float | np.ndarray:
    """Eq. (4): R_t = (1 / I_t) sum_i R_i,t (every device has one task per slot); a float for (I,)
    latencies, an array over the leading axes for batched (..., I) ones."""
    reward = task_rewards(latency_s, slo_s, psi).mean(axis=-1)
    return float(reward) if np.ndim(reward) == 0 else reward


def pause_edges(
    edge: np.ndarray,
    latency_s: np.ndarray,
    latency_full_edge_s: np.ndarray,
    upload_s: np.ndarray,
    cycles: np.ndarray,
    slo_s: np.ndarray,
    cpu_hz: np.ndarray,
    inference_share: np.ndarray,
    candidates: np.ndarray,
) -> np.ndarray:
    """The pause-for-inference rule (paper: "when the reserved resources for inference are insufficient,
    OINC ... temporarily pauses retraining jobs", B15).

    Edge j (among ``candidates``, a (J,) bool of edges running retraining) pauses retraining for the slot
    when (a) the reserve is insufficient: the compute its tasks need to meet their SLOs after their
    uploads, sum_i c_i / ((SLO_i - upload_i) f_j) over tasks that can still meet it, exceeds f_j^t, and
    (b) giving inference the whole edge meets strictly more SLOs there. Returns a (J,) bool; with
    batched (N, I) task arrays and (N, J) edge arrays an (N, J) bool.
    """
    num_edges = cpu_hz.shape[-1]
    left = slo_s - upload_s
    savable = left > 0
    if edge.ndim == 1:
        need = np.bincount(edge[savable], weights=cycles[savable] / left[savable], minlength=num_edges) / cpu_hz
        misses_now = np.bincount(edge, weights=latency_s > slo_s, minlength=num_edges)
        misses_full = np.bincount(edge, weights=latency_full_edge_s > slo_s, minlength=num_edges)
    else:  # batched (N, I) / (N, J): the unsavable tasks add 0.0, which leaves every sum as the 1-D one
        need = group_totals(edge, np.where(savable, cycles / np.where(savable, left, 1.0), 0.0), num_edges) / cpu_hz
        misses_now = group_totals(edge, latency_s > slo_s, num_edges)
        misses_full = group_totals(edge, latency_full_edge_s > slo_s, num_edges)
    return candidates & (need > inference_share) & (misses_full < misses_now)


def sqrt_split(values: np.ndarray, group: np.ndarray, num_groups: int) -> np.ndarray:
    """Closed-form minimiser of sum_i a_i / x_i s.t. sum_{i in group} x_i = 1: x_i ∝ sqrt(a_i) (KKT)."""
    root = np.sqrt(values)
    return normalised_group_shares(group, root, num_groups)


def sqrt_split_latency(
    root_tx: np.ndarray, tx_sum: np.ndarray, root_c: np.ndarray, c_sum: np.ndarray, cpu_hz: np.ndarray
) -> np.ndarray:
    """tau of one task under ``sqrt_split`` on an edge (the inference heuristics' estimate).

    With v = sqrt(d/r) / sum sqrt(d/r) and z = sqrt(c) / sum sqrt(c), tau = d/(v r) + c/(z F) becomes
    sqrt(d/r) · sum sqrt(d/r) + sqrt(c) · sum sqrt(c) / F; the sums include the task itself.
    """
    return root_tx * tx_sum + root_c * c_sum / cpu_hz


def sqrt_split_total_increase(
    root_tx: np.ndarray, tx_sum: np.ndarray, root_c: np.ndarray, c_sum: np.ndarray, cpu_hz: np.ndarray
) -> np.ndarray:
    """Increase of an edge's total latency under ``sqrt_split``, (sum sqrt c)^2 / F + (sum sqrt(d/r))^2,
    when a task (root_c = sqrt c, root_tx = sqrt(d/r)) joins tasks with sums c_sum, tx_sum:
    (2 c_sum root_c + root_c^2) / F + 2 tx_sum root_tx + root_tx^2."""
    return (2 * c_sum * root_c + root_c**2) / cpu_hz + 2 * tx_sum * root_tx + root_tx**2


def levels_for_shares(
    shares: np.ndarray, group: np.ndarray, num_groups: int, cost: np.ndarray | None = None, shifts: int = 8
) -> np.ndarray:
    """Map continuous within-edge shares onto the W = 4 discrete levels (weights 1, 2, 4, 8).

    Only ratios inside an edge matter. Each share gets the level nearest in log2 scale to
    8 · share / (largest share of its edge) - delta (ratios beyond 8 saturate at level 0), and the edge's
    levels are lifted so that its largest is level 3. Without ``cost`` delta = 0. With ``cost`` (a_i of
    the objective sum_i a_i / share_i, e.g. c_i for compute or d_i / r_ij for bandwidth) every edge takes,
    among ``shifts`` offsets delta in [0, 1), the rounding of least objective: within 1.4 % of the best
    discrete levels on random cases of up to 5 tasks per edge (brute force in the tests).
    """
    largest = np.zeros(num_groups)
    np.maximum.at(largest, group, shares)
    log_ratio = np.log2(8.0 * shares / largest[group])
    deltas = np.linspace(0.0, 1.0, shifts, endpoint=False) if cost is not None else np.zeros(1)
    levels = np.clip(np.rint(log_ratio[None, :] - deltas[:, None]), 0, NUM_LEVELS - 1)
    top = np.zeros((deltas.size, num_groups))
    for d in range(deltas.size):
        np.maximum.at(top[d], group, levels[d])
    levels = (levels + (NUM_LEVELS - 1) - top[:, group]).astype(np.int64)
    if cost is None:
        return levels[0]
    weights = LEVEL_WEIGHTS[levels]
    objective = np.stack(
        [
            np.bincount(group, weights=weights[d], minlength=num_groups)
            * np.bincount(group, weights=cost / weights[d], minlength=num_groups)
            for d in range(deltas.size)
        ]
    )
    best = np.argmin(objective, axis=0)
    return levels[best[group], np.arange(group.size)]


# ----------------------------------------------------------------------------- reservation (Alg. 2)
def equal_share_upload_s(data_bits: np.ndarray, full_rate_bps: np.ndarray, num_edges: int) -> np.ndarray:
    """Upload time of each task with an equal bandwidth share (I/J devices per edge, mean rate over edges);
    ``data_bits`` (I,) or (..., I), e.g. a whole episode (T, I)."""
    num_devices = data_bits.shape[-1]
    per_edge = max(num_devices / num_edges, 1.0)
    return data_bits * per_edge / full_rate_bps.mean(axis=1)


def inference_need_hz(
    cycles: np.ndarray, slo_s: np.ndarray, upload_s: np.ndarray, min_window_s: float = MIN_COMPUTE_WINDOW_S
) -> float:
    """res_min's current term (B1): sum_i c_i / window_i in cycles per second.

    window_i = SLO_i - upload_i when at least ``min_window_s`` is left for computing; a task whose
    upload alone (nearly) exhausts its SLO cannot be saved by compute and only needs to finish within
    the slot (window = 1 slot), instead of inflating the need by c_i / eps. Batched (..., I) inputs give
    an array over the leading axes (each entry the 1-D sum, bit for bit).
    """
    need = np.sum(cycles / compute_window_s(slo_s, upload_s, min_window_s), axis=-1)
    return float(need) if np.ndim(need) == 0 else need


def compute_window_s(slo_s: np.ndarray, upload_s: np.ndarray, min_window_s: float = MIN_COMPUTE_WINDOW_S) -> np.ndarray:
    """Time left for computing within the SLO after the upload (1 slot for tasks that cannot meet it)."""
    left = slo_s - upload_s
    return np.where(left >= min_window_s, left, SLOT_S)


def reservation_share(
    free_hz: float | np.ndarray,
    res_min_hz: float | np.ndarray,
    alpha: float | np.ndarray,
    beta: float,
    num: int | np.ndarray,
    cpu_selected_hz: np.ndarray,
) -> np.ndarray:
    """Eq. (2) in consistent units (B2): p_j' = beta (sum_j f_j (1 - p_j) - res_min) / ((alpha + beta) num f_j')."""
    spare = np.maximum(free_hz - res_min_hz, 0.0)  # (elementwise, so batched arrays broadcast)
    return beta * spare / ((alpha + beta) * num * cpu_selected_hz)


def equal_split_latency_s(upload_s: np.ndarray, cycles: np.ndarray, inference_hz: np.ndarray) -> np.ndarray:
    """Alg. 2's latency estimate (B3): tasks spread evenly over the edges (I/J per edge) and every edge's
    inference compute f_j (1 - p_j) split equally among them; ``inference_hz`` is (..., J), the result
    is the mean latency (...). Uploads are those of an equal bandwidth split. Batched: ``upload_s`` and
    ``cycles`` (N, I) with ``inference_hz`` (N, ..., J) give (N, ...)."""
    num_devices = cycles.shape[-1]
    per_edge = num_devices / inference_hz.shape[-1]
    trailing = (1,) * (inference_hz.ndim - cycles.ndim)  # the mean over tasks broadcasts over inference_hz's axes
    cycles_mean = cycles.mean(axis=-1).reshape(cycles.shape[:-1] + trailing)
    upload_mean = upload_s.mean(axis=-1).reshape(upload_s.shape[:-1] + trailing)
    compute = per_edge * cycles_mean * np.mean(1.0 / np.maximum(inference_hz, 1e-9), axis=-1)
    return upload_mean + compute


# ----------------------------------------------------------------------------- retraining (Alg. 5)
def job_weight(deadline_s: np.ndarray, now_s: float, beta: float = 1.0) -> np.ndarray:
    """l_k(t) = beta_k / max(D_k - t, 1) (B5: inversely proportional to the time left to the deadline)."""
    return beta / np.maximum(deadline_s - now_s, 1.0)


def remaining_time_s(remaining_cycles: np.ndarray, share: np.ndarray | float, cpu_hz: np.ndarray | float) -> np.ndarray:
    """h_kj(t) = remaining workload / (p_j^r f_j) (eq. 8 in consistent units, B7); inf where p_j^r = 0."""
    rate = np.asarray(share, dtype=float) * np.asarray(cpu_hz, dtype=float)
    positive = rate > 0
    return np.where(positive, np.asarray(remaining_cycles, dtype=float) / np.where(positive, rate, 1.0), np.inf)


def job_density(weight: np.ndarray | float, time_s: np.ndarray | float) -> np.ndarray:
    """s_kj = l_k / h_kj: Alg. 5's density, the order of sequencing and of eq. (9)'s "denser" relation."""
    return np.asarray(weight, dtype=float) / time_s


def dispatch_costs(
    new_weight: float | np.ndarray,
    new_time: np.ndarray,
    queue_edge: np.ndarray,
    queue_weights: np.ndarray,
    queue_times: np.ndarray,
    queue_case: np.ndarray | None = None,
) -> np.ndarray:
    """Eq. (9) for every edge j without the 1/(1+eps) factor (it does not change the argmin, B8).

    C_kj = l_k h_kj + sum_{k' on j denser than k} l_k h_k'j + sum_{k' on j not denser} l_k' h_k'j, with
    density s = l / h (``job_density``). ``new_time`` is h_kj (J,) of the new job; the queue is given per
    job (edge, l, h). Infinite where the edge holds no retraining share (h_kj = inf). Returns (J,). The
    controller calls this; ``tests/oinc/test_oinc_formulas.py`` checks it against a job-by-job loop.

    Batched (the vector env): M new jobs at once, ``new_weight`` (M,), ``new_time`` (M, J), and one flat
    queue of all cases with ``queue_case`` (which case each queued job belongs to, cases in order and
    jobs in index order within a case); returns (M, J). Each case's per-edge sums are the same additions
    in the same order as its 1-D call (a 1-D call is the batch of one).
    """
    if queue_case is None:
        new_weight, new_time = np.reshape(new_weight, 1), new_time[None, :]
        costs = dispatch_costs(new_weight, new_time, queue_edge, queue_weights, queue_times,
                               np.zeros(queue_edge.size, np.int64))
        return costs[0]
    cases, num_edges = new_time.shape
    ok = np.isfinite(new_time)
    costs = np.where(ok, new_weight[:, None] * new_time, np.inf)
    weight_q = new_weight[queue_case]
    denser = job_density(queue_weights, queue_times) > job_density(weight_q, new_time[queue_case, queue_edge])
    extra = np.where(denser, weight_q * queue_times, queue_weights * queue_times)
    totals = np.bincount(queue_case * num_edges + queue_edge, weights=extra, minlength=cases * num_edges)
    costs = costs + totals.reshape(cases, num_edges)
    costs[~ok] = np.inf
    return costs


def largest_density(weights: np.ndarray, times: np.ndarray) -> int:
    """Index (into the given arrays) of the job of largest density s = l / h (B6: the text's argmax)."""
    return int(np.argmax(job_density(weights, times)))


def back_to_back_finish(group: np.ndarray, order_key: np.ndarray, times: np.ndarray) -> np.ndarray:
    """Finish offsets of jobs run back to back within each group (edge) in increasing ``order_key``
    (e.g. deadlines for EDF); jobs are given in any order, offsets are returned in that order."""
    if group.size == 0:
        return np.zeros(0)
    order = np.lexsort((order_key, group))
    g_sorted, t_sorted = group[order], times[order]
    csum = np.cumsum(t_sorted)
    starts = np.flatnonzero(np.r_[True, g_sorted[1:] != g_sorted[:-1]])
    offset = np.repeat(csum[starts] - t_sorted[starts], np.diff(np.r_[starts, group.size]))
    finish = np.empty(group.size)
    finish[order] = csum - offset
    return finish


def run_slot(
    remaining: np.ndarray, rate_hz: np.ndarray, slot_start_s: float | np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One slot of retraining at ``rate_hz`` (u_kj f_j): (remaining after, finished mask, finish times).

    A job finishes when its remaining workload reaches 0; its completion time is the exact instant within
    the slot, slot_start + remaining / rate (b_k of Sec. III-C, fractional). Any shape; ``slot_start_s``
    a float or an array broadcasting to ``remaining`` (one slot start per env of a batch).
    """
    after = remaining - rate_hz * SLOT_S
    done = (after <= 0) & (rate_hz > 0)
    finish = np.full(remaining.shape, np.nan)
    start = slot_start_s if np.ndim(slot_start_s) == 0 else np.broadcast_to(slot_start_s, remaining.shape)[done]
    finish[done] = start + remaining[done] / rate_hz[done]
    return np.maximum(after, 0.0), done, finish
