"""Exact references for tiny UEC instances, by enumeration (tests and sanity checks only).

``expected_hindsight_optimum(instance)`` is E_I[OPT(I)] for the *arrival-clairvoyant* scheduler: it knows
the whole arrival sequence I in advance, learns each task's duration when the task starts (as the env
does), and obeys the env's rules: one retraining task per free server, and an assignment to (k, l) only
if the reserved tasks stay satisfiable with k blocked for the longest duration of l. Lemma 1's argument
applies to it (durations are independent of the decision to start a task, and every path keeps a
reserved schedule), so OPT(P1-LP) ≥ this value. A scheduler that also knew the durations *before*
choosing would not be bounded by the LP (it could start only the tasks that turn out short).
"""

from __future__ import annotations

import itertools
from functools import cache

import numpy as np

from envs.uec import dynamics
from envs.uec.types import Instance


def reserved_feasible(instance: Instance, server: int, blocked: frozenset[int]) -> bool:
    """Hall's interval test (written out plainly, independent of the env's incremental version): the
    reserved tasks of ``server`` can be met with the ``blocked`` slots removed."""
    res = instance.reserved
    on_k = res.server == server
    if not on_k.any():
        return True
    available = instance.capacity[server].copy()
    if blocked:
        available[np.fromiter(blocked, dtype=np.int64)] = 0.0
    cum = np.concatenate([[0.0], np.cumsum(available)])
    start, end, demand = res.start[on_k], res.end[on_k], res.demand[on_k]
    tol = 1e-9 * max(1.0, float(instance.capacity[server].sum()))
    for a in np.unique(start):  # every interval [a, b] from a release to a deadline (plain, unpruned)
        for b in np.unique(end[end >= a]):
            inside = (start >= a) & (end <= b)
            if demand[inside].sum() > cum[b + 1] - cum[a] + tol:
                return False
    return True


def arrival_sequences(instance: Instance, max_sequences: int = 200_000):
    """Every arrival sequence with positive probability: (probability, tuple of device or -1 per slot)."""
    p = instance.arrival_prob
    options = []
    for t in range(instance.horizon):
        slot = [(j, float(p[t, j])) for j in range(instance.num_devices) if p[t, j] > 0]
        none = 1.0 - float(p[t].sum())
        if none > 1e-15:
            slot.append((-1, none))
        options.append(slot)
    count = int(np.prod([len(o) for o in options], dtype=float))
    if count > max_sequences:
        raise ValueError(f"{count} arrival sequences exceed max_sequences={max_sequences} on {instance.describe()}")
    for combo in itertools.product(*options):
        yield float(np.prod([q for _, q in combo])), tuple(j for j, _ in combo)


def expected_hindsight_optimum(instance: Instance, max_sequences: int = 200_000) -> float:
    """E over arrival sequences of the best expected profit of the arrival-clairvoyant scheduler."""
    T, K, L = instance.horizon, instance.num_servers, instance.num_profiles
    pmf = instance.duration_pmf
    longest = instance.max_duration
    res = instance.reserved
    window_slots = [
        frozenset(s for i in np.flatnonzero(res.server == k) for s in range(int(res.start[i]), int(res.end[i]) + 1))
        for k in range(K)
    ]

    @cache
    def value(suffix: tuple[int, ...], t: int, busy: tuple[int, ...], blocked: tuple[frozenset[int], ...]) -> float:
        if t >= T:
            return 0.0
        j = suffix[0]
        best = value(suffix[1:], t + 1, busy, blocked)
        if j < 0:
            return best
        for k in range(K):
            if busy[k] > t:
                continue
            for l in range(L):
                trial = blocked[k] | (frozenset(range(t, t + int(longest[l]))) & window_slots[k])
                if not reserved_feasible(instance, k, trial):
                    continue
                total = 0.0
                for d in np.flatnonzero(pmf[l] > 0) + 1:
                    new_busy = (*busy[:k], t + int(d), *busy[k + 1:])
                    new_block = blocked[k] | (frozenset(range(t, t + int(d))) & window_slots[k])
                    new_blocked = (*blocked[:k], new_block, *blocked[k + 1:])
                    profit = dynamics.realised_profit(instance, j, k, t, int(d))
                    total += pmf[l, d - 1] * (profit + value(suffix[1:], t + 1, new_busy, new_blocked))
                best = max(best, total)
        return best

    empty = tuple(frozenset() for _ in range(K))
    expected = 0.0
    for probability, sequence in arrival_sequences(instance, max_sequences):
        expected += probability * value(sequence, 0, (0,) * K, empty)
    return expected
