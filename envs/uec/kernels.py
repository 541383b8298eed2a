"""UEC-v0's compiled code, all in this one file (numba's ``cache=True`` only notices edits to the file
of the function it compiles, so kernels and the formulas they call live together).

* The model's per-pair and per-slot formulas of reserved-task feasibility — :func:`pair_reach`,
  :func:`pair_reduction`, :func:`lindley_trajectory` and their loops — which ``envs.uec.dynamics``
  re-exports and wraps: UECEnv, RESCUE's tables and the vector env all run this one copy.
* The native vector env's kernels (``envs.uec.vector.UECVectorEnv``): :func:`step_batch`,
  :func:`observe_batch`, :func:`start_episode`. Each loops over the sub-envs (and their servers and
  pairs) of the batch's state arrays (leading axis N, see ``UECVectorEnv._specs``) and does what
  ``UECEnv.step`` / ``UECEnv._accept`` and the observation rows do, with the same float64 operations in
  the same order, so the numbers are bit-identical to the single env's (tests/uec/test_vector_env.py).
  The realised profit's ``log1p`` stays in numpy (``dynamics.resource_to_performance``: numpy's SIMD
  ``log1p`` may differ from libm's in the last bit), so :func:`step_batch` returns the work and factors.

No fastmath. Compiled once per machine, then loaded from ``__pycache__``.
"""

from __future__ import annotations

import numba
import numpy as np

#: Absolute tolerance (tera-MAC) when a block may use exactly a pair's slack (``dynamics.BLOCK_TOL``).
BLOCK_TOL = 1e-9
#: "No limit" for the longest feasible block (``dynamics.UNBOUNDED``).
UNBOUNDED = int(np.iinfo(np.int64).max)


# --- the model's compiled formulas (envs.uec.dynamics re-exports them and wraps the loops) -------

@numba.njit(cache=True)
def pair_reach(cum: np.ndarray, start: int, end: int, slack: float, t: int) -> int:
    """How far a block from slot ``t`` may reach under one pair [start, end] with slack ``slack``:
    ``searchsorted(cum, room, "right")`` with room = C[max(a, t)] + (s + BLOCK_TOL), i.e. one past the last
    x with C[x] ≤ room; ``UNBOUNDED`` when the pair does not bind (room ≥ C[max(b + 1, max(a, t))]).
    The one copy of this formula: ``dynamics.max_feasible_block`` and :func:`observe_batch` call it."""
    first = max(start, t)
    room = cum[first] + (slack + BLOCK_TOL)
    if not room < cum[max(end + 1, first)]:
        return UNBOUNDED
    lo, hi = 0, cum.shape[0]
    while lo < hi:  # binary search: the number of entries <= room (cum is non-decreasing)
        mid = (lo + hi) >> 1
        if cum[mid] <= room:
            lo = mid + 1
        else:
            hi = mid
    return lo


@numba.njit(cache=True)
def pair_reduction(cum: np.ndarray, start: int, end: int, block_start: int, free_from: int) -> float:
    """Capacity a block [block_start, free_from) removes from the pair [start, end]:
    C[max(hi, lo)] - C[lo] with lo = max(a, block_start), hi = min(b + 1, free_from) (0 if disjoint).
    The one copy of this formula: ``dynamics.block_slack_reduction`` and :func:`step_batch` call it."""
    lo = max(start, block_start)
    return cum[max(min(end + 1, free_from), lo)] - cum[lo]


@numba.njit(cache=True)
def lindley_trajectory(initial: float, net: np.ndarray, out: np.ndarray) -> None:
    """``out[:n + 1]`` = Q(τ) = max(initial + W(τ), W(τ) - min_{s ≤ τ} W(s), 0) for the net input ``net``
    (n,), W its running sum from 0 (sequential, as ``np.cumsum``). The one copy of this formula:
    ``dynamics.backlog_trajectory`` and :func:`step_batch` call it."""
    walk = 0.0
    low = 0.0
    out[0] = max(max(initial + walk, walk - low), 0.0)
    for s in range(net.shape[0]):
        walk = net[s] if s == 0 else walk + net[s]  # np.cumsum's first entry is net[0] itself
        low = min(low, walk)
        out[s + 1] = max(max(initial + walk, walk - low), 0.0)


@numba.njit(cache=True)
def max_feasible_blocks(start: np.ndarray, end: np.ndarray, slack: np.ndarray, cum: np.ndarray,
                        times: np.ndarray) -> np.ndarray:
    """``dynamics.max_feasible_block`` for one server's pairs (start, end, slack) at ``times``."""
    out = np.empty(times.shape[0], np.int64)
    for i in range(times.shape[0]):
        reach = UNBOUNDED
        for p in range(start.shape[0]):
            reach = min(reach, pair_reach(cum, start[p], end[p], slack[p], times[i]))
        out[i] = UNBOUNDED if reach == UNBOUNDED else reach - 1 - times[i]
    return out


@numba.njit(cache=True)
def block_slack_reductions(start: np.ndarray, end: np.ndarray, cum: np.ndarray, block_start: int,
                           free_from: int) -> np.ndarray:
    """``dynamics.block_slack_reduction``: what the block [block_start, free_from) removes from each pair."""
    out = np.empty(start.shape[0])
    for p in range(start.shape[0]):
        out[p] = pair_reduction(cum, start[p], end[p], block_start, free_from)
    return out


# --- the vector env's kernels ------------------------------------------------------------------

@numba.njit(cache=True)
def step_batch(
    actions: np.ndarray, resetting: np.ndarray, mask: np.ndarray, limits: np.ndarray, num_profiles: int,
    arrival: np.ndarray, duration_cdf: np.ndarray, cum: np.ndarray, pair_start: np.ndarray,
    pair_end: np.ndarray, pair_slack: np.ndarray, releases: np.ndarray, unblocked_net: np.ndarray,
    backlog: np.ndarray, horizon: np.ndarray, busy_until: np.ndarray, task_start: np.ndarray,
    retraining_work: np.ndarray, block_server: np.ndarray, block_start: np.ndarray, block_duration: np.ndarray,
    accepted: np.ndarray, rejected: np.ndarray, invalid_actions: np.ndarray, preemptions: np.ndarray,
    decision: np.ndarray, n_arrivals: np.ndarray, time: np.ndarray, slots: np.ndarray,
    work: np.ndarray, factors: np.ndarray, paid: np.ndarray, expected: np.ndarray, duration: np.ndarray,
    preempted: np.ndarray, invalid: np.ndarray, terminated: np.ndarray,
) -> tuple[int, int, int]:
    """One decision of every sub-env not ``resetting``: UECEnv.step and UECEnv._accept, in place on the
    state arrays. Writes every entry of the outputs: ``work`` (tera-MAC the task got), ``factors`` (N, 3)
    = (w_j·a_j(t), A_j, B_j), ``paid`` (the realised profit is owed), ``expected``, ``duration``,
    ``preempted``, ``invalid``, ``terminated``. ``mask`` and ``limits`` are the current observation's.

    Returns (the first sub-env whose action is outside [0, 1 + K·L), -1 if none: then nothing was
    changed; the number of ``paid``; the number of ``terminated``)."""
    n_servers = pair_start.shape[1]
    n_slots = releases.shape[2]
    for i in range(actions.shape[0]):
        if actions[i] < 0 or actions[i] >= mask.shape[1]:
            return i, 0, 0
    n_paid = n_ended = 0
    for i in range(actions.shape[0]):
        work[i] = 0.0
        factors[i, 0] = factors[i, 1] = factors[i, 2] = 0.0
        paid[i] = False
        expected[i] = 0.0
        duration[i] = 0
        preempted[i] = False
        invalid[i] = False
        terminated[i] = False
        if resetting[i]:
            continue
        action = actions[i]
        if action != 0 and not mask[i, action]:
            invalid[i] = True
            invalid_actions[i] += 1
        if action == 0 or invalid[i]:
            rejected[i] += 1
        else:  # accept: UECEnv.step's accept branch and UECEnv._accept
            server, profile = (action - 1) // num_profiles, (action - 1) % num_profiles
            d, t = decision[i], time[i]
            u = arrival[i, d, 0]
            drawn = 1  # searchsorted(cdf, u, "right") + 1
            for s in range(duration_cdf.shape[2]):
                if duration_cdf[i, profile, s] <= u:
                    drawn += 1
            limit = limits[i, server]
            cut = drawn > limit  # only in "preempt" mode: reserved work reclaims the server first
            if cut:
                drawn = limit
                preemptions[i] += 1
            free_from = t + drawn
            row = cum[i, server]
            cum_t = row[t]
            work[i] = row[free_from] - cum_t
            factors[i, 0], factors[i, 1], factors[i, 2] = arrival[i, d, 1], arrival[i, d, 2], arrival[i, d, 3]
            paid[i] = not (drawn > arrival[i, d, 4 + server] or cut)  # budget d̄_jk, as dynamics.realised_profit
            n_paid += paid[i]
            expected[i] = arrival[i, d, 3 + n_servers + action]
            duration[i] = drawn
            preempted[i] = cut
            for p in range(pair_start.shape[2]):
                pair_slack[i, server, p] -= pair_reduction(row, pair_start[i, server, p], pair_end[i, server, p],
                                                           t, free_from)
            # reserved backlog, recomputed when reserved work (backlog or a release) falls in the block
            redo = False
            for s in range(t, min(free_from, horizon[i])):
                if releases[i, server, s] + backlog[i, server, s] > 0:
                    redo = True
                    break
            if redo:  # dynamics.backlog_trajectory from t on (entries past the horizon are never read)
                net = np.empty(n_slots - t)
                for s in range(t, n_slots):
                    net[s - t] = releases[i, server, s] if s < free_from else unblocked_net[i, server, s]
                lindley_trajectory(backlog[i, server, t], net, backlog[i, server, t:])
            busy_until[i, server] = free_from
            task_start[i, server] = t
            retraining_work[i] += row[min(free_from, horizon[i])] - cum_t
            n = accepted[i]
            block_server[i, n], block_start[i, n], block_duration[i, n] = server, t, drawn
            accepted[i] = n + 1
        decision[i] += 1
        terminated[i] = decision[i] >= n_arrivals[i]
        n_ended += terminated[i]
        time[i] = slots[i, decision[i]]  # slots[A] = T: the terminal time
    return -1, n_paid, n_ended


@numba.njit(cache=True)
def observe_batch(
    rows: np.ndarray, decision: np.ndarray, n_arrivals: np.ndarray, time: np.ndarray, devices: np.ndarray,
    busy_until: np.ndarray, task_start: np.ndarray, backlog: np.ndarray, future_releases: np.ndarray,
    inv_duration: np.ndarray, inv_reserved: np.ndarray, cum: np.ndarray, pair_start: np.ndarray,
    pair_end: np.ndarray, pair_slack: np.ndarray, max_duration: np.ndarray, servers_start: int,
    mask_start: int, mask_rule: bool, mask: np.ndarray, safe: np.ndarray, limits: np.ndarray,
    obs: np.ndarray, mask8: np.ndarray, safe8: np.ndarray, device: np.ndarray,
) -> None:
    """The batch's observations ``obs`` (N, n), masks (bool ``mask`` / ``safe`` and their int8 copies),
    current devices and block limits (N, K): UECEnv's observation row of the current arrival with the
    state-dependent server features its ``_accept`` keeps current (busy flag, elapsed time, reserved
    backlog, longest feasible block, masks), computed from the state. ``mask_rule``: reserved priority
    "mask" (the mask is the safe mask) rather than "preempt" (any idle server)."""
    n_servers, n_profiles = pair_start.shape[1], max_duration.shape[1]
    for i in range(obs.shape[0]):
        d, t = decision[i], time[i]
        obs[i, :] = rows[i, d, :]
        device[i] = devices[i, d]  # devices[A] = -1 after the end
        mask[i, 0] = safe[i, 0] = True  # reject is always feasible
        mask8[i, 0] = safe8[i, 0] = 1
        terminal = d >= n_arrivals[i]  # UECEnv's last table row, only "reject" feasible
        inv_d, inv_r = inv_duration[i], inv_reserved[i]
        for k in range(n_servers):
            reach = pair_reach(cum[i, k], pair_start[i, k, 0], pair_end[i, k, 0], pair_slack[i, k, 0], t)
            for p in range(1, pair_start.shape[2]):
                reach = min(reach, pair_reach(cum[i, k], pair_start[i, k, p], pair_end[i, k, p],
                                              pair_slack[i, k, p], t))
            # UNBOUNDED - 1 - t stays far above any duration: every use (the mask, the preemption test,
            # the clipped observation) treats it exactly as UNBOUNDED
            limit = reach - 1 - t
            limits[i, k] = limit
            busy = t < busy_until[i, k]
            col = servers_start + 5 * k
            if not terminal:
                obs[i, col + 1] = 1.0 if busy else 0.0
                obs[i, col + 2] = min((t - task_start[i, k]) * inv_d, 1.0) * (1.0 if busy else 0.0)
                obs[i, col + 3] = min((backlog[i, k, t] + future_releases[i, t, k]) * inv_r, 1.0)
                obs[i, col + 4] = min(limit * inv_d, 1.0) * (0.0 if busy else 1.0)
            for m in range(n_profiles):
                a = 1 + k * n_profiles + m
                s = not terminal and not busy and limit >= max_duration[i, m]
                f = s if mask_rule else (not terminal and not busy)
                safe[i, a], mask[i, a] = s, f
                safe8[i, a], mask8[i, a] = s, f
                obs[i, mask_start + a] = 1.0 if f else 0.0


@numba.njit(cache=True)
def start_episode(
    i: int, slots: np.ndarray, devices: np.ndarray, uniforms: np.ndarray, arrival_rows: np.ndarray,
    static_rows: np.ndarray, initial_slack: np.ndarray, free_backlog: np.ndarray, n_devices: int,
    n_arrivals: np.ndarray, slots_b: np.ndarray, devices_b: np.ndarray, arrival: np.ndarray, rows: np.ndarray,
    decision: np.ndarray, time: np.ndarray, busy_until: np.ndarray, task_start: np.ndarray,
    pair_slack: np.ndarray, backlog: np.ndarray, profit: np.ndarray, accepted: np.ndarray, rejected: np.ndarray,
    invalid_actions: np.ndarray, preemptions: np.ndarray, retraining_work: np.ndarray,
) -> None:
    """Row ``i`` of the batch starts the episode of arrivals (``slots``, ``devices``, duration
    ``uniforms``) on its instance's tables (``UECVectorEnv._instance_tables``): the arrivals' table rows
    gathered, the state as ``UECEnv.reset`` sets it (free backlog ``(T + 1, K)``, initial pair slack)."""
    n, horizon = slots.shape[0], free_backlog.shape[0] - 1
    n_arrivals[i] = n
    slots_b[i, :] = horizon
    devices_b[i, :] = -1
    for a in range(n):
        slots_b[i, a], devices_b[i, a] = slots[a], devices[a]
        entry = slots[a] * n_devices + devices[a]
        arrival[i, a, 0] = uniforms[a]
        arrival[i, a, 1 : 1 + arrival_rows.shape[1]] = arrival_rows[entry]
        rows[i, a] = static_rows[entry]
    rows[i, n] = static_rows[static_rows.shape[0] - 1]
    decision[i] = 0
    time[i] = slots[0]
    busy_until[i, :] = 0
    task_start[i, :] = 0
    pair_slack[i, :, :] = np.inf
    pair_slack[i, :, : initial_slack.shape[1]] = initial_slack
    backlog[i, :, :] = 0.0
    backlog[i, :, : horizon + 1] = free_backlog.T
    profit[i] = 0.0
    accepted[i] = rejected[i] = invalid_actions[i] = preemptions[i] = 0
    retraining_work[i] = 0.0
