"""The seven static scheduling policies of ASET (paper Section III-C), restricted to feasible pairs.

Each policy binds ONE arriving stream of scheduler ``s`` to a worker w = (v, n) among the candidates
``cand`` that satisfy constraints (1)-(4). Per-worker keys, for the stream's scheduler:

* ``net_key[w] = d_n^s + 2 sigma_n^s``                    (closest / farthest, per cluster n of w)
* ``e2e_key[w] = 2 (d_n^s + 2 sigma_n^s) + D_v``          (cheaper / least impedance / random latency)
* ``load[w] = L_vn(t)``  (queries/s bound now), ``capacity[w] = C`` of the worker

| action | policy            | rule over the feasible pairs                                     |
|--------|-------------------|------------------------------------------------------------------|
| 0      | closest           | n* = argmin net_key; any feasible v on n*                         |
| 1      | load_balancing    | (v*, n*) = argmin L_vn(t)                                          |
| 2      | farthest          | n* = argmax net_key; any feasible v on n*                         |
| 3      | cheaper           | (v*, n*) = argmax e2e_key                                          |
| 4      | random_latency    | P(v, n) proportional to 1 / e2e_key                                |
| 5      | random_load       | P(v, n) proportional to C / max(L_vn(t), LOAD_EPS_QPS)             |
| 6      | least_impedance   | (v*, n*) = argmin e2e_key                                          |

Ties of an argmin/argmax (e.g. the variants of cluster n* for closest/farthest, which share the
cluster's key) are broken uniformly at random, which is the neutral reading of "any feasible v".
"""

from __future__ import annotations

import numpy as np

from envs.aset.types import POLICY_NAMES

#: Floor on the load in random_load's weight C / L (queries/s), so that idle workers get a finite weight.
LOAD_EPS_QPS = 1.0

#: Relative tolerance under which two keys count as tied.
TIE_RTOL = 1e-9


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


def choose_worker(
    policy: int,
    cand: np.ndarray,
    net_key: np.ndarray,
    e2e_key: np.ndarray,
    load: np.ndarray,
    capacity: np.ndarray,
    rng: np.random.Generator,
) -> int:
    """Worker chosen by static policy ``policy`` among feasible ``cand`` (indices); -1 if none.

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
