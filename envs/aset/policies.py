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

The rules are implemented once, in :func:`envs.aset.dynamics._bind_arrivals` (per arrival, in Python
scalars, for speed). tests/aset/test_aset_fast_equals_reference.py keeps the readable one-arrival form
(``_reference_choose_worker``, the implementation before issue 17's speed-up) as the specification that
tests/aset/test_aset_policies.py checks rule by rule and the env must equal exactly.
"""

from __future__ import annotations

#: Floor on the load in random_load's weight C / L (queries/s), so that idle workers get a finite weight.
LOAD_EPS_QPS = 1.0

#: Relative tolerance under which two keys count as tied.
TIE_RTOL = 1e-9


